package ptfence.insn;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Decoded instructions and straight-line blocks of one piece of code content in one execution mode,
 * indexed by offset into the content. Keyed by content (not address), so every image and every trace that
 * maps the same bytes shares it. Filled lazily: each byte offset is decoded at most once.
 *
 * <p>Blocks: from any offset, the run of instructions up to and including the first one the flow must
 * look at (a branch, PTWRITE, or an instruction an event can bind to). A block that would run into bytes
 * that do not decode, or past the end of the content, is not cached ({@link #blockLast} returns -1).
 */
public final class CodeCache {
    /** Length marker: bytes do not form an instruction. */
    public static final byte INVALID = 0x7f;
    /** Length marker: the instruction may continue past the end of this content. */
    public static final byte TRUNCATED = 0x7e;

    private static final Map<String, CodeCache> SHARED = new ConcurrentHashMap<>();

    private final byte[] code;
    private final int mode;
    private final byte[] len;
    private final byte[] cls;
    private final byte[] op;
    private final int[] disp;
    private int[] blockLast;
    private int[] blockCount;

    private CodeCache(byte[] code, int mode) {
        this.code = code;
        this.mode = mode;
        this.len = new byte[code.length];
        this.cls = new byte[code.length];
        this.op = new byte[code.length];
        this.disp = new int[code.length];
    }

    /** The shared cache for this content in this mode. */
    public static CodeCache of(String contentId, byte[] code, int mode) {
        return SHARED.computeIfAbsent(contentId + '/' + mode, k -> new CodeCache(code, mode));
    }

    public byte[] code() {
        return code;
    }

    public int mode() {
        return mode;
    }

    /** Length of the instruction at {@code off}, or {@link #INVALID} / {@link #TRUNCATED}. */
    public int length(int off, X86Decoder dec) {
        byte l = len[off];
        if (l == 0) {
            l = fill(off, dec);
        }
        return l;
    }

    private synchronized byte fill(int off, X86Decoder dec) {
        if (len[off] != 0) {
            return len[off];
        }
        int avail = code.length - off;
        int n = dec.decode(code, off, avail, mode);
        if (n == 0) {
            len[off] = avail < 15 ? TRUNCATED : INVALID;
            return len[off];
        }
        cls[off] = dec.cls;
        op[off] = dec.op;
        disp[off] = dec.displacement;
        len[off] = (byte) n;
        return len[off];
    }

    /** Valid after {@link #length} returned a real length. */
    public byte cls(int off) {
        return cls[off];
    }

    public byte op(int off) {
        return op[off];
    }

    public int displacement(int off) {
        return disp[off];
    }

    /** True for instructions that end a block: branches, PTWRITE, and event anchors (MOV CR3, VMPTRLD). */
    public boolean endsBlock(int off) {
        return cls[off] != InsnClass.OTHER || op[off] != InsnOp.NONE;
    }

    /**
     * Offset of the last instruction of the block that starts at {@code off}; -1 if the block is not
     * cacheable. {@link #blockCount} then gives its instruction count.
     */
    public int blockLast(int off, X86Decoder dec) {
        int[] bl = blockLast;
        if (bl != null) {
            int v = bl[off];
            if (v != 0) {
                return v - 1;
            }
        }
        return fillBlock(off, dec);
    }

    public int blockCount(int off) {
        return blockCount[off];
    }

    private synchronized int fillBlock(int start, X86Decoder dec) {
        if (blockLast == null) {
            blockLast = new int[code.length];
            blockCount = new int[code.length];
        }
        int off = start;
        int n = 0;
        while (true) {
            if (off >= code.length) {
                return -1;
            }
            int l = length(off, dec);
            if (l == INVALID || l == TRUNCATED) {
                return -1;
            }
            n++;
            if (endsBlock(off)) {
                break;
            }
            off += l;
        }
        int last = off;
        // Every instruction on the way starts a suffix of the same block.
        int o = start;
        int k = n;
        while (k > 0) {
            blockLast[o] = last + 1;
            blockCount[o] = k;
            o += len[o];
            k--;
        }
        return last;
    }

    // ------------------------------------------------------------------ TNT paths

    /** Result slots of {@link #tntPath}; valid when it returns true. */
    public long pathEnd;
    public int pathInsns;
    public int pathLast;
    public int pathMin;
    public int pathMax;

    private long[] memoKey = new long[1 << 12];
    private long[] memoEnd = new long[1 << 12];
    private int[] memoInsns = new int[1 << 12];
    private int[] memoLast = new int[1 << 12];
    private int[] memoMin = new int[1 << 12];
    private int[] memoMax = new int[1 << 12];
    private int memoUsed;

    /**
     * The decision-point cache: where {@code size} TNT bits ({@code bits}, oldest highest) lead from offset
     * {@code off} when the path holds only straight-line code, conditional branches and direct jumps (no
     * calls or returns, whose return stack the caller must see, and no event anchors). Fills the path* fields:
     * the offset after the last branch (may lie outside the content), instruction count, offset of the last
     * instruction, and the lowest/highest offsets touched (the caller checks they are mapped by one piece).
     * Returns false if the path is not of that simple kind. Results are memoized per content.
     */
    public synchronized boolean tntPath(int off, long bits, int size, boolean noRetComp, X86Decoder dec) {
        this.noRetComp = noRetComp;
        long key = ((long) off << 17) | (noRetComp ? 1L << 16 : 0) | ((long) size << 8) | (bits & 0xff) | 1L << 63;
        int mask = memoKey.length - 1;
        int h = (int) ((key * 0x9E3779B97F4A7C15L) >>> 40) & mask;
        while (true) {
            long k = memoKey[h];
            if (k == key) {
                if (memoInsns[h] < 0) {
                    return false;
                }
                pathEnd = memoEnd[h];
                pathInsns = memoInsns[h];
                pathLast = memoLast[h];
                pathMin = memoMin[h];
                pathMax = memoMax[h];
                return true;
            }
            if (k == 0) {
                break;
            }
            h = (h + 1) & mask;
        }
        boolean ok = simulate(off, bits, size, dec);
        if (memoUsed * 2 >= memoKey.length) {
            growMemo();
            mask = memoKey.length - 1;
            h = (int) ((key * 0x9E3779B97F4A7C15L) >>> 40) & mask;
            while (memoKey[h] != 0) {
                h = (h + 1) & mask;
            }
        }
        memoKey[h] = key;
        memoUsed++;
        if (!ok) {
            memoInsns[h] = -1;
            return false;
        }
        memoEnd[h] = pathEnd;
        memoInsns[h] = pathInsns;
        memoLast[h] = pathLast;
        memoMin[h] = pathMin;
        memoMax[h] = pathMax;
        return true;
    }

    private final long[] callScratch = new long[8];
    private boolean noRetComp;

    private boolean simulate(int off, long bits, int size, X86Decoder dec) {
        int insns = 0;
        int min = off;
        int max = off;
        long at = off;
        int last = off;
        int left = size;
        long[] calls = callScratch;
        int depth = 0;
        while (left > 0) {
            if (at < 0 || at >= code.length) {
                return false;
            }
            int o = (int) at;
            int bl = blockLast(o, dec);
            if (bl < 0) {
                return false;
            }
            insns += blockCount(o);
            int ln = len[bl];
            min = Math.min(min, o);
            max = Math.max(max, bl + ln - 1);
            last = bl;
            switch (cls[bl]) {
                case InsnClass.COND_JUMP -> {
                    if (op[bl] != InsnOp.NONE) {
                        return false;
                    }
                    left--;
                    boolean taken = ((bits >>> left) & 1) != 0;
                    at = (long) bl + ln + (taken ? disp[bl] : 0);
                }
                case InsnClass.JUMP -> {
                    if (op[bl] != InsnOp.NONE) {
                        return false;
                    }
                    at = (long) bl + ln + disp[bl];
                }
                case InsnClass.CALL -> {
                    // A call is fine if the same path returns from it (compressed return, one taken bit).
                    if (disp[bl] != 0) {
                        if (depth == calls.length) {
                            return false;
                        }
                        calls[depth++] = (long) bl + ln;
                    }
                    at = (long) bl + ln + disp[bl];
                }
                case InsnClass.RETURN -> {
                    if (depth == 0 || noRetComp) {
                        return false;
                    }
                    left--;
                    if (((bits >>> left) & 1) == 0) {
                        return false;
                    }
                    at = calls[--depth];
                }
                default -> {
                    return false;
                }
            }
            if (insns > (1 << 20)) {
                return false; // a direct-jump loop without branches: not a path we can summarize
            }
        }
        if (depth != 0) {
            return false; // calls still open at the end would have to reach the caller's return stack
        }
        pathEnd = at;
        pathInsns = insns;
        pathLast = last;
        pathMin = min;
        pathMax = max;
        return true;
    }

    private void growMemo() {
        long[] ok = memoKey;
        long[] oe = memoEnd;
        int[] oi = memoInsns;
        int[] ol = memoLast;
        int[] omin = memoMin;
        int[] omax = memoMax;
        int n = ok.length * 2;
        memoKey = new long[n];
        memoEnd = new long[n];
        memoInsns = new int[n];
        memoLast = new int[n];
        memoMin = new int[n];
        memoMax = new int[n];
        int mask = n - 1;
        for (int i = 0; i < ok.length; i++) {
            if (ok[i] == 0) {
                continue;
            }
            int h = (int) ((ok[i] * 0x9E3779B97F4A7C15L) >>> 40) & mask;
            while (memoKey[h] != 0) {
                h = (h + 1) & mask;
            }
            memoKey[h] = ok[i];
            memoEnd[h] = oe[i];
            memoInsns[h] = oi[i];
            memoLast[h] = ol[i];
            memoMin[h] = omin[i];
            memoMax[h] = omax[i];
        }
    }
}

package ptfence.insn;

import java.lang.invoke.VarHandle;
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
    private volatile int[] blockLast;
    private volatile int[] blockCount;

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
        } else {
            VarHandle.acquireFence(); // pairs with the release in fill(): class/op/displacement are visible
        }
        return l;
    }

    /** Profile counters over all caches: instruction decode misses (capstone batches), blocks built. */
    public static final java.util.concurrent.atomic.LongAdder DECODE_MISSES = new java.util.concurrent.atomic.LongAdder();
    public static final java.util.concurrent.atomic.LongAdder BLOCK_MISSES = new java.util.concurrent.atomic.LongAdder();

    private synchronized byte fill(int off, X86Decoder dec) {
        if (len[off] != 0) {
            return len[off];
        }
        DECODE_MISSES.increment();
        int avail = code.length - off;
        int count = dec.batch(code, off, avail, mode);
        if (count > 0) {
            // Fill every instruction of the straight-line sweep; each is what decoding at its offset gives.
            for (int i = count - 1; i >= 0; i--) {
                int o = off + dec.batchOffset[i];
                if (len[o] != 0) {
                    continue;
                }
                int l = dec.batchLength[i];
                dec.classifyKnown(code, o, l, mode);
                cls[o] = dec.cls;
                op[o] = dec.op;
                disp[o] = dec.displacement;
                VarHandle.releaseFence();
                len[o] = (byte) l;
            }
            return len[off];
        }
        int n = dec.decode(code, off, avail, mode);
        if (n == 0) {
            len[off] = avail < 15 ? TRUNCATED : INVALID;
            return len[off];
        }
        cls[off] = dec.cls;
        op[off] = dec.op;
        disp[off] = dec.displacement;
        VarHandle.releaseFence(); // readers that see the length also see the rest
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
                VarHandle.acquireFence();
                return v == NO_BLOCK ? -1 : v - 1;
            }
        }
        return fillBlock(off, dec);
    }

    /**
     * Every instruction from {@code start} up to and including {@code end} (the one that cannot be decoded, or past the
     * content) starts a run that cannot be cached: marked, so that the next ask does not build it again.
     */
    private void markNoBlock(int start, int end, X86Decoder dec) {
        int[] bl = blockLast;
        for (int o = start; o <= end && o < code.length; o += len[o]) {
            bl[o] = NO_BLOCK;
            if (len[o] <= 0 || len[o] >= TRUNCATED) {
                break;
            }
        }
    }

    public int blockCount(int off) {
        return blockCount[off];
    }


    /** blockLast marker: the run from here is not cacheable (ends in bad bytes or runs off the end). */
    private static final int NO_BLOCK = Integer.MIN_VALUE;

    private synchronized int fillBlock(int start, X86Decoder dec) {
        BLOCK_MISSES.increment();
        if (blockLast == null) {
            blockCount = new int[code.length];
            blockLast = new int[code.length];
        }
        int[] blockLast = this.blockLast;
        int[] blockCount = this.blockCount;
        int off = start;
        int n = 0;
        while (true) {
            if (off >= code.length || blockLast[off] == NO_BLOCK) {
                markNoBlock(start, off, dec);
                return -1;
            }
            int l = length(off, dec);
            if (l == INVALID || l == TRUNCATED) {
                markNoBlock(start, off, dec);
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
            blockCount[o] = k;
            VarHandle.releaseFence();
            blockLast[o] = last + 1;
            o += len[o];
            k--;
        }
        return last;
    }
}

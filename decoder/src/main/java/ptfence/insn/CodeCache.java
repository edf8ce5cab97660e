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
    /**
     * Per offset, everything about the instruction there in one long: length | class << 8 | op << 16 | displacement
     * << 32; 0 until decoded. One read gives all fields, so threads that fill and read the cache concurrently need no
     * fences on the hot path (HotSpot reads and writes 64-bit array elements whole on 64-bit platforms).
     */
    private final long[] insn;
    /**
     * Per offset, two longs for the block starting there: (last instruction's offset + 1) | instruction count << 32 (0:
     * unknown), then the last instruction's {@link #insn} value, so that a walk learns the whole block from one cache
     * line.
     */
    private volatile long[] blocks;

    private static final java.util.concurrent.atomic.AtomicInteger SERIALS =
            new java.util.concurrent.atomic.AtomicInteger();
    /** Names this cache in small per-thread tables (identity, without a hash of the object). */
    public final int serial = SERIALS.incrementAndGet();

    private CodeCache(byte[] code, int mode) {
        this.code = code;
        this.mode = mode;
        this.insn = new long[code.length];
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
        long v = insn[off];
        if (v == 0) {
            v = fill(off, dec);
        }
        return (int) v & 0xff;
    }

    /** Profile counters over all caches: instruction decode misses (capstone batches), blocks built. */
    public static final java.util.concurrent.atomic.LongAdder DECODE_MISSES = new java.util.concurrent.atomic.LongAdder();
    public static final java.util.concurrent.atomic.LongAdder BLOCK_MISSES = new java.util.concurrent.atomic.LongAdder();

    private static long pack(int len, byte cls, byte op, int disp) {
        return (len & 0xff) | (cls & 0xffL) << 8 | (op & 0xffL) << 16 | (long) disp << 32;
    }

    private synchronized long fill(int off, X86Decoder dec) {
        if (insn[off] != 0) {
            return insn[off];
        }
        DECODE_MISSES.increment();
        int avail = code.length - off;
        int count = dec.batch(code, off, avail, mode);
        if (count > 0) {
            // Fill every instruction of the straight-line sweep; each is what decoding at its offset gives.
            for (int i = count - 1; i >= 0; i--) {
                int o = off + dec.batchOffset[i];
                if (insn[o] != 0) {
                    continue;
                }
                int l = dec.batchLength[i];
                dec.classifyKnown(code, o, l, mode);
                insn[o] = pack(l, dec.cls, dec.op, dec.displacement);
            }
            return insn[off];
        }
        int n = dec.decode(code, off, avail, mode);
        if (n == 0) {
            insn[off] = avail < 15 ? TRUNCATED : INVALID;
            return insn[off];
        }
        insn[off] = pack(n, dec.cls, dec.op, dec.displacement);
        return insn[off];
    }

    /** All about the instruction at {@code off} in one long ({@link #lengthOf} and the like); after {@link #length}. */
    public long packed(int off) {
        return insn[off];
    }

    /** Valid after {@link #length} returned a real length. */
    public byte cls(int off) {
        return (byte) (insn[off] >>> 8);
    }

    public byte op(int off) {
        return (byte) (insn[off] >>> 16);
    }

    public int displacement(int off) {
        return (int) (insn[off] >>> 32);
    }

    /** True for instructions that end a block: branches, PTWRITE, and event anchors (MOV CR3, VMPTRLD). */
    public boolean endsBlock(int off) {
        return cls(off) != InsnClass.OTHER || op(off) != InsnOp.NONE;
    }

    /**
     * Offset of the last instruction of the block that starts at {@code off}; -1 if the block is not
     * cacheable. {@link #blockCount} then gives its instruction count.
     */
    public int blockLast(int off, X86Decoder dec) {
        long[] b = blocks;
        if (b != null) {
            long v = b[2 * off];
            if (v != 0) {
                return v == NO_BLOCK ? -1 : (int) v - 1;
            }
        }
        return fillBlock(off, dec);
    }

    /**
     * Every instruction from {@code start} up to and including {@code end} (the one that cannot be decoded, or past the
     * content) starts a run that cannot be cached: marked, so that the next ask does not build it again.
     */
    private void markNoBlock(int start, int end) {
        long[] b = blocks;
        for (int o = start; o <= end && o < code.length; ) {
            b[2 * o] = NO_BLOCK;
            int l = (int) insn[o] & 0xff;
            if (l <= 0 || l >= TRUNCATED) {
                break;
            }
            o += l;
        }
    }

    /** Valid after {@link #blockLast} returned a block. */
    public int blockCount(int off) {
        return (int) (blocks[2 * off] >>> 32);
    }

    /**
     * The last instruction ({@code last}, what {@link #blockLast} returned) of the block at {@code off}, as one value
     * for {@link #lengthOf}, {@link #clsOf}, {@link #opOf} and {@link #displacementOf}.
     */
    public long blockLastInsn(int off, int last, X86Decoder dec) {
        long v = blocks[2 * off + 1];
        if (v == 0) {
            // Filled by another thread and not yet seen here (the two longs are not published together).
            length(last, dec);
            v = insn[last];
        }
        return v;
    }

    public static int lengthOf(long insn) {
        return (int) insn & 0xff;
    }

    public static byte clsOf(long insn) {
        return (byte) (insn >>> 8);
    }

    public static byte opOf(long insn) {
        return (byte) (insn >>> 16);
    }

    public static int displacementOf(long insn) {
        return (int) (insn >>> 32);
    }

    /** blocks marker: the run from here is not cacheable (ends in bad bytes or runs off the end). */
    private static final long NO_BLOCK = -1L;

    private synchronized int fillBlock(int start, X86Decoder dec) {
        BLOCK_MISSES.increment();
        if (blocks == null) {
            blocks = new long[2 * code.length];
        }
        long[] b = blocks;
        int off = start;
        int n = 0;
        while (true) {
            if (off >= code.length || b[2 * off] == NO_BLOCK) {
                markNoBlock(start, off);
                return -1;
            }
            int l = length(off, dec);
            if (l == INVALID || l == TRUNCATED) {
                markNoBlock(start, off);
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
        long lastInsn = insn[last];
        while (k > 0) {
            b[2 * o + 1] = lastInsn;
            b[2 * o] = (last + 1L) | (long) k << 32;
            o += (int) insn[o] & 0xff;
            k--;
        }
        return last;
    }
}

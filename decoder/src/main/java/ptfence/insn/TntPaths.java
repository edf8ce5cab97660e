package ptfence.insn;

import java.util.IdentityHashMap;
import java.util.Map;

/**
 * The decision-point memo: where the bits of one TNT packet lead from a given offset, for paths made only
 * of straight-line code, conditional branches, direct jumps, and calls that the same path returns from
 * (compressed returns). One lookup replaces a walk per bit. Keyed by offset into a {@link CodeCache}'s
 * content, so results hold wherever that content is mapped. Owned by one decoder thread (no locking on
 * the hot path); the underlying instruction and block caches are shared.
 */
public final class TntPaths {
    /** Result of the last successful {@link #lookup}. */
    public long end;
    public int insns;
    public int last;
    public int min;
    public int max;

    /** Profile counters: lookups, and those that had to walk the path (misses); not on any decision. */
    public long lookups;
    public long misses;

    private final Map<CodeCache, Table> tables = new IdentityHashMap<>();
    private CodeCache lastCache;
    private Table lastTable;
    private final long[] calls = new long[8];

    private static final class Table {
        long[] key = new long[1 << 10];
        long[] end = new long[1 << 10];
        int[] insns = new int[1 << 10];
        int[] last = new int[1 << 10];
        int[] min = new int[1 << 10];
        int[] max = new int[1 << 10];
        int used;
    }

    /**
     * Follows {@code size} (at most 8) TNT bits, oldest highest in {@code bits}, from {@code off} in
     * {@code cc}. Returns false if the path is not of the simple kind; otherwise fills the result fields:
     * the offset after the last branch (may lie outside the content), the instruction count, the offset of
     * the last instruction, and the lowest/highest offsets touched (the caller checks they are mapped).
     */
    public boolean lookup(CodeCache cc, int off, long bits, int size, boolean noRetComp, X86Decoder dec) {
        lookups++;
        Table t = cc == lastCache ? lastTable : table(cc);
        long key = ((long) off << 17) | (noRetComp ? 1L << 16 : 0) | ((long) size << 8) | (bits & 0xff) | 1L << 63;
        int mask = t.key.length - 1;
        int h = (int) ((key * 0x9E3779B97F4A7C15L) >>> 40) & mask;
        while (true) {
            long k = t.key[h];
            if (k == key) {
                if (t.insns[h] < 0) {
                    return false;
                }
                end = t.end[h];
                insns = t.insns[h];
                last = t.last[h];
                min = t.min[h];
                max = t.max[h];
                return true;
            }
            if (k == 0) {
                break;
            }
            h = (h + 1) & mask;
        }
        misses++;
        boolean ok = simulate(cc, off, bits, size, noRetComp, dec);
        if (t.used * 2 >= t.key.length) {
            grow(t);
            mask = t.key.length - 1;
            h = (int) ((key * 0x9E3779B97F4A7C15L) >>> 40) & mask;
            while (t.key[h] != 0) {
                h = (h + 1) & mask;
            }
        }
        t.key[h] = key;
        t.used++;
        if (!ok) {
            t.insns[h] = -1;
            return false;
        }
        t.end[h] = end;
        t.insns[h] = insns;
        t.last[h] = last;
        t.min[h] = min;
        t.max[h] = max;
        return true;
    }

    private Table table(CodeCache cc) {
        Table t = tables.computeIfAbsent(cc, k -> new Table());
        lastCache = cc;
        lastTable = t;
        return t;
    }

    private boolean simulate(CodeCache cc, int off, long bits, int size, boolean noRetComp, X86Decoder dec) {
        int n = 0;
        int lo = off;
        int hi = off;
        long at = off;
        int lastOff = off;
        int left = size;
        int depth = 0;
        int codeLength = cc.code().length;
        while (left > 0) {
            if (at < 0 || at >= codeLength) {
                return false;
            }
            int o = (int) at;
            int bl = cc.blockLast(o, dec);
            if (bl < 0) {
                return false;
            }
            n += cc.blockCount(o);
            int ln = cc.length(bl, dec);
            lo = Math.min(lo, o);
            hi = Math.max(hi, bl + ln - 1);
            lastOff = bl;
            if (cc.op(bl) != InsnOp.NONE) {
                return false;
            }
            int disp = cc.displacement(bl);
            switch (cc.cls(bl)) {
                case InsnClass.COND_JUMP -> {
                    left--;
                    boolean taken = ((bits >>> left) & 1) != 0;
                    at = (long) bl + ln + (taken ? disp : 0);
                }
                case InsnClass.JUMP -> at = (long) bl + ln + disp;
                case InsnClass.CALL -> {
                    if (disp != 0) {
                        if (depth == calls.length) {
                            return false;
                        }
                        calls[depth++] = (long) bl + ln;
                    }
                    at = (long) bl + ln + disp;
                }
                case InsnClass.RETURN -> {
                    // A compressed return: one taken bit, back to a call this same path made.
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
            if (n > (1 << 20)) {
                return false; // a loop of direct jumps: not a path we can summarize
            }
        }
        if (depth != 0) {
            return false; // calls still open would have to reach the caller's return stack
        }
        end = at;
        insns = n;
        last = lastOff;
        min = lo;
        max = hi;
        return true;
    }

    private static void grow(Table t) {
        long[] ok = t.key;
        long[] oe = t.end;
        int[] oi = t.insns;
        int[] ol = t.last;
        int[] omin = t.min;
        int[] omax = t.max;
        int n = ok.length * 2;
        t.key = new long[n];
        t.end = new long[n];
        t.insns = new int[n];
        t.last = new int[n];
        t.min = new int[n];
        t.max = new int[n];
        int mask = n - 1;
        for (int i = 0; i < ok.length; i++) {
            if (ok[i] == 0) {
                continue;
            }
            int h = (int) ((ok[i] * 0x9E3779B97F4A7C15L) >>> 40) & mask;
            while (t.key[h] != 0) {
                h = (h + 1) & mask;
            }
            t.key[h] = ok[i];
            t.end[h] = oe[i];
            t.insns[h] = oi[i];
            t.last[h] = ol[i];
            t.min[h] = omin[i];
            t.max[h] = omax[i];
        }
    }
}

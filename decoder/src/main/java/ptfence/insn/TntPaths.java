package ptfence.insn;

import java.util.IdentityHashMap;
import java.util.Map;

/**
 * The decision-point memo: where the bits of one TNT packet lead from a given offset, for paths made only
 * of straight-line code, conditional branches, direct jumps, direct calls and compressed returns. One lookup
 * replaces a walk per bit. A path ends when its bits are used up (the calls it leaves open are in
 * {@link #pushes}, for the decoder's return stack) or at a compressed return to a call made before it
 * ({@link #pops}: the decoder takes the return address from its return stack and looks up the rest of the
 * bits from there), so real code's deep call chains and returns stay on the fast path. Keyed by offset into a {@link CodeCache}'s
 * content, so results hold wherever that content is mapped. One per thread ({@link #ofThisThread}: no locking
 * on the hot path), kept for the life of the thread, so it survives PSB segments (a parallel decode's workers)
 * and runs in one process; each content's table is bounded ({@link #MAX_ENTRIES}: full, it starts over). The
 * underlying instruction and block caches are shared by all threads.
 */
public final class TntPaths {
    /** Paths kept per content and thread (48 bytes each: slot, bounds, two references; tables at most half full). */
    static final int MAX_ENTRIES = 1 << 18;

    private static final ThreadLocal<TntPaths> PER_THREAD = ThreadLocal.withInitial(() -> new TntPaths(MAX_ENTRIES));

    private final int maxEntries;

    private TntPaths(int maxEntries) {
        this.maxEntries = maxEntries;
    }

    /** A memo of its own keeping at most {@code maxEntries} paths per content (tests: a table that starts over). */
    public static TntPaths bounded(int maxEntries) {
        return new TntPaths(maxEntries);
    }

    /** This thread's memo. */
    public static TntPaths ofThisThread() {
        return PER_THREAD.get();
    }

    /** Result of the last successful {@link #lookup}. */
    public long end;
    public int insns;
    public int last;
    /** Bits the path used: all of them, or fewer when it ends at a return that pops the decoder's stack. */
    public int used;
    /** True if the path ends at a compressed return to a call made before it ({@link #end} is then unused). */
    public boolean pops;
    /** Lowest and highest offsets the path being simulated touched. */
    private int min;
    private int max;

    /**
     * True if every byte the last path found touches lies in [{@code lo}, {@code hi}] (offsets into its content): the
     * piece of code the decoder has mapped there holds it.
     */
    public boolean within(long lo, long hi, int contentLength) {
        if (lo <= 0 && hi >= contentLength - 1) {
            return true; // a path never leaves its content
        }
        long b = hitTable.bounds[hitSlot];
        return (int) b >= lo && (int) (b >>> 32) <= hi;
    }

    /** Return addresses (offsets into the content) of the calls the path left open, oldest first. */
    public final int[] pushes = new int[8];
    public int pushCount;
    /** Where {@link #simulate} builds a path's edges; the memo keeps a copy per path, never changed. */
    private final int[] edgeBuffer = new int[2 * MAX_EDGES];
    private int edgeCount;
    private static final int MAX_EDGES = 64;

    /**
     * The path of the last successful lookup with edges, as a coverage sink counts it: its number in its memo
     * table, dense from 0 ({@link #pathTable} names the table; the same pair each time the same path runs in this
     * process, never the same for another path), so a sink can count runs in an array; {@link #pathEdges} gives its
     * edges, read once per distinct path.
     */
    public int pathId() {
        return hitId;
    }

    /** See {@link #pathId}: the memo table (one per content and thread, a new one after it starts over). */
    public long pathTable() {
        return hitTable.id;
    }

    /**
     * The edges of the last path found with edges: (branch, next instruction) offset pairs, the last branch's own edge
     * not among them (its next instruction lies beyond the path). The memo's array, never changed: a sink may keep it.
     */
    public int[] pathEdges() {
        return hitTable.edges[hitSlot];
    }

    private static final java.util.concurrent.atomic.AtomicLong TABLE_IDS = new java.util.concurrent.atomic.AtomicLong();

    /** Profile counters: lookups, and those that had to walk the path (misses); not on any decision. */
    public long lookups;
    public long misses;

    private final Map<CodeCache, Table> tables = new IdentityHashMap<>();
    private CodeCache lastCache;
    private Table lastTable;
    private final long[] calls = new long[8];

    /**
     * Open addressing, one 32-byte slot per path in {@link #slots} (a hit reads one or two cache lines, not one per
     * field): key; end (int) | last << 32; the first two calls left open (offsets) | second << 32; insns | shape << 32,
     * shape = used bits | pops << 8 | pushCount << 9 | path number << 13 (paths with edges). Beside it, read only when
     * needed: all open calls of a path that leaves more than two, the lowest and highest offset a path touches (only a
     * piece that does not map its whole content needs them), and the edges.
     */
    private static final class Table {
        long id = TABLE_IDS.incrementAndGet();
        int pathIds;
        long[] slots = new long[4 << 10];
        int[][] pushes = new int[1 << 10][];
        long[] bounds = new long[1 << 10];
        int[][] edges = new int[1 << 10][];
        int used;

        int capacity() {
            return pushes.length;
        }
    }

    /** The table and slot of the last successful lookup, for {@link #within}. */
    private Table hitTable;
    private int hitSlot;
    private int hitId;

    /**
     * Follows {@code size} (at most 8) TNT bits, oldest highest in {@code bits}, from {@code off} in
     * {@code cc}. Returns false if the path is not of the simple kind; otherwise fills the result fields:
     * the offset after the last branch (may lie outside the content), the instruction count, the offset of
     * the last instruction, and the calls left open ({@link #within} tells whether the code it touched is mapped).
     */
    public boolean lookup(CodeCache cc, int off, long bits, int size, boolean noRetComp, X86Decoder dec) {
        return lookup(cc, off, bits, size, noRetComp, false, dec);
    }

    /** As {@link #lookup(CodeCache, int, long, int, boolean, X86Decoder)}, with the path's edges if {@code withEdges}. */
    public boolean lookup(CodeCache cc, int off, long bits, int size, boolean noRetComp, boolean withEdges,
            X86Decoder dec) {
        lookups++;
        Table t = cc == lastCache ? lastTable : table(cc);
        long key = ((long) off << 17) | (noRetComp ? 1L << 16 : 0) | ((long) size << 8) | (bits & 0xff) | 1L << 63
                | (withEdges ? 1L << 62 : 0);
        long[] slots = t.slots;
        int mask = t.capacity() - 1;
        int h = (int) ((key * 0x9E3779B97F4A7C15L) >>> 40) & mask;
        while (true) {
            int s = h << 2;
            long k = slots[s];
            if (k == key) {
                long w3 = slots[s + 3];
                insns = (int) w3;
                if (insns < 0) {
                    return false;
                }
                long w1 = slots[s + 1];
                end = (int) w1;
                last = (int) (w1 >>> 32);
                int sh = (int) (w3 >>> 32);
                used = sh & 0xff;
                pops = (sh & 0x100) != 0;
                pushCount = (sh >>> 9) & 0xf;
                if (pushCount > 2) {
                    System.arraycopy(t.pushes[h], 0, pushes, 0, pushCount);
                } else if (pushCount > 0) {
                    long w2 = slots[s + 2];
                    pushes[0] = (int) w2;
                    pushes[1] = (int) (w2 >>> 32);
                }
                hitTable = t;
                hitSlot = h;
                hitId = sh >>> 13;
                return true;
            }
            if (k == 0) {
                break;
            }
            h = (h + 1) & mask;
        }
        misses++;
        boolean ok = simulate(cc, off, bits, size, noRetComp, withEdges, dec) && end == (int) end;
        if (t.used * 2 >= t.capacity()) {
            if (t.capacity() >= 2 * maxEntries) {
                java.util.Arrays.fill(t.slots, 0); // full: start over rather than grow without bound
                java.util.Arrays.fill(t.pushes, null);
                java.util.Arrays.fill(t.edges, null);
                t.used = 0;
                t.id = TABLE_IDS.incrementAndGet(); // its path numbers start over too
                t.pathIds = 0;
            } else {
                grow(t);
            }
            slots = t.slots;
            mask = t.capacity() - 1;
            h = (int) ((key * 0x9E3779B97F4A7C15L) >>> 40) & mask;
            while (slots[h << 2] != 0) {
                h = (h + 1) & mask;
            }
        }
        int s = h << 2;
        slots[s] = key;
        t.used++;
        if (!ok) {
            slots[s + 3] = -1;
            return false;
        }
        slots[s + 1] = (end & 0xffffffffL) | (long) last << 32;
        slots[s + 2] = (pushes[0] & 0xffffffffL) | (long) pushes[1] << 32;
        hitId = withEdges ? t.pathIds++ : 0;
        slots[s + 3] = (insns & 0xffffffffL) | (long) (used | (pops ? 0x100 : 0) | pushCount << 9 | hitId << 13) << 32;
        t.pushes[h] = pushCount > 2 ? java.util.Arrays.copyOf(pushes, pushCount) : null;
        t.bounds[h] = (min & 0xffffffffL) | (long) max << 32;
        hitTable = t;
        hitSlot = h;
        if (withEdges) {
            t.edges[h] = java.util.Arrays.copyOf(edgeBuffer, 2 * edgeCount);
        }
        return true;
    }

    private Table table(CodeCache cc) {
        Table t = tables.computeIfAbsent(cc, k -> new Table());
        lastCache = cc;
        lastTable = t;
        return t;
    }

    private boolean simulate(CodeCache cc, int off, long bits, int size, boolean noRetComp, boolean withEdges,
            X86Decoder dec) {
        edgeCount = 0;
        int[] edges = edgeBuffer;
        int prevLast = -1;
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
            if (withEdges && prevLast >= 0) {
                if (edgeCount == MAX_EDGES) {
                    return false;
                }
                edges[2 * edgeCount] = prevLast;
                edges[2 * edgeCount + 1] = o;
                edgeCount++;
            }
            prevLast = bl;
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
                    // A compressed return: one taken bit, back to a call this path made, or (ending the path) to
                    // one made before it, whose address the decoder's return stack holds.
                    if (noRetComp) {
                        return false;
                    }
                    left--;
                    if (((bits >>> left) & 1) == 0) {
                        return false;
                    }
                    if (depth == 0) {
                        end = 0;
                        insns = n;
                        last = lastOff;
                        min = lo;
                        max = hi;
                        used = size - left;
                        pops = true;
                        pushCount = 0;
                        return true;
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
        end = at;
        insns = n;
        last = lastOff;
        min = lo;
        max = hi;
        used = size;
        pops = false;
        pushCount = depth;
        for (int i = 0; i < depth; i++) {
            if (calls[i] > Integer.MAX_VALUE) {
                return false;
            }
            pushes[i] = (int) calls[i];
        }
        return true;
    }

    private static void grow(Table t) {
        long[] os = t.slots;
        int[][] opu = t.pushes;
        long[] obo = t.bounds;
        int[][] oed = t.edges;
        int n = opu.length * 2;
        t.slots = new long[4 * n];
        t.pushes = new int[n][];
        t.bounds = new long[n];
        t.edges = new int[n][];
        int mask = n - 1;
        for (int i = 0; i < opu.length; i++) {
            long k = os[i << 2];
            if (k == 0) {
                continue;
            }
            int h = (int) ((k * 0x9E3779B97F4A7C15L) >>> 40) & mask;
            while (t.slots[h << 2] != 0) {
                h = (h + 1) & mask;
            }
            System.arraycopy(os, i << 2, t.slots, h << 2, 4);
            t.pushes[h] = opu[i];
            t.bounds[h] = obo[i];
            t.edges[h] = oed[i];
        }
    }
}

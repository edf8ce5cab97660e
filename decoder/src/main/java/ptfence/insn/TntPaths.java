package ptfence.insn;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The decision-point memo: where the bits of one TNT packet lead from a given offset, for paths made only
 * of straight-line code, conditional branches, direct jumps, direct calls and compressed returns. One lookup
 * replaces a walk per bit. A path ends when its bits are used up (the calls it leaves open are in
 * {@link #pushes}, for the decoder's return stack) or at a compressed return to a call made before it
 * ({@link #pops}: the decoder takes the return address from its return stack and looks up the rest of the
 * bits from there), so real code's deep call chains and returns stay on the fast path. Keyed by offset into a {@link CodeCache}'s
 * content, so results hold wherever that content is mapped.
 *
 * <p>The paths are kept once per process and content, shared by every thread ({@link #ofThisThread} gives a thread
 * its handle: the result fields and the scratch space of a lookup), so a parallel decode's workers do not each build
 * the same paths from cold; each content's table is bounded ({@link #MAX_ENTRIES}: full, it starts over). Reads take
 * no lock: a path's slot is written whole and then its key, with release semantics; a reader reads the key with
 * acquire semantics and only then the rest, so a key it sees comes with its path (Java memory model: the release write
 * happens-before the acquire read that sees it). New paths are added under the table's lock (misses are rare once
 * warm); a table that grows or starts over is a new set of arrays, published through a volatile field, and the old
 * arrays are never written again, so a reader still probing them reads a consistent, if older, set. The underlying
 * instruction and block caches are shared the same way ({@link CodeCache}).
 */
public final class TntPaths {
    /** Paths kept per content (48 bytes each: slot, bounds, two references; tables at most half full). */
    static final int MAX_ENTRIES = 1 << 18;

    /** The process's memo, shared by all threads (what decoders use unless told otherwise: FlowConfig.pathMemo). */
    public static final Memo PROCESS = new Memo(MAX_ENTRIES);

    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);

    private final Memo tables;

    private TntPaths(Memo tables) {
        this.tables = tables;
    }

    /**
     * A handle on a memo of its own (not shared with {@link #ofThisThread}) keeping at most {@code maxEntries} paths per
     * content (tests: a table that starts over).
     */
    public static TntPaths bounded(int maxEntries) {
        return new Memo(maxEntries).handle();
    }

    /** This thread's handle on the process's memo. */
    public static TntPaths ofThisThread() {
        return PROCESS.handle();
    }

    /** Result of the last successful {@link #lookup}. */
    public long end;
    public int insns;
    public int last;
    /** Bits the path used: all of them, or fewer when it ends at a return that pops the decoder's stack. */
    public int used;
    /** True if the path ends at a compressed return to a call made before it ({@link #end} is then unused). */
    public boolean pops;
    /**
     * A path of {@link #lookupPlain} (conditional branches and direct jumps only): the last branch before its last
     * instruction that moved the flow elsewhere than the next instruction (-1: none), the instructions up to and with
     * it, whether a direct jump moved the flow before the path's first conditional branch, and whether that last one
     * did.
     */
    public int taken;
    public int takenInsns;
    public boolean takenAhead;
    public boolean lastTakenAhead;
    /** A path of {@link #lookupTail} ends at an indirect jump (else at a direct jump out of its content). */
    public boolean tail;
    /**
     * A plain path's last instruction and its last branch taken ({@link #taken}; 0 if none), as {@link
     * CodeCache#packed} gives them (kept with the path: the code cache's arrays are large, and cold by then).
     */
    public long lastInsn;
    public long takenInsn;
    /**
     * A plain TNT path that carries calls and returns ({@link #lookupCarrying}: direct calls, compressed returns): every
     * branch in it that moved the flow elsewhere than the next instruction, the path's last left out, in order, as
     * {@link #moveCount} triples of {@link #moves}: offset | instructions up to and with it << 32; the instruction as
     * {@link CodeCache#packed}; the target's offset | 1 << 32 where it ran ahead of the packet's first conditional
     * branch or return (its sample time is the one from before the packet). 0 moves: the path has no call or return
     * ({@link #taken} and the fields beside it say all), except for {@link #lookupMoving}'s paths, which keep their
     * moves whatever they hold. The memo's array, never changed.
     */
    public long[] moves;
    public int moveCount;
    private static final long[] NO_MOVES = new long[0];
    private static final int MAX_MOVES = 32;
    private final long[] moveBuffer = new long[3 * MAX_MOVES];
    private boolean carries;
    /** More moves than {@link #MAX_MOVES} (or one out of an int's reach): a carrying path is not kept as one. */
    private boolean tooMany;
    /** The lookup being made may carry calls and returns ({@link #lookupCarrying}; its paths are kept apart). */
    private boolean carrying;
    /** The lookup being made keeps every path's moves ({@link #lookupMoving}; its paths are kept apart). */
    private boolean moving;
    /** The lookup being made is {@link #lookupPlain}'s (its paths are kept apart: slot word 2 holds the above). */
    private boolean plain;
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
        long b = hitStore.bounds[hitSlot];
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

    /** See {@link #pathId}: the memo table (one per content, a new one after it starts over). */
    public long pathTable() {
        return hitStore.id;
    }

    /**
     * The edges of the last path found with edges: (branch, next instruction) offset pairs, the last branch's own edge
     * not among them (its next instruction lies beyond the path). The memo's array, never changed: a sink may keep it.
     */
    public int[] pathEdges() {
        return hitStore.edges[hitSlot];
    }

    private static final AtomicLong TABLE_IDS = new AtomicLong();

    /** Profile counters of this handle: lookups, and those that had to walk the path (misses); not on any decision. */
    public long lookups;
    public long misses;

    /** The tables of the contents looked up last, by {@link CodeCache#serial} (code calling between files). */
    private static final int RECENT_TABLES = 32;
    private final CodeCache[] recentCaches = new CodeCache[RECENT_TABLES];
    private final Table[] recentTables = new Table[RECENT_TABLES];
    private final long[] calls = new long[8];

    /**
     * A memo: one table per content, made on first use, shared by the threads that take a {@link #handle} on it. The
     * process has one ({@link #PROCESS}); tests make their own to start from cold.
     */
    public static final class Memo {
        final int maxEntries;
        final ConcurrentHashMap<CodeCache, Table> byContent = new ConcurrentHashMap<>();
        private final ThreadLocal<TntPaths> handles = ThreadLocal.withInitial(() -> new TntPaths(this));

        /** An empty memo keeping at most {@code maxEntries} paths per content (then that content's table starts over). */
        public Memo(int maxEntries) {
            this.maxEntries = maxEntries;
        }

        /** This thread's handle: the result fields and scratch space of its lookups. */
        public TntPaths handle() {
            return handles.get();
        }
    }

    /** One content's paths: the current {@link Store}; paths are added under this object's lock. */
    private static final class Table {
        volatile Store store = new Store(1 << 10, TABLE_IDS.incrementAndGet());
    }

    /**
     * Open addressing, one 32-byte slot per path in {@link #slots} (a hit reads one or two cache lines, not one per
     * field): key; end (int) | last << 32; the first two calls left open (offsets) | second << 32; insns | shape << 32,
     * shape = used bits | pops << 8 | pushCount << 9 | path number << 13 (paths with edges). Beside it, read only when
     * needed: all open calls of a path that leaves more than two, the lowest and highest offset a path touches (only a
     * piece that does not map its whole content needs them), and the edges. A slot is written once, its key last
     * (release); once another store replaces this one, nothing here is written again.
     */
    private static final class Store {
        /** Names the path numbering: a table that starts over gets a new id; one that grows keeps it. */
        final long id;
        final long[] slots;
        final int[][] pushes;
        final long[] bounds;
        final int[][] edges;
        /** Per slot, a plain path's {@link #lastInsn} and {@link #takenInsn}; made with the first plain path. */
        long[] more;
        /** Per slot, a plain path's {@link #moves} where it carries calls or returns (null: none); made with the first. */
        long[][] moves;
        /** Under the table's lock. */
        int used;
        int pathIds;

        Store(int capacity, long id) {
            this.id = id;
            slots = new long[4 * capacity];
            pushes = new int[capacity][];
            bounds = new long[capacity];
            edges = new int[capacity][];
        }

        int capacity() {
            return pushes.length;
        }
    }

    /** The store and slot of the last successful lookup, for {@link #within} and the path's edges. */
    private Store hitStore;
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

    /**
     * As {@link #lookup(CodeCache, int, long, int, boolean, X86Decoder)}, for a sink that looks at calls and returns
     * only (perf's call views): true only for a path of straight-line code, conditional branches and direct jumps, with
     * {@link #taken} and the fields beside it filled; a path with a call or a return in it is no plain path (false).
     */
    public boolean lookupPlain(CodeCache cc, int off, long bits, int size, X86Decoder dec) {
        return lookupPlainPath(cc, off, bits, size, true, false, dec);
    }

    /**
     * As {@link #lookupPlain}, also for a path with direct calls and compressed returns (none if {@code noRetComp}):
     * those it carries as {@link #moves}, with the calls it leaves open in {@link #pushes} or the return that ends it
     * ({@link #pops}), as {@link #lookup} gives them.
     */
    public boolean lookupCarrying(CodeCache cc, int off, long bits, int size, boolean noRetComp, X86Decoder dec) {
        return lookupPlainPath(cc, off, bits, size, noRetComp, true, dec);
    }

    /**
     * As {@link #lookupCarrying}, with {@link #moves} for every path, one without calls or returns too (a sink that
     * shows every branch taken, perf's branch view; a path with more than {@link #MAX_MOVES} is not one).
     */
    public boolean lookupMoving(CodeCache cc, int off, long bits, int size, boolean noRetComp, X86Decoder dec) {
        moving = true;
        try {
            return lookupPlainPath(cc, off, bits, size, noRetComp, true, dec);
        } finally {
            moving = false;
        }
    }

    /**
     * As {@link #lookupPlain}, for the code that runs up to a TIP (no TNT bit): straight-line code and direct jumps,
     * ending at an indirect jump ({@link #tail}: its target is the TIP's) or at a direct jump out of the content (its
     * target is {@link #end}; the flow goes on from there).
     */
    public boolean lookupTail(CodeCache cc, int off, X86Decoder dec) {
        return lookupPlainPath(cc, off, 0, 0, true, false, dec);
    }

    /** As {@link #lookupTail}, with {@link #moves} for every path ({@link #lookupMoving}'s sink). */
    public boolean lookupTailMoving(CodeCache cc, int off, X86Decoder dec) {
        moving = true;
        try {
            return lookupTail(cc, off, dec);
        } finally {
            moving = false;
        }
    }

    private boolean lookupPlainPath(CodeCache cc, int off, long bits, int size, boolean noRetComp, boolean carry,
            X86Decoder dec) {
        plain = true;
        carrying = carry;
        try {
            return lookup(cc, off, bits, size, noRetComp, false, dec);
        } finally {
            plain = false;
            carrying = false;
        }
    }

    /** As {@link #lookup(CodeCache, int, long, int, boolean, X86Decoder)}, with the path's edges if {@code withEdges}. */
    public boolean lookup(CodeCache cc, int off, long bits, int size, boolean noRetComp, boolean withEdges,
            X86Decoder dec) {
        lookups++;
        int r = cc.serial & (RECENT_TABLES - 1);
        Table t = recentCaches[r] == cc ? recentTables[r] : table(cc);
        long key = ((long) off << 17) | (noRetComp ? 1L << 16 : 0) | ((long) size << 8) | (bits & 0xff) | 1L << 63
                | (withEdges ? 1L << 62 : 0) | (plain ? 1L << 61 : 0) | (carrying ? 1L << 60 : 0)
                | (moving ? 1L << 59 : 0);
        Store st = t.store;
        int h = find(st, key);
        if (h >= 0) {
            return hit(st, h);
        }
        misses++;
        boolean ok = simulate(cc, off, bits, size, noRetComp, withEdges, dec) && end == (int) end;
        boolean keepMoves = plain && (carries || moving);
        ok &= !(keepMoves && tooMany);
        int[] ownPushes = ok && (pushCount > 2 || plain && pushCount > 0) ? Arrays.copyOf(pushes, pushCount) : null;
        long[] ownMoves = !ok || !keepMoves ? null
                : moveCount == 0 ? NO_MOVES : Arrays.copyOf(moveBuffer, 3 * moveCount);
        int[] ownEdges = ok && withEdges ? Arrays.copyOf(edgeBuffer, 2 * edgeCount) : null;
        synchronized (t) {
            st = t.store;
            h = find(st, key);
            if (h >= 0) {
                return hit(st, h); // another thread added it meanwhile: the same path, with its number
            }
            if (st.used * 2 >= st.capacity()) {
                // full: start over rather than grow without bound (with a new id: the path numbers start over too)
                st = st.capacity() >= 2 * tables.maxEntries ? new Store(st.capacity(), TABLE_IDS.incrementAndGet())
                        : grown(st);
                t.store = st;
            }
            long[] slots = st.slots;
            int mask = st.capacity() - 1;
            h = hash(key, mask);
            while (slots[h << 2] != 0) {
                h = (h + 1) & mask;
            }
            int s = h << 2;
            st.used++;
            if (!ok) {
                slots[s + 3] = -1;
                SLOT.setRelease(slots, s, key);
                return false;
            }
            slots[s + 1] = (end & 0xffffffffL) | (long) last << 32;
            slots[s + 2] = plain ? plainWord() : (pushes[0] & 0xffffffffL) | (long) pushes[1] << 32;
            hitId = withEdges ? st.pathIds++ : 0;
            slots[s + 3] = (insns & 0xffffffffL) | (long) (used | (pops ? 0x100 : 0) | pushCount << 9 | hitId << 13) << 32;
            st.pushes[h] = ownPushes;
            st.bounds[h] = (min & 0xffffffffL) | (long) max << 32;
            st.edges[h] = ownEdges;
            if (plain) {
                if (st.more == null) {
                    st.more = new long[2 * st.capacity()];
                }
                st.more[2 * h] = lastInsn;
                st.more[2 * h + 1] = takenInsn;
                if (ownMoves != null) {
                    if (st.moves == null) {
                        st.moves = new long[st.capacity()][];
                    }
                    st.moves[h] = ownMoves;
                }
            }
            SLOT.setRelease(slots, s, key);
        }
        if (plain && !keepMoves) {
            moves = NO_MOVES;
            moveCount = 0;
        } else if (plain) {
            moves = ownMoves;
        }
        hitStore = st;
        hitSlot = h;
        return true;
    }

    private static int hash(long key, int mask) {
        return (int) ((key * 0x9E3779B97F4A7C15L) >>> 40) & mask;
    }

    /** The slot holding {@code key} in {@code st}, or -1. */
    private static int find(Store st, long key) {
        long[] slots = st.slots;
        int mask = st.capacity() - 1;
        int h = hash(key, mask);
        while (true) {
            long k = (long) SLOT.getAcquire(slots, h << 2);
            if (k == key) {
                return h;
            }
            if (k == 0) {
                return -1;
            }
            h = (h + 1) & mask;
        }
    }

    /** Fills the result fields from the path in slot {@code h}; false for a key that is no simple path. */
    private boolean hit(Store st, int h) {
        long[] slots = st.slots;
        int s = h << 2;
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
        if (plain) {
            long w2 = slots[s + 2];
            taken = (int) w2;
            int hi = (int) (w2 >>> 32);
            takenInsns = hi & 0x1fffffff;
            tail = (hi & 1 << 29) != 0;
            takenAhead = (hi & 1 << 30) != 0;
            lastTakenAhead = hi < 0;
            long[] more = st.more;
            lastInsn = more[2 * h];
            takenInsn = more[2 * h + 1];
            long[][] mv = st.moves;
            long[] m = mv == null ? null : mv[h];
            moves = m == null ? NO_MOVES : m;
            moveCount = moves.length / 3;
            if (pushCount > 0) {
                System.arraycopy(st.pushes[h], 0, pushes, 0, pushCount);
            }
        } else if (pushCount > 2) {
            System.arraycopy(st.pushes[h], 0, pushes, 0, pushCount);
        } else if (pushCount > 0) {
            long w2 = slots[s + 2];
            pushes[0] = (int) w2;
            pushes[1] = (int) (w2 >>> 32);
        }
        hitStore = st;
        hitSlot = h;
        hitId = sh >>> 13;
        return true;
    }

    /** A plain path's {@link #taken} and the fields beside it as slot word 2 ({@link #hit} reads them back). */
    private long plainWord() {
        long hi = (takenInsns | (tail ? 1 << 29 : 0) | (takenAhead ? 1 << 30 : 0) | (lastTakenAhead ? 1 << 31 : 0))
                & 0xffffffffL;
        return (taken & 0xffffffffL) | hi << 32;
    }

    private Table table(CodeCache cc) {
        Table t = tables.byContent.computeIfAbsent(cc, k -> new Table());
        int r = cc.serial & (RECENT_TABLES - 1);
        recentCaches[r] = cc;
        recentTables[r] = t;
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
        taken = -1;
        takenInsn = 0;
        takenInsns = 0;
        takenAhead = false;
        lastTakenAhead = false;
        boolean jccSeen = false;
        carries = false;
        tooMany = false;
        moveCount = 0;
        tail = false;
        boolean toTip = size == 0; // lookupTail: no bits, up to the instruction the TIP is for
        while (left > 0 || toTip) {
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
            lastInsn = cc.packed(bl);
            if (cc.op(bl) != InsnOp.NONE) {
                return false;
            }
            int disp = cc.displacement(bl);
            switch (cc.cls(bl)) {
                case InsnClass.COND_JUMP -> {
                    if (toTip) {
                        return false;
                    }
                    left--;
                    boolean tk = ((bits >>> left) & 1) != 0;
                    at = (long) bl + ln + (tk ? disp : 0);
                    jccSeen = true;
                    // (taken to the next instruction: no branch to the flow's eye; the path's last waits for the
                    // instruction after it, as the decoder's sink holds it: not counted here)
                    if (tk && disp != 0 && left > 0) {
                        taken = bl;
                        takenInsn = cc.packed(bl);
                        takenInsns = n;
                        lastTakenAhead = false;
                        if (plain) {
                            move(bl, n, takenInsn, at, false);
                        }
                    }
                }
                case InsnClass.JUMP -> {
                    at = (long) bl + ln + disp;
                    if (toTip && (at < 0 || at >= codeLength)) {
                        // out of this content: the flow goes on from there
                        return ended(at, n, bl, lo, hi, 0, false, 0);
                    }
                    taken = bl;
                    takenInsn = cc.packed(bl);
                    takenInsns = n;
                    lastTakenAhead = !jccSeen;
                    takenAhead |= !jccSeen;
                    if (plain) {
                        move(bl, n, takenInsn, at, !jccSeen);
                    }
                }
                case InsnClass.CALL -> {
                    if (plain && (toTip || !carrying)) {
                        return false; // (code up to a TIP carries none: the decoder takes pushes from no tail path)
                    }
                    if (plain) {
                        move(bl, n, cc.packed(bl), (long) bl + ln + disp, !jccSeen);
                        carries = true;
                    }
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
                    if (noRetComp || plain && (toTip || !carrying)) {
                        return false;
                    }
                    left--;
                    if (((bits >>> left) & 1) == 0) {
                        return false;
                    }
                    carries |= plain;
                    jccSeen = true; // (a return takes the packet: what follows has its time)
                    if (depth == 0) {
                        return ended(0, n, lastOff, lo, hi, size - left, true, 0);
                    }
                    at = calls[--depth];
                    if (plain && left > 0) { // (the path's last: its sink holds it as the walk would)
                        move(bl, n, cc.packed(bl), at, false);
                    }
                }
                case InsnClass.JUMP_INDIRECT -> {
                    if (!toTip) {
                        return false;
                    }
                    tail = true;
                    return ended(0, n, bl, lo, hi, 0, false, 0);
                }
                default -> {
                    return false;
                }
            }
            if (n > (1 << 20)) {
                return false; // a loop of direct jumps: not a path we can summarize
            }
        }
        ended(at, n, lastOff, lo, hi, size, false, depth);
        for (int i = 0; i < depth; i++) {
            if (calls[i] > Integer.MAX_VALUE) {
                return false;
            }
            pushes[i] = (int) calls[i];
        }
        return true;
    }

    /** A branch of a plain path that moved the flow to {@code target} (see {@link #moves}). */
    private void move(int off, int upTo, long packed, long target, boolean ahead) {
        if (moveCount == MAX_MOVES || target != (int) target) {
            tooMany = true;
            return;
        }
        int i = 3 * moveCount++;
        moveBuffer[i] = (off & 0xffffffffL) | (long) upTo << 32;
        moveBuffer[i + 1] = packed;
        moveBuffer[i + 2] = (target & 0xffffffffL) | (ahead ? 1L << 32 : 0);
    }

    /** A path's result: its last instruction at {@code lastOff}, the flow next at {@code next} (unused if it pops). */
    private boolean ended(long next, int n, int lastOff, int lo, int hi, int usedBits, boolean popped, int pushed) {
        end = next;
        insns = n;
        last = lastOff;
        min = lo;
        max = hi;
        used = usedBits;
        pops = popped;
        pushCount = pushed;
        return true;
    }

    /** A copy of {@code old} with twice the slots (same id: the paths keep their numbers). */
    private static Store grown(Store old) {
        int n = old.capacity() * 2;
        Store t = new Store(n, old.id);
        t.used = old.used;
        t.pathIds = old.pathIds;
        int mask = n - 1;
        for (int i = 0; i < old.capacity(); i++) {
            long k = old.slots[i << 2];
            if (k == 0) {
                continue;
            }
            int h = hash(k, mask);
            while (t.slots[h << 2] != 0) {
                h = (h + 1) & mask;
            }
            System.arraycopy(old.slots, i << 2, t.slots, h << 2, 4);
            t.pushes[h] = old.pushes[i];
            t.bounds[h] = old.bounds[i];
            t.edges[h] = old.edges[i];
            if (old.more != null) {
                if (t.more == null) {
                    t.more = new long[2 * n];
                }
                t.more[2 * h] = old.more[2 * i];
                t.more[2 * h + 1] = old.more[2 * i + 1];
            }
            if (old.moves != null) {
                if (t.moves == null) {
                    t.moves = new long[n][];
                }
                t.moves[h] = old.moves[i];
            }
        }
        return t;
    }
}

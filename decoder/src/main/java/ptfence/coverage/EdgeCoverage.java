package ptfence.coverage;

import java.io.PrintWriter;
import java.util.Arrays;
import ptfence.flow.Event;
import ptfence.flow.FlowSink;
import ptfence.insn.CodeCache;
import ptfence.insn.InsnClass;
import ptfence.insn.TntPaths;
import ptfence.output.PtxedPrinter;

/**
 * Edge coverage of a flow, what fuzzers take from a trace instead of the instruction list ({@code ptdecode flow
 * --edges}, {@code --coverage FILE}). An edge joins a branch instruction (any class but {@code other} and
 * {@code ptwrite}) to the next instruction the flow lists, unless tracing was enabled, disabled or overflowed, an
 * interrupt (asynchronous branch) or TSX event, an error or the end of the trace came between them. Counts are exact per (from, to);
 * the AFL-style bitmap has 65,536 one-byte counters saturating at 255, the edge (from, to) at index
 * {@code h(to) ^ (h(from) >>> 1)} with {@code h(x) = (x * 0x9E3779B97F4A7C15) >>> 48} (64-bit, unsigned shift).
 */
public final class EdgeCoverage implements FlowSink {
    /** Bitmap size in bytes (AFL's MAP_SIZE). */
    public static final int MAP_SIZE = 1 << 16;

    private final PtxedPrinter errors;
    private final boolean counting;
    private final byte[] bitmap;

    // Open addressing over (from, to) pairs; count 0 marks a free slot.
    private long[] from = new long[1 << 12];
    private long[] to = new long[1 << 12];
    private long[] count = new long[1 << 12];
    private int used;

    private boolean pending;
    private long pendingFrom;

    // TNT paths seen, with how often each ran, counted in an array by the memo's path number (a run is one increment in
    // a dense array, not a hash probe); one such array per memo table and base. Expanded into edges when read.
    private PathRuns runs;
    private final java.util.ArrayList<PathRuns> allRuns = new java.util.ArrayList<>();

    /** Runs of the paths of one memo table mapped at one base. */
    private static final class PathRuns {
        final long table;
        final long base;
        long[] hits = new long[256];
        int[][] pairs = new int[256][];
        int top; // numbers below it may have hits

        PathRuns(long table, long base) {
            this.table = table;
            this.base = base;
        }
    }

    /**
     * @param errorOut where errors go (as ptxed prints them)
     * @param counting keep exact counts per edge (--edges)
     * @param bitmap fill an AFL-style bitmap (--coverage), or false
     */
    public EdgeCoverage(PrintWriter errorOut, boolean counting, boolean bitmap) {
        this.errors = new PtxedPrinter(errorOut, false, false);
        this.counting = counting;
        this.bitmap = bitmap ? new byte[MAP_SIZE] : null;
    }

    /** The bitmap index of an edge. */
    public static int index(long from, long to) {
        return (hash(to) ^ (hash(from) >>> 1)) & (MAP_SIZE - 1);
    }

    private static int hash(long x) {
        return (int) ((x * 0x9E3779B97F4A7C15L) >>> 48);
    }

    @Override
    public void insn(long ip, int size, int cls, int mode, boolean speculative) {
        if (pending) {
            edge(pendingFrom, ip);
        }
        pending = InsnClass.isBranch(cls);
        pendingFrom = ip;
    }

    @Override
    public boolean edgesOnly() {
        return true;
    }

    @Override
    public void path(long base, TntPaths memo, long first, long last) {
        if (pending) {
            edge(pendingFrom, first);
        }
        countPath(base, memo);
        pending = true; // a path ends at a branch
        pendingFrom = last;
    }

    private void countPath(long base, TntPaths memo) {
        PathRuns r = runs;
        if (r == null || r.table != memo.pathTable() || r.base != base) {
            r = runsOf(memo.pathTable(), base);
        }
        int id = memo.pathId();
        if (id >= r.hits.length) {
            int n = Math.max(r.hits.length * 2, id + 1);
            r.hits = Arrays.copyOf(r.hits, n);
            r.pairs = Arrays.copyOf(r.pairs, n);
        }
        if (r.hits[id]++ == 0) {
            r.pairs[id] = memo.pathEdges();
            r.top = Math.max(r.top, id + 1);
        }
    }

    private PathRuns runsOf(long table, long base) {
        for (PathRuns r : allRuns) {
            if (r.table == table && r.base == base) {
                return runs = r;
            }
        }
        PathRuns r = new PathRuns(table, base);
        allRuns.add(r);
        return runs = r;
    }

    /** Adds the edges of the paths counted so far to the edge counts and the bitmap. */
    private void flushPaths() {
        for (PathRuns r : allRuns) {
            for (int id = 0; id < r.top; id++) {
                long n = r.hits[id];
                if (n == 0) {
                    continue;
                }
                int[] p = r.pairs[id];
                for (int k = 0; k + 1 < p.length; k += 2) {
                    edge(r.base + p[k], r.base + p[k + 1], n);
                }
                r.hits[id] = 0;
            }
            r.top = 0;
        }
    }

    private void edge(long f, long t) {
        edge(f, t, 1);
    }

    /** Counts the edge (f, t) n times; the bitmap's counter saturates at 255. */
    private void edge(long f, long t, long n) {
        if (bitmap != null) {
            int i = index(f, t);
            bitmap[i] = (byte) Math.min(255, (bitmap[i] & 0xff) + n);
        }
        if (counting) {
            add(f, t, n);
        }
    }

    private void grow() {
        long[] of = from;
        long[] ot = to;
        long[] oc = count;
        from = new long[of.length * 2];
        to = new long[of.length * 2];
        count = new long[of.length * 2];
        int mask = from.length - 1;
        for (int i = 0; i < of.length; i++) {
            if (oc[i] == 0) {
                continue;
            }
            int h = (int) (((of[i] * 31 + ot[i]) * 0x9E3779B97F4A7C15L) >>> 40) & mask;
            while (count[h] != 0) {
                h = (h + 1) & mask;
            }
            from[h] = of[i];
            to[h] = ot[i];
            count[h] = oc[i];
        }
    }

    @Override
    public void block(long ip, int n, CodeCache code, int off, int mode, boolean speculative) {
        throw new IllegalStateException("edge coverage runs on the instruction-flow decoder");
    }

    @Override
    public void event(Event ev) {
        switch (ev.type) {
            case Event.ENABLED, Event.DISABLED, Event.ASYNC_DISABLED, Event.OVERFLOW, Event.ASYNC_BRANCH,
                    Event.TSX -> pending = false;
            default -> { }
        }
    }

    @Override
    public void error(String kind, int code, long offset, long ip) {
        pending = false;
        errors.error(kind, code, offset, ip);
    }

    @Override
    public void endOfTrace() {
        pending = false;
    }

    @Override
    public void disabledAfterResync() {
        pending = false;
    }

    /** Every edge with its count, ordered by from, then to: {from, to, count} rows. */
    public long[][] edges() {
        flushPaths();
        long[][] rows = new long[used][];
        int k = 0;
        for (int i = 0; i < from.length; i++) {
            if (count[i] != 0) {
                rows[k++] = new long[] {from[i], to[i], count[i]};
            }
        }
        Arrays.sort(rows, (a, b) -> a[0] != b[0] ? Long.compareUnsigned(a[0], b[0]) : Long.compareUnsigned(a[1], b[1]));
        return rows;
    }

    /** The AFL-style bitmap (null unless asked for). */
    public byte[] bitmap() {
        flushPaths();
        return bitmap;
    }

    /** {@code --edges}: one line per edge, "FROM TO COUNT" (16 hex digits each address) or a jsonl object. */
    public void print(PrintWriter out, boolean jsonl) {
        StringBuilder sb = new StringBuilder(64);
        for (long[] e : edges()) {
            sb.setLength(0);
            if (jsonl) {
                sb.append("{\"type\":\"edge\",\"from\":\"0x").append(Long.toHexString(e[0])).append("\",\"to\":\"0x")
                        .append(Long.toHexString(e[1])).append("\",\"count\":").append(e[2]).append("}\n");
            } else {
                sb.append(String.format("%016x %016x %d%n", e[0], e[1], e[2]));
            }
            out.append(sb);
        }
    }

    // ---------------------------------------------------------------- PSB segments (ParallelFlow)

    /**
     * A PSB segment's coverage, for a decode on several threads: its own edges, and what the seam needs. The edge
     * that joins the pending branch of the segment before to this segment's first listed instruction is counted when
     * the segments are appended in trace order ({@link #append}), unless an event or error that clears it came first
     * (this coverage's own rules decide: it starts with a branch pending, and whether that branch is still pending at
     * the first instruction is the answer). The segment's first PSB's status events were the segment before's: its
     * decode does not pass them here.
     */
    public static final class Segment implements FlowSink {
        private final EdgeCoverage cov;
        private boolean listed;
        private long first;
        private boolean open;

        public Segment(PrintWriter errorOut, boolean counting, boolean bitmap) {
            cov = new EdgeCoverage(errorOut, counting, bitmap);
            cov.pending = true; // the segment before's last branch, if it was pending (its IP comes with the merge)
        }

        public EdgeCoverage coverage() {
            return cov;
        }

        private void list(long ip) {
            if (!listed) {
                listed = true;
                first = ip;
                open = cov.pending;
                cov.pending = false;
            }
        }

        @Override
        public void insn(long ip, int size, int cls, int mode, boolean speculative) {
            list(ip);
            cov.insn(ip, size, cls, mode, speculative);
        }

        @Override
        public void path(long base, TntPaths memo, long first, long last) {
            list(first);
            cov.path(base, memo, first, last);
        }

        @Override
        public void block(long ip, int n, CodeCache code, int off, int mode, boolean speculative) {
            cov.block(ip, n, code, off, mode, speculative);
        }

        @Override
        public void event(Event ev) {
            cov.event(ev);
        }

        @Override
        public void error(String kind, int code, long offset, long ip) {
            cov.error(kind, code, offset, ip);
        }

        @Override
        public void endOfTrace() {
            cov.endOfTrace();
        }

        @Override
        public void disabledAfterResync() {
            cov.disabledAfterResync();
        }

        @Override
        public void beginBlock() {
            cov.beginBlock();
        }

        @Override
        public boolean countsOnly() {
            return cov.countsOnly();
        }

        @Override
        public boolean edgesOnly() {
            return cov.edgesOnly();
        }
    }

    /**
     * Adds the coverage of the PSB segment that follows what this holds in the trace (segments appended in trace
     * order): its edges and counts (bitmap counters saturating), and the seam's edge from this flow's pending branch to
     * the segment's first instruction, as the flow decoded in one piece counts it. The segment's pending branch is then
     * this flow's.
     */
    public void append(Segment s) {
        EdgeCoverage c = s.cov;
        if (s.listed) {
            if (pending && s.open) {
                edge(pendingFrom, s.first);
            }
            pending = c.pending;
            pendingFrom = c.pendingFrom;
        } else if (!c.pending) {
            pending = false; // cleared before anything was listed
        }
        if (counting) {
            for (long[] e : c.edges()) {
                add(e[0], e[1], e[2]);
            }
        }
        byte[] other = c.bitmap(); // with the segment's counted paths in it
        if (bitmap != null && other != null) {
            for (int i = 0; i < MAP_SIZE; i++) {
                int sum = (bitmap[i] & 0xff) + (other[i] & 0xff);
                bitmap[i] = (byte) Math.min(255, sum);
            }
        }
    }

    /** Counts {@code n} more of the edge (from, to) in the exact table (not the bitmap). */
    private void add(long f, long t, long n) {
        int mask = from.length - 1;
        int h = (int) (((f * 31 + t) * 0x9E3779B97F4A7C15L) >>> 40) & mask;
        while (count[h] != 0) {
            if (from[h] == f && to[h] == t) {
                count[h] += n;
                return;
            }
            h = (h + 1) & mask;
        }
        from[h] = f;
        to[h] = t;
        count[h] = n;
        if (++used * 2 > from.length) {
            grow();
        }
    }
}

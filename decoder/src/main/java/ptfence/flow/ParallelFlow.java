package ptfence.flow;

import java.io.PrintWriter;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import ptfence.flow.PacketInput.Pkt;
import ptfence.image.CodeSpace;
import ptfence.insn.TntPaths;

/**
 * Decodes a trace in PSB segments on several threads and stitches the results in order. Each segment
 * starts at a PSB (whose PSB+ gives the full decoder state) and runs to the next segment's PSB; there it
 * walks on without trace to the IP that PSB+ reports, which is what the sequential decoder does when it
 * passes a PSB.
 *
 * <p>Memory is bounded whatever the trace's density (a MiB of TNT prints GBs of text): the segment whose turn it
 * is streams to the output a chunk at a time; the few segments decoded ahead of it (at most {@code window}) each
 * hold at most {@code segmentCap} chars, and their workers wait when they reach it. When the output fails (the
 * reader went away: {@link PrintWriter#checkError()}) every worker stops at its next chunk and {@link #run} returns.
 *
 * <p>With {@link #carrySeams}, each segment's decoder starts with the clock (TSC, MTC/CTC, CBR, TMA and the CYC
 * calibration) and the execution modes the sequential decode has at that PSB ({@link SeamState}), from a pass over the
 * packets alone that keeps a few segments ahead of the output. That pass cannot see what the flow does (an error makes
 * the decoder look for the next PSB and start afresh there), so before a segment's text is written its starting state
 * is checked against the state the segment before it reached that PSB with; if they differ, it is decoded again, on
 * the output's thread, from the right state. Times and events are therefore exactly the sequential decode's.
 */
public final class ParallelFlow {
    /** Bytes of trace before a PSB whose packets guess the execution modes there when the clock is not carried. */
    static final long MODE_REACH = 64 * 1024;

    /** Segments per thread a count or coverage decodes ahead of the one whose turn it is. */
    static final int COUNT_WINDOW = 8;

    /** Chars a worker fills before handing them over (and the granularity of streaming). */
    static final int CHUNK = 16 * 1024;

    private final CodeSpace image;
    private final FlowConfig cfg;
    private final Function<ByteBuffer, PacketInput> packets;
    private final boolean blockMode;
    private final int threads;
    private final long chunkBytes;
    /** Chars a segment may hold before its worker waits for its turn. */
    private final long segmentCap;
    /** Segments decoded at once: the one whose turn it is and those ahead of it. */
    private final int window;

    public long instructions;
    public long blocks;
    public long errors;

    /** Chars held in segment buffers now, and the most ever held (tests and the bench read them). */
    private final AtomicLong buffered = new AtomicLong();
    final AtomicLong peakBuffered = new AtomicLong();
    /** Segments whose decode ran to its end (a closed output stops the rest). */
    final AtomicInteger segmentsFinished = new AtomicInteger();
    private volatile boolean stopped;
    private boolean carrySeams;
    /** Segments decoded again because the packet pass guessed their starting state wrong. */
    int redone;
    /** Segments decoded (those a failed decode ran over are not counted). */
    private int segments;
    /**
     * Tests: settle each segment's start only once its decode has run as far as it can (finished, or held at its cap),
     * the schedule an idle many-core machine gives, so which wrong guesses are decoded again does not depend on load.
     */
    boolean settleLate;
    /** Decision-point memo lookups and misses of the segments' decodes (profiling). */
    public long memoLookups;
    public long memoMisses;
    /** Given each segment's sink once its output is written, in trace order (coverage merges its edges). */
    private java.util.function.Consumer<FlowSink> segmentDone;

    /** Calls {@code done} with each segment's sink, in trace order, after its output (each segment has its own sink). */
    public ParallelFlow onSegmentDone(java.util.function.Consumer<FlowSink> done) {
        segmentDone = done;
        return this;
    }

    /** Segments decoded again because the state guessed at their PSB was wrong. */
    public int redone() {
        return redone;
    }

    /** Segments whose decode went to the output. */
    public int segments() {
        return segments;
    }

    /**
     * Start each segment with the sequential decode's clock and execution modes ({@link SeamState}): needed when times
     * or events are printed; a count does not depend on them.
     */
    public ParallelFlow carrySeams(boolean on) {
        carrySeams = on;
        return this;
    }

    public ParallelFlow(CodeSpace image, FlowConfig cfg, Function<ByteBuffer, PacketInput> packets, boolean blockMode,
            int threads, long chunkBytes) {
        this(image, cfg, packets, blockMode, threads, chunkBytes, 1024 * 1024);
    }

    ParallelFlow(CodeSpace image, FlowConfig cfg, Function<ByteBuffer, PacketInput> packets, boolean blockMode,
            int threads, long chunkBytes, long segmentCap) {
        this.image = image;
        this.cfg = cfg;
        this.packets = packets;
        this.blockMode = blockMode;
        this.threads = threads;
        this.chunkBytes = chunkBytes;
        this.segmentCap = Math.max(CHUNK, segmentCap);
        this.window = threads * 2;
    }

    /** The most chars ever held at once: {@code window} segments of at most a cap and a chunk each. */
    long bufferBound() {
        return window * (segmentCap + CHUNK);
    }

    /**
     * Segment start offsets: the first PSB, then the first PSB at or after every {@code chunkBytes} whose PSB+ ends
     * within reach. Where tracing is off at the PSB, the flow's state there (the IP it will resume at, which tells
     * "resumed" from "enabled"; the last instruction, which errors report) comes from the code before the PSB: a segment
     * starts from a guess ({@link SeamState.Pass}) and is decoded again if what it read of it was wrong.
     */
    List<Long> boundaries(ByteBuffer trace) {
        PacketInput in = packets.apply(trace.duplicate());
        List<Long> starts = new ArrayList<>();
        long at = in.findPsb(0);
        while (at >= 0) {
            starts.add(at);
            at = in.findPsb(at + Math.max(16, chunkBytes));
            while (at >= 0 && seam(trace, at).headerEnd() < 0) {
                at = in.findPsb(at + 16);
            }
        }
        return starts;
    }

    /**
     * What a segment's decoder needs of each later segment's PSB: where it is, the IP its PSB+ gives (its FUP; -1 if
     * tracing is off there) and where that PSB+ ends (after its PSBEND; -1 if it does not end within reach).
     */
    record Seam(long at, long ip, long headerEnd) {}

    Seam seam(ByteBuffer trace, long psb) {
        int end = (int) Math.min(trace.limit(), psb + 4096);
        PacketInput in = packets.apply(trace.duplicate().position((int) psb).limit(end).slice());
        Pkt p = new Pkt();
        if (in.next(p) < 0 || p.type != Pkt.PSB) {
            return new Seam(psb, -1, -1);
        }
        long ip = -1;
        while (in.next(p) == 0) {
            switch (p.type) {
                case Pkt.FUP -> ip = switch (p.ipc) {
                    case 3 -> (p.ip << 16) >> 16;
                    case 0 -> -1;
                    default -> p.ip;
                };
                case Pkt.PSBEND -> {
                    return new Seam(psb, ip, psb + in.position());
                }
                case Pkt.OVF -> {
                    return new Seam(psb, -1, -1);
                }
                default -> { }
            }
        }
        return new Seam(psb, ip, -1);
    }

    /**
     * Decodes everything, writing the stitched output through sinks made by {@code sinks}. Returns early, with no
     * error, when {@code out} reports an error (its reader went away).
     */
    public void run(ByteBuffer trace, PrintWriter out, Function<PrintWriter, FlowSink> sinks) throws Exception {
        List<Long> starts = boundaries(trace);
        int n = starts.size();
        AtomicInteger names = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "ptdecode-segment-" + names.incrementAndGet());
            t.setDaemon(true); // a worker still decoding when the output closed must not keep the JVM up
            return t;
        });
        ArrayDeque<Segment> ahead = new ArrayDeque<>();
        SeamState.Pass guesses = carrySeams ? new SeamState.Pass(packets.apply(trace.duplicate()), cfg) : null;
        SeamState expected = new SeamState(cfg);
        // a count or coverage does not show "resumed" (the carried IP then matters only to errors)
        FlowSink probe = sinks.apply(new PrintWriter(Writer.nullWriter()));
        boolean resumedShown = !probe.countsOnly() && !probe.edgesOnly();
        // A count or coverage holds no text: more segments may run ahead, so that a slow segment whose turn it is (the
        // first ones run while the JIT compiles) does not leave the other threads idle.
        int runAhead = resumedShown ? window : COUNT_WINDOW * threads;
        Seam[] seams = new Seam[n];
        for (int i = 0; i < n; i++) {
            seams[i] = seam(trace, starts.get(i));
        }
        try {
            int next = 0;
            int turn = 0;
            while (turn < n) {
                // Segments are started in order on a FIFO pool, so the one whose turn it is always has a worker:
                // the workers waiting at their caps cannot starve it.
                while (next < n && next < turn + runAhead) {
                    int i = next++;
                    SeamState guess;
                    if (guesses != null) {
                        guess = guesses.at(starts.get(i));
                    } else {
                        // a count: the modes only (instructions are decoded in them), from the trace just before
                        guess = SeamState.near(packets.apply(trace.duplicate()), cfg, starts.get(i), MODE_REACH);
                    }
                    Segment s = new Segment(i, seams, guess, null);
                    s.reads = new CarriedReads(guess, resumedShown);
                    ahead.add(s);
                    pool.execute(() -> s.decode(trace, sinks));
                }
                Segment s = ahead.poll();
                if (settleLate) {
                    s.awaitRunAhead();
                }
                if (s.index > 0 && !s.startedRight(expected)) {
                    s.cancel();
                    redone++;
                    SeamState exact = expected.copy(cfg);
                    exact.clockCarried = carrySeams;
                    s = new Segment(s.index, seams, exact, out);
                    s.reads = CarriedReads.settled(exact);
                    s.decode(trace, sinks);
                }
                if (!s.drainTo(out)) {
                    return;
                }
                expected = s.endFrom(expected);
                if (segmentDone != null) {
                    segmentDone.accept(s.sink);
                }
                instructions += s.instructions;
                blocks += s.blocks;
                errors += s.errors;
                memoLookups += s.memoLookups;
                memoMisses += s.memoMisses;
                segments++;
                int reached = s.reached;
                SegmentOutput.dropBefore(ahead, reached, x -> x.index, x -> x.output);
                next = Math.max(next, reached);
                turn = reached;
            }
        } finally {
            stopped = true;
            for (Segment s : ahead) {
                s.cancel();
            }
            pool.shutdownNow();
        }
    }

    /** Thrown out of a worker's sink when the decode stops (output closed): unwinds the decoder, no trace. */
    private static final class Stopped extends RuntimeException {
        Stopped() {
            super("stopped", null, false, false);
        }
    }

    /** One PSB segment: its decode's text, handed over a chunk at a time, and its counts. */
    private final class Segment extends Writer {
        final int index;
        final Seam[] seams;
        /** The segment whose PSB this decode ended at (seams.length: the end of the trace). */
        int reached;
        /** The state at its PSB (null: not carried), and the state its decode reached the next PSB with. */
        final SeamState start;
        SeamState end;
        /** Non-null: decoded on the output's thread, written straight there. */
        private final PrintWriter direct;
        private boolean directFailed;
        private char[] buf = new char[CHUNK];
        private int len;
        private final SegmentOutput<char[]> output = new SegmentOutput<>(segmentCap);

        long instructions;
        long blocks;
        long errors;
        long memoLookups;
        long memoMisses;
        FlowSink sink;

        /** What the decode reads of the flow state carried to its PSB (settled when its turn comes). */
        CarriedReads reads;

        /**
         * Coordinator: whether the decode from its guessed state gives what one from {@code real} (the state the segment
         * before reached its PSB with) gives: the same clock and modes (when carried), and what it read of the flow's
         * state reads the same (later reads take {@code real}).
         */
        boolean startedRight(SeamState real) {
            if (carrySeams ? !start.sameState(real) : !start.sameModes(real)) {
                return false;
            }
            return reads.settle(real);
        }

        /** The state this decode reached its last PSB with, the parts it kept from its start taken from {@code real}. */
        SeamState endFrom(SeamState real) {
            return end.filledFrom(real);
        }

        Segment(int index, Seam[] seams, SeamState start, PrintWriter direct) {
            this.index = index;
            this.seams = seams;
            this.start = start;
            this.direct = direct;
        }

        void decode(ByteBuffer trace, Function<PrintWriter, FlowSink> sinks) {
            Throwable failed = null;
            try {
                if (stopped) {
                    return;
                }
                // The decode runs on through the next segment's PSB+ and ends there (FlowDecoder#seams): the sequential
                // decode reports that PSB's status events before it walks on to the PSB's IP, so this segment prints
                // them, and the next one mutes them. The slice runs to the end of the trace for look-ahead (BDM70 looks
                // past PSBEND for a TIP.PGE) and for a decode that fails there and must go on.
                long from = seams[index].at();
                ByteBuffer slice = trace.duplicate().position((int) from).slice();
                PrintWriter pw = new PrintWriter(this);
                sink = sinks.apply(pw);
                SeamSink seamSink = index == 0 ? null : new SeamSink(sink, from);
                FlowDecoder d = new FlowDecoder(image, cfg, packets.apply(slice), index == 0 ? sink : seamSink,
                        blockMode);
                if (seamSink != null) {
                    seamSink.decoder = d;
                }
                d.segment(from, -1);
                d.seams(seams, index + 1);
                d.startAt(start);
                d.carriedReads(reads);
                long lookups0 = d.tntPaths().lookups;
                long misses0 = d.tntPaths().misses;
                d.run();
                memoLookups = d.tntPaths().lookups - lookups0;
                memoMisses = d.tntPaths().misses - misses0;
                reached = d.seamReached();
                end = d.endSeam();
                pw.flush();
                handOver();
                instructions = d.instructions;
                blocks = d.blocks;
                errors = d.errors;
                segmentsFinished.incrementAndGet();
            } catch (Stopped e) {
                // the output closed: nothing more to do
            } catch (Throwable e) {
                failed = e;
            } finally {
                output.finish(failed);
            }
        }

        /** Set while the segment's first PSB's status events go by (the segment before printed them). */
        private boolean muted;

        @Override
        public void write(char[] c, int off, int n) {
            if (muted) {
                return;
            }
            while (n > 0) {
                int k = Math.min(n, CHUNK - len);
                System.arraycopy(c, off, buf, len, k);
                len += k;
                off += k;
                n -= k;
                if (len == CHUNK) {
                    handOver();
                }
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }

        /** Worker: queues the chunk in hand, first waiting while this segment holds its cap. */
        private void handOver() {
            if (stopped) {
                throw new Stopped();
            }
            if (len == 0) {
                return;
            }
            if (direct != null) {
                direct.write(buf, 0, len);
                len = 0;
                if (direct.checkError()) {
                    directFailed = true;
                    throw new Stopped();
                }
                return;
            }
            char[] full = buf;
            int n = len;
            if (!output.put(full, n)) {
                throw new Stopped();
            }
            long now = buffered.addAndGet(n);
            peakBuffered.accumulateAndGet(now, Math::max);
            buf = new char[CHUNK];
            len = 0;
        }

        /** Coordinator: waits until the decode has finished or waits at its cap. */
        void awaitRunAhead() throws InterruptedException {
            output.awaitRunAhead();
        }

        /** Coordinator: writes this segment's text as it comes; false if the output failed (decode stopped). */
        boolean drainTo(PrintWriter out) throws Exception {
            while (true) {
                char[] c = output.take();
                if (c == null) {
                    return !stopped && !directFailed;
                }
                int n = output.takenSize();
                buffered.addAndGet(-n);
                out.write(c, 0, n);
                if (out.checkError()) {
                    return false;
                }
            }
        }

        /**
         * The segment's sink: the status events of its first PSB reach the sink (its state, e.g. a printer's time, must
         * follow them) but print nothing, as the segment before ended with them. Edge coverage does not see them: the
         * segment before's last branch (still pending after them) may join this segment's first instruction.
         */
        private final class SeamSink implements FlowSink {
            private final FlowSink sink;
            private final long firstPsb;
            FlowDecoder decoder;
            private boolean initial = true;

            SeamSink(FlowSink sink, long firstPsb) {
                this.sink = sink;
                this.firstPsb = firstPsb;
            }

            @Override
            public void insn(long ip, int size, int cls, int mode, boolean speculative) {
                initial = false;
                sink.insn(ip, size, cls, mode, speculative);
            }

            @Override
            public void block(long ip, int count, ptfence.insn.CodeCache code, int off, int mode, boolean speculative) {
                initial = false;
                sink.block(ip, count, code, off, mode, speculative);
            }

            @Override
            public void event(Event ev) {
                // only the first PSB's: a PSB right after it (no event between) is this segment's to print
                if (initial && ev.statusUpdate && decoder.psbOffset() == firstPsb) {
                    if (sink.edgesOnly()) {
                        return; // coverage has no state to follow them, and they may not clear a branch pending
                    }
                    muted = true;
                    try {
                        sink.event(ev);
                    } finally {
                        muted = false;
                    }
                    return;
                }
                initial = false;
                sink.event(ev);
            }

            @Override
            public void error(String kind, int code, long offset, long ip) {
                initial = false;
                sink.error(kind, code, offset, ip);
            }

            @Override
            public void endOfTrace() {
                initial = false;
                sink.endOfTrace();
            }

            @Override
            public void beginBlock() {
                initial = false;
                sink.beginBlock();
            }

            @Override
            public boolean countsOnly() {
                return sink.countsOnly();
            }

            @Override
            public boolean edgesOnly() {
                return sink.edgesOnly();
            }

            @Override
            public void path(long base, TntPaths paths, long first, long last) {
                initial = false;
                sink.path(base, paths, first, last);
            }

            @Override
            public void disabledAfterResync() {
                initial = false;
                sink.disabledAfterResync();
            }

            @Override
            public void resumedAtPsb() {
                sink.resumedAtPsb();
            }

            @Override
            public void noCode(long ip, long tsc) {
                initial = false;
                sink.noCode(ip, tsc);
            }
        }

        void cancel() {
            output.cancel();
        }
    }
}

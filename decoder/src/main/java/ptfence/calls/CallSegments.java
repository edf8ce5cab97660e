package ptfence.calls;

import java.util.ArrayDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.LongConsumer;
import ptfence.flow.FlowDecoder;
import ptfence.flow.PsbSegments;
import ptfence.flow.SegmentOutput;

/**
 * One run of a CPU's trace decoded for perf's call views in PSB segments on several threads, its items handed on in
 * segment order, exactly the sequential decode's (docs/script.md, "PSB segments for the call views"). Each segment has
 * a {@link BranchSink} of its own; its items before its first seam point are the segment before's (its first PSB's
 * status updates) and are dropped. When its turn comes, the state it started from is checked against the one the
 * segment before ended with: the decoder's (clock, modes, the flow's carried reads: {@link PsbSegments.Decode}) and
 * the sink's ({@link BranchSink.Seam#continues}); where either differs it is decoded again on this thread, on the
 * sink before it, from the state that decoder ended with. The cycles of the first branch item after a seam count from
 * the last item before it, which a segment does not know: that item's are corrected when it is handed on.
 *
 * <p>Memory is bounded: at most {@code window} segments are decoded at once, each holding at most {@code cap} items
 * ahead of its turn (its worker waits there).
 */
public final class CallSegments {
    /** Items a worker fills before handing them over. */
    static final int CHUNK = 4096;

    private final PsbSegments segs;
    private final int threads;
    private final int window;
    private final int cap;
    /** Items per chunk: {@link #CHUNK}, fewer under a smaller cap (tests). */
    private final int chunk;
    private final Function<BranchSink.Out, BranchSink> sinks;
    private final BiConsumer<BranchSink, FlowDecoder> started;
    private final LongConsumer missing;
    private volatile boolean stopped;
    private int n;
    private int segments;
    private int redone;
    private long errors;
    private boolean settleLate;

    /**
     * @param sinks a sink for the CPU, as the sequential decode's, writing to the given items
     * @param started what the CPU does when a decoder starts on one of its sinks (the sink's clock)
     * @param missing told the IP of each error where code is missing, of the segments whose items are used
     */
    public CallSegments(PsbSegments segs, int threads, int cap, Function<BranchSink.Out, BranchSink> sinks,
            BiConsumer<BranchSink, FlowDecoder> started, LongConsumer missing) {
        this.segs = segs;
        this.threads = Math.max(1, threads);
        this.window = this.threads * 2;
        this.chunk = Math.max(1, Math.min(CHUNK, cap));
        this.cap = Math.max(chunk, cap);
        this.sinks = sinks;
        this.started = started;
        this.missing = missing;
    }

    /**
     * Tests: check each segment's start only once its decode has run as far as it can (finished, or held at its cap),
     * as an idle many-core machine does, so which guesses are decoded again does not depend on load.
     */
    public CallSegments settleLate(boolean on) {
        settleLate = on;
        return this;
    }

    /** Segments whose items were used. */
    public int segments() {
        return segments;
    }

    /** Segments decoded again because their guessed start did not check. */
    public int redone() {
        return redone;
    }

    /** Decode errors of the segments whose items were used (the sequential decode's count). */
    public long errors() {
        return errors;
    }

    /** Thrown out of a worker's sink when its segment is cancelled or the decode stops: unwinds the decoder. */
    private static final class Stopped extends RuntimeException {
        Stopped() {
            super("stopped", null, false, false);
        }
    }

    /** Decodes the run, handing every item on to {@code out} in trace order, on this thread. */
    public void run(BranchSink.Out out) throws Exception {
        n = segs.starts().length;
        AtomicInteger names = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "ptdecode-callsegment-" + names.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        ArrayDeque<Segment> ahead = new ArrayDeque<>();
        try {
            Segment prev = null;
            int next = 0;
            int turn = 0;
            while (turn < n) {
                // started in order on a FIFO pool: the segment whose turn it is always has a worker
                while (next < n && next < turn + window) {
                    Segment s = new Segment(next++, new Items());
                    ahead.add(s);
                    pool.execute(s::decode);
                }
                Segment s = ahead.poll();
                if (settleLate) {
                    s.awaitRunAhead();
                }
                if (prev != null) {
                    BranchSink.Seam start = s.awaitStart();
                    if (!s.settles(prev, start)) {
                        s.cancel();
                        redone++;
                        s = prev.redo(s.index, out);
                    } else {
                        // its first branch item counted from the cycles it started with, the sequential one from the
                        // last item's before the seam
                        s.cyclesFix = start.carried().cyclesBefore() - prev.end.carried().cyclesBefore();
                    }
                }
                s.drainTo(out);
                for (int k = 0; k < s.missingCount; k++) {
                    missing.accept(s.missingIps[k]);
                }
                errors += s.decode.decoder.errors;
                segments++;
                prev = s;
                int reached = s.reached;
                ptfence.flow.SegmentOutput.dropBefore(ahead, reached, x -> x.index, x -> x.output);
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

    /** The items a segment's sink writes to: dropped until its first seam point, then its segment's. */
    private final class Items implements BranchSink.Out {
        Segment target;
        boolean muted;

        @Override
        public void add(FlowItem item) {
            if (!muted) {
                target.put(item, 0);
            }
        }

        @Override
        public void time(long time) {
            if (!muted) {
                target.put(null, time);
            }
        }

        /** The sink reached a seam point: the first is where its segment starts. */
        void seam(BranchSink.Seam s) {
            if (target.startNotTold()) {
                target.told(s);
                muted = false;
            }
        }
    }

    /** Items handed over at once, with the merge times among them (a null item: {@code times[i]} is one). */
    private record Chunk(FlowItem[] items, long[] times, int n) {
    }

    /** One PSB segment: its decode, its items handed over a chunk at a time, its start and end states. */
    private final class Segment {
        final int index;
        final Items items;
        BranchSink sink;
        PsbSegments.Decode decode;
        int reached;
        /** The sink's state at the seam its decode ended at (null: none, the run's end or no seam point). */
        BranchSink.Seam end;
        long[] missingIps = new long[0];
        int missingCount;
        /** Added to the cycles of the first branch item after the start (the real count from the last item). */
        long cyclesFix;
        private boolean fixed;
        /** Non-null: decoded on the coordinator, its items go straight there. */
        private BranchSink.Out direct;
        private FlowItem[] buf = new FlowItem[chunk];
        private long[] times = new long[chunk];
        private int len;
        private final SegmentOutput<Chunk> output = new SegmentOutput<>(cap);
        // Guarded by output:
        private BranchSink.Seam start;
        private boolean startTold;

        Segment(int index, Items items) {
            this.index = index;
            this.items = items;
            items.target = this;
        }

        /** Worker: the decode, from the guessed state (segment 0: the run's start). */
        void decode() {
            Throwable failed = null;
            try {
                if (stopped) {
                    return;
                }
                sink = sinks.apply(items);
                sink.seams(items::seam);
                if (index > 0) {
                    sink.startsSegment();
                }
                sink.missingCode(ip -> items.target.missing(ip));
                items.muted = index > 0;
                decode = segs.segment(index, sink);
                started.accept(sink, decode.decoder);
                decode.decoder.run();
                ended();
            } catch (Stopped e) {
                // cancelled, or the decode stopped
            } catch (Throwable e) {
                failed = e;
            } finally {
                output.finish(failed);
            }
        }

        /** After the decode: the seam it ended at (the sink's part of it settled there), its last items handed over. */
        private void ended() {
            reached = decode.reached();
            end = reached < n ? sink.endSegment(decode.decoder.psbIp()) : null;
            handOver();
        }

        /**
         * Coordinator: this segment decoded again from where this one's decode ended, on this one's sink (its state
         * there is the sequential decode's), its items straight to {@code out}.
         */
        Segment redo(int i, BranchSink.Out out) {
            Segment r = new Segment(i, items);
            r.direct = out;
            r.sink = sink;
            items.muted = true; // until the redo's first seam point: its first PSB's updates are taken again
            r.decode = segs.redo(decode, i, sink);
            sink.continueWith(r.decode.decoder);
            r.decode.decoder.run();
            r.ended();
            r.output.finish(null);
            return r;
        }

        /** Coordinator: whether its decode started from the state {@code before}'s ended with (decoder and sink). */
        boolean settles(Segment before, BranchSink.Seam start) {
            return start != null && start.continues(before.end) && decode.startsFrom(before.decode);
        }

        void missing(long ip) {
            if (missingCount == missingIps.length) {
                missingIps = java.util.Arrays.copyOf(missingIps, Math.max(8, missingCount * 2));
            }
            missingIps[missingCount++] = ip;
        }

        boolean startNotTold() {
            synchronized (output) {
                return !startTold;
            }
        }

        void told(BranchSink.Seam s) {
            synchronized (output) {
                start = s;
                startTold = true;
                output.signal();
            }
        }

        /** Coordinator: the state its decode started from (null: it reached no seam point). */
        BranchSink.Seam awaitStart() throws InterruptedException {
            output.await(() -> startTold);
            synchronized (output) {
                return start;
            }
        }

        /** Coordinator: waits until the decode has finished or waits at its cap. */
        void awaitRunAhead() throws InterruptedException {
            output.awaitRunAhead();
        }

        void put(FlowItem item, long time) {
            if (direct != null) {
                if (item != null) {
                    direct.add(item);
                } else {
                    direct.time(time);
                }
                return;
            }
            buf[len] = item;
            times[len] = time;
            if (++len == chunk) {
                handOver();
            }
        }

        /** Worker: queues the chunk in hand, first waiting while this segment holds its cap. */
        private void handOver() {
            if (stopped) {
                throw new Stopped();
            }
            if (len == 0 || direct != null) {
                return;
            }
            if (!output.put(new Chunk(buf, times, len), len)) {
                throw new Stopped();
            }
            buf = new FlowItem[chunk];
            times = new long[chunk];
            len = 0;
        }

        /** Coordinator: hands its items on as they come, the first branch item's cycles corrected. */
        void drainTo(BranchSink.Out out) throws Exception {
            for (Chunk c = output.take(); c != null; c = output.take()) {
                FlowItem[] its = c.items();
                long[] ts = c.times();
                int k = c.n();
                for (int j = 0; j < k; j++) {
                    FlowItem it = its[j];
                    if (it == null) {
                        out.time(ts[j]);
                        continue;
                    }
                    if (!fixed && it instanceof FlowItem.Branch b) {
                        fixed = true;
                        if (cyclesFix != 0) {
                            // (the state's IPC counts are not corrected: a view that shows IPC takes no segments)
                            it = new FlowItem.Branch(b.cpu(), b.time(), b.from(), b.to(), b.flags(), b.insnLen(),
                                    b.insns(), b.cycles() + cyclesFix, b.stateInsns(), b.stateCycles());
                        }
                    }
                    out.add(it);
                }
            }
        }

        void cancel() {
            output.cancel();
        }
    }
}

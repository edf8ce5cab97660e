package ptfence.flow;

import java.io.PrintWriter;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import ptfence.flow.PacketInput.Pkt;
import ptfence.image.CodeSpace;

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
 */
public final class ParallelFlow {
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

    public ParallelFlow(CodeSpace image, FlowConfig cfg, Function<ByteBuffer, PacketInput> packets, boolean blockMode,
            int threads, long chunkBytes) {
        this(image, cfg, packets, blockMode, threads, chunkBytes, 512 * 1024);
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

    /** Segment start offsets: the first PSB, then the first PSB at or after every {@code chunkBytes}. */
    List<Long> boundaries(ByteBuffer trace) {
        PacketInput in = packets.apply(trace.duplicate());
        List<Long> starts = new ArrayList<>();
        long at = in.findPsb(0);
        while (at >= 0) {
            starts.add(at);
            at = in.findPsb(at + Math.max(16, chunkBytes));
        }
        return starts;
    }

    /** The IP in the PSB+ at {@code psb} (its FUP), or -1 if tracing is off there. */
    long psbIp(ByteBuffer trace, long psb) {
        int end = (int) Math.min(trace.limit(), psb + 4096);
        PacketInput in = packets.apply(trace.duplicate().position((int) psb).limit(end).slice());
        Pkt p = new Pkt();
        if (in.next(p) < 0 || p.type != Pkt.PSB) {
            return -1;
        }
        while (in.next(p) == 0) {
            switch (p.type) {
                case Pkt.FUP -> {
                    return switch (p.ipc) {
                        case 3 -> (p.ip << 16) >> 16;
                        case 0 -> -1;
                        default -> p.ip;
                    };
                }
                case Pkt.PSBEND, Pkt.OVF -> {
                    return -1;
                }
                default -> { }
            }
        }
        return -1;
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
        try {
            int next = 0;
            for (int turn = 0; turn < n; turn++) {
                // Segments are started in order on a FIFO pool, so the one whose turn it is always has a worker:
                // the workers waiting at their caps cannot starve it.
                while (next < n && next < turn + window) {
                    int i = next++;
                    long from = starts.get(i);
                    long to = i + 1 < n ? starts.get(i + 1) : trace.limit();
                    long nextIp = i + 1 < n ? psbIp(trace, to) : -1;
                    Segment s = new Segment();
                    ahead.add(s);
                    pool.execute(() -> s.decode(trace, from, to, nextIp, sinks));
                }
                Segment s = ahead.poll();
                if (!s.drainTo(out)) {
                    return;
                }
                instructions += s.instructions;
                blocks += s.blocks;
                errors += s.errors;
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
        private char[] buf = new char[CHUNK];
        private int len;
        // Guarded by this:
        private final ArrayDeque<char[]> ready = new ArrayDeque<>();
        private final ArrayDeque<Integer> readyLength = new ArrayDeque<>();
        private long held;
        private boolean finished;
        private boolean cancelled;
        private Throwable failure;

        long instructions;
        long blocks;
        long errors;

        void decode(ByteBuffer trace, long from, long to, long nextIp, Function<PrintWriter, FlowSink> sinks) {
            Throwable failed = null;
            try {
                if (stopped) {
                    return;
                }
                ByteBuffer slice = trace.duplicate().position((int) from).limit((int) to).slice();
                PrintWriter pw = new PrintWriter(this);
                FlowDecoder d = new FlowDecoder(image, cfg, packets.apply(slice), sinks.apply(pw), blockMode);
                d.segment(from, to < trace.limit() ? nextIp : -1);
                d.run();
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
                synchronized (this) {
                    failure = failed;
                    finished = true;
                    notifyAll();
                }
            }
        }

        @Override
        public void write(char[] c, int off, int n) {
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
        public void write(String s, int off, int n) {
            while (n > 0) {
                int k = Math.min(n, CHUNK - len);
                s.getChars(off, off + k, buf, len);
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
            char[] full = buf;
            int n = len;
            synchronized (this) {
                while (held >= segmentCap && !cancelled) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new Stopped();
                    }
                }
                if (cancelled) {
                    throw new Stopped();
                }
                ready.add(full);
                readyLength.add(n);
                held += n;
                notifyAll();
            }
            long now = buffered.addAndGet(n);
            peakBuffered.accumulateAndGet(now, Math::max);
            buf = new char[CHUNK];
            len = 0;
        }

        /** Coordinator: writes this segment's text as it comes; false if the output failed (decode stopped). */
        boolean drainTo(PrintWriter out) throws Exception {
            while (true) {
                char[] c;
                int n;
                synchronized (this) {
                    while (ready.isEmpty() && !finished) {
                        wait();
                    }
                    c = ready.poll();
                    if (c == null) {
                        if (failure != null) {
                            throw new ExecutionException(failure);
                        }
                        return !stopped;
                    }
                    n = readyLength.poll();
                    held -= n;
                    notifyAll();
                }
                buffered.addAndGet(-n);
                out.write(c, 0, n);
                if (out.checkError()) {
                    return false;
                }
            }
        }

        void cancel() {
            synchronized (this) {
                cancelled = true;
                notifyAll();
            }
        }
    }
}

package ptfence.flow;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import ptfence.flow.PacketInput.Pkt;
import ptfence.image.CodeSpace;

/**
 * Decodes a trace in PSB segments on several threads and stitches the results in order. Each segment
 * starts at a PSB (whose PSB+ gives the full decoder state) and runs to the next segment's PSB; there it
 * walks on without trace to the IP that PSB+ reports, which is what the sequential decoder does when it
 * passes a PSB. Output of each segment is buffered and written in trace order, a wave of segments at a
 * time, so memory stays bounded.
 */
public final class ParallelFlow {
    private final CodeSpace image;
    private final FlowConfig cfg;
    private final Function<ByteBuffer, PacketInput> packets;
    private final boolean blockMode;
    private final int threads;
    private final long chunkBytes;

    public long instructions;
    public long blocks;
    public long errors;

    public ParallelFlow(CodeSpace image, FlowConfig cfg, Function<ByteBuffer, PacketInput> packets, boolean blockMode,
            int threads, long chunkBytes) {
        this.image = image;
        this.cfg = cfg;
        this.packets = packets;
        this.blockMode = blockMode;
        this.threads = threads;
        this.chunkBytes = chunkBytes;
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

    /** Decodes everything, writing the stitched output through sinks made by {@code sinks}. */
    public void run(ByteBuffer trace, PrintWriter out, Function<PrintWriter, FlowSink> sinks) throws Exception {
        List<Long> starts = boundaries(trace);
        int n = starts.size();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int wave = 0; wave < n; wave += threads * 4) {
                List<Future<Segment>> futures = new ArrayList<>();
                for (int i = wave; i < Math.min(n, wave + threads * 4); i++) {
                    long from = starts.get(i);
                    long to = i + 1 < n ? starts.get(i + 1) : trace.limit();
                    long nextIp = i + 1 < n ? psbIp(trace, to) : -1;
                    futures.add(pool.submit(() -> decodeSegment(trace, from, to, nextIp, sinks)));
                }
                for (Future<Segment> f : futures) {
                    Segment s = f.get();
                    out.append(s.text);
                    instructions += s.instructions;
                    blocks += s.blocks;
                    errors += s.errors;
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private record Segment(CharSequence text, long instructions, long blocks, long errors) {}

    private Segment decodeSegment(ByteBuffer trace, long from, long to, long nextIp, Function<PrintWriter, FlowSink> sinks) {
        ByteBuffer slice = trace.duplicate().position((int) from).limit((int) to).slice();
        StringWriter sw = new StringWriter();
        PrintWriter pw = new PrintWriter(sw);
        FlowDecoder d = new FlowDecoder(image, cfg, packets.apply(slice), sinks.apply(pw), blockMode);
        d.segment(from, to < trace.limit() ? nextIp : -1);
        d.run();
        pw.flush();
        return new Segment(sw.getBuffer(), d.instructions, d.blocks, d.errors);
    }
}

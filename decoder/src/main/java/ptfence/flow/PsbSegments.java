package ptfence.flow;

import java.nio.ByteBuffer;
import java.util.function.Function;
import ptfence.image.CodeSpace;

/**
 * One run of a CPU's trace cut at its PSBs, for sinks that decode it in PSB segments (the call views' seams,
 * docs/script.md "PSB segments for the call views"): where the PSBs are, and a decoder that starts at one of them
 * with the clock and execution modes the packet pass guesses the sequential decode has there ({@link SeamState.Pass};
 * the flow's carried part, the IP tracing is off at, is the guess's too, not checked here).
 */
public final class PsbSegments {
    private final CodeSpace image;
    private final FlowConfig cfg;
    private final Function<ByteBuffer, PacketInput> packets;
    private final ByteBuffer trace;
    /** The packet pass, kept while PSBs are asked for in order (a pass only goes forward). */
    private SeamState.Pass pass;
    private long passAt = Long.MAX_VALUE;

    public PsbSegments(CodeSpace image, FlowConfig cfg, Function<ByteBuffer, PacketInput> packets, ByteBuffer trace) {
        this.image = image;
        this.cfg = cfg;
        this.packets = packets;
        this.trace = trace;
    }

    /** Every PSB's offset in the run, in order. */
    public long[] psbs() {
        PacketInput in = packets.apply(trace.duplicate());
        long[] out = new long[16];
        int n = 0;
        for (long at = in.findPsb(0); at >= 0; at = in.findPsb(at + 16)) {
            if (n == out.length) {
                out = java.util.Arrays.copyOf(out, n * 2);
            }
            out[n++] = at;
        }
        return java.util.Arrays.copyOf(out, n);
    }

    /** Where segments start: every PSB whose PSB+ ends within reach (as {@link ParallelFlow#boundaries}). */
    private long[] starts;
    private ParallelFlow.Seam[] seams;

    private void cut() {
        if (starts != null) {
            return;
        }
        ParallelFlow pf = new ParallelFlow(image, cfg, packets, false, 1, 0);
        java.util.List<Long> at = pf.boundaries(trace);
        starts = at.stream().mapToLong(Long::longValue).toArray();
        seams = new ParallelFlow.Seam[starts.length];
        for (int i = 0; i < starts.length; i++) {
            seams[i] = pf.seam(trace, starts[i]);
        }
    }

    /** The segments' starts: every PSB whose PSB+ ends within reach. */
    public long[] starts() {
        cut();
        return starts.clone();
    }

    /**
     * A decoder of segment {@code i} (from its PSB, started with the guessed state there) that ends where the next
     * segment's PSB+ ends, the flow walked on to that PSB+'s IP ({@link FlowDecoder#seams}).
     */
    public FlowDecoder segment(int i, FlowSink sink) {
        cut();
        FlowDecoder d = decoderAt(starts[i], sink);
        d.seams(seams, i + 1);
        return d;
    }

    /**
     * A decoder of segment {@code i} started with the state {@code before} (the decode of the segments before it)
     * reached its PSB with: the sequential decode's, for a segment whose guessed start did not check.
     */
    public FlowDecoder redo(FlowDecoder before, int i, FlowSink sink) {
        cut();
        SeamState exact = before.endSeam();
        ByteBuffer slice = trace.duplicate().position((int) starts[i]).slice();
        FlowDecoder d = new FlowDecoder(image, cfg, packets.apply(slice), sink, false);
        d.segment(starts[i], -1);
        d.startAt(exact);
        d.seams(seams, i + 1);
        return d;
    }

    /** The index of the segment whose PSB {@code d} (a segment's decoder) ended at (the count: the run's end). */
    public static int reached(FlowDecoder d) {
        return d.seamReached();
    }

    /**
     * A decoder of the run from the PSB at {@code psb} to its end, reporting to {@code sink} with the run's offsets,
     * started with the guessed state there.
     */
    public FlowDecoder decoderAt(long psb, FlowSink sink) {
        if (pass == null || psb < passAt) {
            pass = new SeamState.Pass(packets.apply(trace.duplicate()), cfg);
        }
        passAt = psb;
        SeamState guess = pass.at(psb);
        ByteBuffer slice = trace.duplicate().position((int) psb).slice();
        FlowDecoder d = new FlowDecoder(image, cfg, packets.apply(slice), sink, false);
        d.segment(psb, -1);
        d.startAt(guess);
        return d;
    }
}

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

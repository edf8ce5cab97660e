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
    private final long segmentBytes;
    /** The packet pass, kept while PSBs are asked for in order (a pass only goes forward). */
    private SeamState.Pass pass;
    private long passAt = Long.MAX_VALUE;

    public PsbSegments(CodeSpace image, FlowConfig cfg, Function<ByteBuffer, PacketInput> packets, ByteBuffer trace) {
        this(image, cfg, packets, trace, 0);
    }

    /** @param segmentBytes bytes of trace a segment spans at least (0: a segment at every PSB) */
    public PsbSegments(CodeSpace image, FlowConfig cfg, Function<ByteBuffer, PacketInput> packets, ByteBuffer trace,
            long segmentBytes) {
        this.segmentBytes = segmentBytes;
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
     * Where segments start: the first PSB, then the first at or after every {@code segmentBytes} whose PSB+ ends within
     * reach (as {@link ParallelFlow#boundaries}).
     */
    private long[] starts;
    private ParallelFlow.Seam[] seams;

    private synchronized void cut() {
        if (starts != null) {
            return;
        }
        ParallelFlow pf = new ParallelFlow(image, cfg, packets, false, 1, segmentBytes);
        java.util.List<Long> at = pf.boundaries(trace);
        starts = at.stream().mapToLong(Long::longValue).toArray();
        seams = new ParallelFlow.Seam[starts.length];
        for (int i = 0; i < starts.length; i++) {
            seams[i] = pastTiming(pf.seam(trace, starts[i]));
        }
    }

    /**
     * {@code s} ending after the CYC packets that follow its PSBEND: the sequential decode reads them before it hands
     * on the PSB's status updates, so the cycles the call views' sink reads there (a branch settled at the PSB takes
     * its cycles then) are the same in the segment that ends there. Only where tracing is on and the flow goes on
     * (a TNT or TIP next): before a trace end (HASE 2018-05) the segment read on made a trace begin of it.
     */
    private ParallelFlow.Seam pastTiming(ParallelFlow.Seam s) {
        if (s.headerEnd() < 0 || s.ip() == -1) {
            return s;
        }
        PacketInput in = packets.apply(trace.duplicate().position((int) s.headerEnd()).slice());
        PacketInput.Pkt p = new PacketInput.Pkt();
        long end = 0;
        int st;
        while ((st = in.next(p)) == 0 && end < 4096
                && (p.type == PacketInput.Pkt.CYC || p.type == PacketInput.Pkt.PAD)) {
            end = in.position();
        }
        boolean flowNext = st == 0 && (p.type == PacketInput.Pkt.TNT || p.type == PacketInput.Pkt.TIP);
        return end == 0 || !flowNext ? s : new ParallelFlow.Seam(s.at(), s.ip(), s.headerEnd() + end);
    }

    /** The segments' starts. */
    public long[] starts() {
        cut();
        return starts.clone();
    }

    /**
     * One segment's decode: its decoder, the state it started from, and (once its start is settled) the state it really
     * started from, which the state it ends with is completed from ({@link SeamState#filledFrom}).
     */
    public final class Decode {
        public final FlowDecoder decoder;
        private final SeamState start;
        private final CarriedReads reads;
        private SeamState realStart;

        Decode(FlowDecoder decoder, SeamState start, CarriedReads reads, SeamState realStart) {
            this.decoder = decoder;
            this.start = start;
            this.reads = reads;
            this.realStart = realStart;
        }

        /**
         * Whether this decode, started from a guess, goes as one started from the state {@code before} (the segment
         * before, itself settled) ended with: the same clock and modes, and what it read so far of the flow's carried
         * state the same (its later reads take the real state). Settles its start if so.
         */
        public boolean startsFrom(Decode before) {
            SeamState real = before.end();
            if (!start.sameState(real) || !reads.settle(real)) {
                return false;
            }
            realStart = real;
            return true;
        }

        /** The state the decode reached its last PSB with, completed from its real start (settled). */
        SeamState end() {
            return decoder.endSeam().filledFrom(realStart);
        }

        /** The index of the segment whose PSB this decode ended at (the count: the run's end). */
        public int reached() {
            return decoder.seamReached();
        }
    }

    /**
     * Segment {@code i}'s decode (from its PSB, started with the packet pass's guess there, which {@link
     * Decode#startsFrom} checks), ending where the next segment's PSB+ ends, the flow walked on to that PSB+'s IP
     * ({@link FlowDecoder#seams}). Segment 0 starts as the sequential decode does. Calls come in segment order (the
     * packet pass only goes forward).
     */
    public Decode segment(int i, FlowSink sink) {
        cut();
        SeamState guess = i == 0 ? new SeamState(cfg) : guessOf(i);
        CarriedReads reads = i == 0 ? CarriedReads.settled(guess) : new CarriedReads(guess, true);
        FlowDecoder d = decoder(i, guess, reads, sink);
        return new Decode(d, guess, reads, i == 0 ? guess : null);
    }

    /**
     * Segment {@code i} decoded again from the state {@code before} (settled) ended with: the sequential decode's
     * there, for a segment whose guessed start did not check.
     */
    public Decode redo(Decode before, int i, FlowSink sink) {
        cut();
        SeamState exact = before.end().copy(cfg);
        CarriedReads reads = CarriedReads.settled(exact);
        return new Decode(decoder(i, exact, reads, sink), exact, reads, exact);
    }

    private FlowDecoder decoder(int i, SeamState start, CarriedReads reads, FlowSink sink) {
        ByteBuffer slice = trace.duplicate().position((int) starts[i]).slice();
        FlowDecoder d = new FlowDecoder(image, cfg, packets.apply(slice), sink, false);
        d.segment(starts[i], -1);
        d.seams(seams, i + 1);
        if (i > 0) {
            d.startAt(start);
            d.carriedReads(reads);
        }
        return d;
    }

    /** The guesses made for segments not yet started (the pass made them on its way to a later one). */
    private SeamState[] guesses;
    /** The last segment the pass has guessed for. */
    private int guessed;

    /**
     * Segment {@code i}'s guessed start. Workers ask at once and not quite in order: the one pass goes forward under
     * this lock, keeping the guesses it passes (an unguarded pass shared by two workers gave one segment the clock of
     * its end: all its lines at that time).
     */
    synchronized SeamState guessOf(int i) {
        cut();
        if (guesses == null) {
            guesses = new SeamState[starts.length];
        }
        while (guessed < i) {
            guessed++;
            guesses[guessed] = guess(starts[guessed]);
        }
        SeamState g = guesses[i];
        guesses[i] = null;
        return g != null ? g : guess(starts[i]);
    }

    private synchronized SeamState guess(long psb) {
        if (pass == null || psb < passAt) {
            pass = new SeamState.Pass(packets.apply(trace.duplicate()), cfg);
        }
        passAt = psb;
        return pass.at(psb);
    }

    /**
     * A decoder of the run from the PSB at {@code psb} to its end, reporting to {@code sink} with the run's offsets,
     * started with the guessed state there.
     */
    public FlowDecoder decoderAt(long psb, FlowSink sink) {
        SeamState guess = guess(psb);
        ByteBuffer slice = trace.duplicate().position((int) psb).slice();
        FlowDecoder d = new FlowDecoder(image, cfg, packets.apply(slice), sink, false);
        d.segment(psb, -1);
        d.startAt(guess);
        return d;
    }
}

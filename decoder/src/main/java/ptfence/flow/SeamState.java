package ptfence.flow;

import ptfence.flow.PacketInput.Pkt;
import ptfence.packet.LastIp;

/**
 * What the sequential decode carries into a PSB that the PSB+ does not restate, so that a PSB segment decoded on its
 * own starts where the sequential decode is: the clock (TSC, MTC/CTC, CBR, TMA, the CYC calibration), the event
 * layer's execution mode (a MODE.Exec that repeats it is no event), and the flow's execution mode; and the flow's part
 * a PSB+ with tracing off does not restate: the IP tracing was disabled at (an enable there is "resumed", else
 * "enabled"; an error while disabled reports it) and the last instruction emitted (an error reports the IP after it).
 */
final class SeamState {
    final TimeTracker clock;
    boolean modeValid;
    boolean csl;
    boolean csd;
    boolean iflag;
    int flowMode;
    /** The modes are the sequential decode's (or its guess); false: a segment starts them afresh. */
    boolean carried = true;
    /** The clock too (a count or coverage does not read it). */
    boolean clockCarried = true;
    long resumeIp;
    boolean emitted;
    long lastEmittedIp;
    long lastEmittedNext;
    /** In a segment's end state: the flow's part is still what the segment started with (the real start fills it). */
    boolean ipFromStart;
    boolean emitFromStart;

    SeamState(FlowConfig config) {
        clock = new TimeTracker(config);
    }

    static SeamState of(FlowConfig config, TimeTracker clock, boolean modeValid, boolean csl, boolean csd, boolean iflag,
            int flowMode) {
        SeamState s = new SeamState(config);
        s.clock.seed(clock);
        s.modeValid = modeValid;
        s.csl = csl;
        s.csd = csd;
        s.iflag = iflag;
        s.flowMode = flowMode;
        return s;
    }

    SeamState copy(FlowConfig config) {
        SeamState s = of(config, clock, modeValid, csl, csd, iflag, flowMode);
        s.carried = carried;
        s.clockCarried = clockCarried;
        s.resumeIp = resumeIp;
        s.emitted = emitted;
        s.lastEmittedIp = lastEmittedIp;
        s.lastEmittedNext = lastEmittedNext;
        return s;
    }

    /**
     * This state, a segment's end, with the flow's part it kept from its start (the IP tracing is off at, the last
     * instruction emitted) taken from {@code realStart}, the state the segment really started from.
     */
    SeamState filledFrom(SeamState realStart) {
        if (ipFromStart) {
            resumeIp = realStart.resumeIp;
        }
        if (emitFromStart) {
            emitted = realStart.emitted;
            lastEmittedIp = realStart.lastEmittedIp;
            lastEmittedNext = realStart.lastEmittedNext;
        }
        return this;
    }

    /**
     * True if a decode from here gives the same times and events from either state (the flow's part is checked by what
     * the decode read of it: {@link CarriedReads#settle}).
     */
    boolean sameState(SeamState o) {
        return clock.sameState(o.clock) && sameModes(o);
    }

    /** True if a decode from here lists the same flow (times aside) from either state: the execution modes agree. */
    boolean sameModes(SeamState o) {
        return modeValid == o.modeValid && csl == o.csl && csd == o.csd && iflag == o.iflag && flowMode == o.flowMode;
    }

    /**
     * A guess of the modes at the PSB at {@code psb} without a pass over the whole trace before it: the pass over the
     * last {@code reach} bytes before it (from a PSB), where some MODE.Exec restates them. The clock is not guessed.
     */
    static SeamState near(PacketInput in, FlowConfig config, long psb, long reach) {
        long from = psb <= reach ? 0 : in.findPsbBackward(psb - reach);
        if (from < 0) {
            from = 0;
        }
        Pass pass = new Pass(in, config, from);
        SeamState s = pass.at(psb);
        s.clockCarried = false;
        return s;
    }

    private void reset() {
        clock.reset();
        modeValid = false;
        flowMode = 0;
        resumeIp = 0;
    }

    /**
     * A pass over the packets alone (no flow), doing with each what the event layer does to this state, in and out of
     * PSB+, so that at each PSB it guesses the state the full decode will have there. It cannot see the flow's errors
     * (after one the decoder looks for the next PSB and starts afresh there): {@link ParallelFlow} checks each guess.
     */
    static final class Pass {
        private final SeamState s;
        private final PacketInput in;
        private final Pkt p = new Pkt();
        private final FlowConfig config;
        private boolean header;
        private boolean ended;
        // For the guess of the IP tracing is off at: the last IP (IP compression), a FUP that may pair with a TIP.PGD
        private long lastIp;
        private boolean fup;
        private long fupIp;
        private boolean bound;

        private void lastIp(Pkt p) {
            lastIp = LastIp.combine(lastIp, p.ipc, p.ip);
        }

        Pass(PacketInput in, FlowConfig config) {
            this(in, config, 0);
        }

        Pass(PacketInput in, FlowConfig config, long from) {
            this.in = in;
            this.config = config;
            this.s = new SeamState(config);
            long psb = in.findPsb(from);
            ended = psb < 0;
            if (!ended) {
                in.seek(psb);
            }
        }

        /** The state just before the packet at {@code offset} (a PSB; offsets only grow from call to call). */
        SeamState at(long offset) {
            while (!ended && in.position() < offset) {
                long pos = in.position();
                int st = in.next(p);
                if (st < 0) {
                    if (st == PtError.EOS) {
                        ended = true;
                        break;
                    }
                    // the decoder reports an error and synchronizes at the next PSB, starting afresh
                    s.reset();
                    header = false;
                    fup = false;
                    bound = false;
                    long psb = in.findPsb(pos + 1);
                    if (psb < 0) {
                        ended = true;
                        break;
                    }
                    in.seek(psb);
                    continue;
                }
                if (p.type != Pkt.PAD) {
                    s.clock.packet(p.type); // perf's clock looks one packet back (as the event layer reads them)
                }
                switch (p.type) {
                    case Pkt.PSB -> {
                        header = true;
                        lastIp = 0;
                        fup = false;
                    }
                    case Pkt.PSBEND -> header = false;
                    case Pkt.OVF -> {
                        header = false;
                        s.modeValid = false;
                        s.clock.overflow(config.keepTcalOnOvf);
                        s.resumeIp = 0;
                        fup = false;
                        bound = true; // the FUP after an OVF says where tracing resumed
                    }
                    case Pkt.MODE_EXEC -> modeExec(p.flagA, p.flagB, p.flagC);
                    case Pkt.TSC, Pkt.TMA, Pkt.CYC, Pkt.CBR -> s.clock.apply(p, header);
                    case Pkt.MTC -> {
                        s.clock.apply(p, header);
                        s.clock.lookahead(in); // perf's rate of cycles to TSC, measured up to the next MTC
                    }
                    case Pkt.PAD, Pkt.PIP, Pkt.VMCS, Pkt.MNT -> { }
                    case Pkt.FUP -> {
                        lastIp(p);
                        fup = !header && !bound && p.ipc != 0;
                        fupIp = lastIp;
                        bound = false;
                    }
                    case Pkt.TIP_PGD -> {
                        lastIp(p);
                        // FUP + TIP.PGD: disabled asynchronously at the FUP's IP; else at the TIP.PGD's IP (a
                        // suppressed IP: where the flow stops, which only the flow knows; 0 guesses "not known")
                        s.resumeIp = fup ? fupIp : p.ipc != 0 ? lastIp : 0;
                        fup = false;
                        bound = false;
                    }
                    case Pkt.TIP, Pkt.TIP_PGE -> {
                        lastIp(p);
                        fup = false;
                        bound = false;
                    }
                    // these take the FUP that follows them
                    case Pkt.MODE_TSX, Pkt.PTW, Pkt.EXSTOP, Pkt.MWAIT, Pkt.TRIG, Pkt.CFE -> {
                        fup = false;
                        bound = true;
                    }
                    default -> {
                        fup = false;
                        bound = false;
                    }
                }
            }
            return in.position() == offset ? s.copy(config) : new SeamState(config);
        }

        /** As EventDecoder's headerModeExec and decodeModeExec (a mismatch in PSB+ is an error: left to the check). */
        private void modeExec(boolean pcsl, boolean pcsd, boolean pif) {
            if (header) {
                if (!s.modeValid) {
                    s.modeValid = true;
                    s.iflag = pif;
                    s.csl = pcsl;
                    s.csd = pcsd;
                    s.flowMode = EventDecoder.execMode(pcsl, pcsd);
                }
                return;
            }
            if (!s.modeValid || s.csl != pcsl || s.csd != pcsd) {
                s.csl = pcsl;
                s.csd = pcsd;
                s.flowMode = EventDecoder.execMode(pcsl, pcsd);
            }
            if (config.iflagsEvents && (!s.modeValid || s.iflag != pif)) {
                s.iflag = pif;
            }
            s.modeValid = true;
        }
    }
}

package ptfence.flow;

import ptfence.flow.PacketInput.Pkt;
import ptfence.timing.TimeCalibration;
import ptfence.timing.Timing;
import ptfence.timing.TimingConfig;
import ptfence.timing.TimingError;

/**
 * The event layer's clock: ptfence.timing's TSC estimate (TSC, TMA, MTC, CYC, CBR) and its MTC/CYC
 * calibration, updated in libipt's order so event times match ptxed's to the tick.
 */
public final class TimeTracker {
    private long cycles;
    private final TimingConfig timingConfig;
    private final Timing time;
    private final TimeCalibration tcal;
    /** perf's clock beside libipt's, when the flow's times are to be perf's (a recording's perf-format lines). */
    private final ptfence.timing.PerfClock perf;

    public TimeTracker(FlowConfig config) {
        this.timingConfig = new TimingConfig(config.mtcFreq, config.nomFreq, config.cpuid15Eax, config.cpuid15Ebx,
                config.skl168);
        this.time = new Timing(timingConfig);
        this.tcal = new TimeCalibration(timingConfig);
        this.perf = config.perfClock ? new ptfence.timing.PerfClock(config.mtcFreq, config.cpuid15Ebx,
                config.cpuid15Eax, config.nomFreq) : null;
    }

    private final Pkt ahead = new Pkt();
    private long perfAppliedTo = -1;

    /** Every packet but PAD as it is read (perf's clock looks one packet back for CYC). */
    void packet(int type) {
        if (perf != null) {
            perf.packet(type == Pkt.CYC);
            switch (type) {
                case Pkt.TIP_PGE -> perf.flowPacket(ptfence.timing.PerfClock.FLOW_PGE);
                case Pkt.TIP_PGD, Pkt.STOP -> perf.flowPacket(ptfence.timing.PerfClock.FLOW_PGD);
                case Pkt.PSB -> perf.flowPacket(ptfence.timing.PerfClock.FLOW_PSB);
                case Pkt.PSBEND -> perf.flowPacket(ptfence.timing.PerfClock.FLOW_PSBEND);
                case Pkt.FUP -> perf.flowPacket(ptfence.timing.PerfClock.FLOW_FUP);
                default -> { }
            }
        }
    }

    /**
     * After an MTC: perf's clock may measure the cycles-to-TSC rate from the packets ahead (up to the next MTC); they
     * are read and {@code in} is put back.
     */
    void lookahead(PacketInput in) {
        ptfence.timing.PerfClock.Lookahead la = perf == null ? null : perf.lookahead();
        if (la == null) {
            return;
        }
        long save = in.position();
        try {
            while (in.next(ahead) >= 0) {
                boolean stop = switch (ahead.type) {
                    case Pkt.PAD -> false;
                    case Pkt.MTC -> la.mtc((int) ahead.payload);
                    case Pkt.CYC -> la.cyc(ahead.payload);
                    case Pkt.CBR -> la.cbr((int) ahead.payload);
                    case Pkt.TNT, Pkt.TIP_PGE, Pkt.TIP, Pkt.FUP, Pkt.PSB, Pkt.PIP, Pkt.MODE_EXEC, Pkt.MODE_TSX,
                            Pkt.PSBEND, Pkt.VMCS, Pkt.MNT, Pkt.PTW, Pkt.BBP, Pkt.BIP, Pkt.BEP -> la.skip();
                    default -> la.stop();
                };
                if (stop) {
                    break;
                }
            }
        } finally {
            in.seek(save);
        }
    }

    private ptfence.timing.PerfClock aheadClock;

    /**
     * perf's time once the timing packets from {@code from} up to {@code to} are taken, without taking them (the event
     * layer reads them later); -1 without perf's clock. {@code in} is put back.
     */
    long perfTimeAt(PacketInput in, long from, long to) {
        if (perf == null) {
            return -1;
        }
        if (aheadClock == null) {
            aheadClock = perf.copy();
        }
        aheadClock.copyFrom(perf);
        long save = in.position();
        try {
            in.seek(from);
            while (in.position() < to && in.next(ahead) >= 0) {
                if (ahead.type == Pkt.PAD || ahead.offset <= perfAppliedTo) {
                    continue;
                }
                aheadClock.packet(ahead.type == Pkt.CYC);
                applyPerf(aheadClock, ahead);
            }
        } finally {
            in.seek(save);
        }
        perf.markIp(aheadClock); // the state perf returns at that packet takes its cycle count there
        return aheadClock.tsc();
    }

    private static void applyPerf(ptfence.timing.PerfClock c, Pkt p) {
        switch (p.type) {
            case Pkt.TSC -> c.tsc(p.payload);
            case Pkt.TMA -> c.tma((int) p.payload, (int) p.payload2);
            case Pkt.MTC -> c.mtc((int) p.payload);
            case Pkt.CBR -> c.cbr((int) p.payload);
            case Pkt.CYC -> {
                if (p.small == 0) {
                    c.cyc(p.payload);
                }
            }
            default -> { }
        }
    }

    private final Pkt replayed = new Pkt();

    /**
     * perf's fast forward restarts its decoder at the PSB at {@code psb} (an offset of {@code in}) with its clock as it
     * was at the jump, {@code atJump}: perf's clock becomes that ({@link ptfence.timing.PerfClock#repositionedFrom})
     * and takes again, under perf's rules, the packets read since the PSB (its PSB+). {@code in} is put back.
     */
    void perfRepositioned(PacketInput in, long psb, ptfence.timing.PerfClock atJump) {
        if (perf == null) {
            return;
        }
        perf.repositionedFrom(atJump);
        long end = in.position();
        try {
            in.seek(psb);
            while (in.position() < end && in.next(replayed) >= 0) {
                if (replayed.type == Pkt.PAD) {
                    continue;
                }
                packet(replayed.type);
                applyPerf(perf, replayed);
                if (replayed.type == Pkt.MTC) {
                    lookahead(in);
                }
            }
        } finally {
            in.seek(end);
        }
    }

    /** perf's clock (null unless {@link FlowConfig#perfClock}). */
    public ptfence.timing.PerfClock perf() {
        return perf;
    }

    /** Takes over {@code o}'s state. */
    void seed(TimeTracker o) {
        cycles = o.cycles;
        if (perf != null && o.perf != null) {
            perf.copyFrom(o.perf);
        }
        time.copyFrom(o.time);
        tcal.copyFrom(o.tcal);
    }

    /** True if the two clocks give the same times from here on, whatever packets follow. */
    boolean sameState(TimeTracker o) {
        return cycles == o.cycles && time.sameState(o.time) && tcal.sameState(o.tcal)
                && (perf == null || o.perf == null || perf.sameTime(o.perf));
    }

    void reset() {
        time.reset();
        tcal.reset();
        // perf's decoder keeps its time across a resync (only a new, non-adjacent buffer starts it afresh, and that
        // is a new decoder here)
    }

    /** OVF: drop the calibration, or (keep-tcal-on-ovf) keep the ratio but drop partial measurements. */
    void overflow(boolean keepCalibration) {
        if (keepCalibration) {
            tcal.updateOvf();
        } else {
            tcal.reset();
        }
    }

    /** A timing packet outside PSB+; returns 0 or a decode error. */
    int apply(Pkt p) {
        return apply(p, false);
    }

    /** A timing packet in PSB+ (TSC and CBR calibrate differently there). */
    int applyHeader(Pkt p) {
        return apply(p, true);
    }

    int apply(Pkt p, boolean header) {
        if (perf != null && p.offset > perfAppliedTo) {
            // once per packet: the event layer reads some twice (a rescan to a full IP, a look past a TNT for a
            // deferred TIP), and perf's MTC arithmetic counts an MTC equal to the last one as a full wrap
            perfAppliedTo = p.offset;
            applyPerf(perf, p);
        }
        TimingError e1;
        TimingError e2;
        switch (p.type) {
            case Pkt.TSC -> {
                e1 = header ? tcal.headerTsc(p.payload) : tcal.updateTsc(p.payload);
                e2 = time.updateTsc(p.payload);
            }
            case Pkt.CBR -> {
                e1 = header ? tcal.headerCbr((int) p.payload) : tcal.updateCbr((int) p.payload);
                e2 = time.updateCbr((int) p.payload);
            }
            case Pkt.TMA -> {
                e1 = tcal.updateTma((int) p.payload, (int) p.payload2);
                e2 = time.updateTma((int) p.payload, (int) p.payload2);
            }
            case Pkt.MTC -> {
                e1 = tcal.updateMtc((int) p.payload);
                e2 = time.updateMtc((int) p.payload);
            }
            case Pkt.CYC -> {
                if (p.small != 0) {
                    // A run of MTC/CYC whose time nobody reads: none of them can fail (Timing#mtcSkipped); of their
                    // state only what a later TMA checks is kept.
                    if ((p.small & 2) != 0) {
                        time.mtcSkipped();
                    }
                    return 0;
                }
                cycles += p.payload;
                e1 = tcal.updateCyc(p.payload);
                e2 = e1 != null && e1 != TimingError.BAD_CONFIG ? null : time.updateCyc(p.payload, tcal.fcr());
            }
            default -> {
                return 0;
            }
        }
        int err = code(e1);
        return err != 0 ? err : code(e2);
    }

    private static int code(TimingError e) {
        if (e == null || e == TimingError.BAD_CONFIG) {
            return 0;
        }
        return switch (e) {
            case BAD_PACKET -> PtError.BAD_PACKET;
            case BAD_CONTEXT -> PtError.BAD_CONTEXT;
            case NO_TIME -> PtError.NO_TIME;
            default -> PtError.INTERNAL;
        };
    }

    /** Core cycles the CYC packets so far counted (0 without CYC). */
    public long cycles() {
        return cycles;
    }

    public boolean hasTsc() {
        return time.haveTsc();
    }

    public long tsc() {
        return time.tsc();
    }

    public int cbr() {
        return time.cbr();
    }

    void copyFrom(TimeTracker o) {
        // Look-ahead (deferred TIPs) never crosses timing packets that matter for the flow; keep ours.
    }

    /** A run of MTC/CYC packets passed over without computing its time held an MTC (see {@link Timing#mtcSkipped}). */
    void mtcSkipped() {
        time.mtcSkipped();
    }
}

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

    public TimeTracker(FlowConfig config) {
        this.timingConfig = new TimingConfig(config.mtcFreq, config.nomFreq, config.cpuid15Eax, config.cpuid15Ebx,
                config.skl168);
        this.time = new Timing(timingConfig);
        this.tcal = new TimeCalibration(timingConfig);
    }

    /** Takes over {@code o}'s state. */
    void seed(TimeTracker o) {
        cycles = o.cycles;
        time.copyFrom(o.time);
        tcal.copyFrom(o.tcal);
    }

    /** True if the two clocks give the same times from here on, whatever packets follow. */
    boolean sameState(TimeTracker o) {
        return cycles == o.cycles && time.sameState(o.time) && tcal.sameState(o.tcal);
    }

    void reset() {
        time.reset();
        tcal.reset();
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

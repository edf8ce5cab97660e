package ptfence.flow;

import ptfence.flow.PacketInput.Pkt;

/**
 * The event layer's clock: the last TSC and what MTC/CYC/CBR say since. Enough to stamp events; the
 * fine-grained estimate per instruction comes from ptfence.timing once it is wired in.
 */
public final class TimeTracker {
    private final FlowConfig config;
    private boolean hasTsc;
    private long tsc;
    private int cbr;

    public TimeTracker(FlowConfig config) {
        this.config = config;
    }

    void reset() {
        hasTsc = false;
        tsc = 0;
        cbr = 0;
    }

    void copyFrom(TimeTracker o) {
        hasTsc = o.hasTsc;
        tsc = o.tsc;
        cbr = o.cbr;
    }

    void resetCalibration() {
        // Calibration is not tracked yet; nothing to drop.
    }

    void apply(Pkt p) {
        switch (p.type) {
            case Pkt.TSC -> {
                hasTsc = true;
                tsc = p.payload;
            }
            case Pkt.CBR -> cbr = (int) p.payload;
            default -> { }
        }
    }

    public boolean hasTsc() {
        return hasTsc;
    }

    public long tsc() {
        return tsc;
    }

    public int cbr() {
        return cbr;
    }

    FlowConfig config() {
        return config;
    }
}

package ptfence.timing;

/**
 * Calibrates CYC packets (core cycles) against TSC/MTC (or the nominal frequency and CBR) to get the
 * fast-counter ratio FCR = TSC ticks per core cycle, shifted left by {@link #FCR_SHIFT} bits. Same
 * arithmetic as libipt's pt_tcal, including the SKL168 workaround. Primitive state only.
 */
public final class TimeCalibration {
    /** FCR values are fixed-point with this many fraction bits. */
    public static final int FCR_SHIFT = 8;

    private final TimingConfig config;

    private long fcr;
    private long minFcr = -1L;
    private long maxFcr;
    private long tsc;
    private long cycTsc;
    private long cycMtc;
    private int ctc;
    private int lostMtc;
    private boolean haveMtc;
    private boolean checkSkl168;

    public TimeCalibration(TimingConfig config) {
        this.config = config;
    }

    /** Forgets the calibration (start, resync, overflow unless kept, CBR change). */
    public void reset() {
        fcr = 0;
        minFcr = -1L;
        maxFcr = 0;
        tsc = 0;
        cycTsc = 0;
        cycMtc = 0;
        ctc = 0;
        lostMtc = 0;
        haveMtc = false;
        checkSkl168 = false;
    }

    /** Takes over {@code o}'s calibration (a PSB segment's decoder starts with the trace's calibration so far). */
    public void copyFrom(TimeCalibration o) {
        fcr = o.fcr;
        minFcr = o.minFcr;
        maxFcr = o.maxFcr;
        tsc = o.tsc;
        cycTsc = o.cycTsc;
        cycMtc = o.cycMtc;
        ctc = o.ctc;
        lostMtc = o.lostMtc;
        haveMtc = o.haveMtc;
        checkSkl168 = o.checkSkl168;
    }

    /** True if every later update gives the same results on this and on {@code o}. */
    public boolean sameState(TimeCalibration o) {
        return fcr == o.fcr && minFcr == o.minFcr && maxFcr == o.maxFcr && tsc == o.tsc && cycTsc == o.cycTsc
                && cycMtc == o.cycMtc && ctc == o.ctc && lostMtc == o.lostMtc && haveMtc == o.haveMtc
                && checkSkl168 == o.checkSkl168;
    }

    /** Whether a ratio is known. */
    public boolean haveFcr() {
        return Long.compareUnsigned(minFcr, maxFcr) <= 0;
    }

    /** The current ratio (fixed point, {@link #FCR_SHIFT} fraction bits); 0 if none ({@link #haveFcr()}). */
    public long fcr() {
        return haveFcr() ? fcr : 0;
    }

    private void setFcr(long value) {
        fcr = value;
        if (Long.compareUnsigned(value, minFcr) < 0) {
            minFcr = value;
        }
        if (Long.compareUnsigned(value, maxFcr) > 0) {
            maxFcr = value;
        }
    }

    public TimingError updatePsb() {
        if (config.skl168()) {
            checkSkl168 = true;
        }
        return null;
    }

    /** A TSC outside PSB+: remembered for the next header TSC, not used for calibration. */
    public TimingError updateTsc(long value) {
        tsc = value;
        cycTsc = 0;
        return null;
    }

    /** A TSC inside PSB+: calibrates from the cycles since the previous TSC unless MTC is available. */
    public TimingError headerTsc(long value) {
        long lastTsc = tsc;
        long cyc = cycTsc;
        long t = value;
        tsc = t;
        cycTsc = 0;
        if (lastTsc == 0 || cyc == 0 || haveMtc) {
            return null;
        }
        if (Long.compareUnsigned(t, lastTsc) < 0) {
            t += 1L << 56;
            if (Long.compareUnsigned(t, lastTsc) < 0) {
                return TimingError.BAD_PACKET;
            }
        }
        long delta = t - lastTsc;
        if ((delta & ~(-1L >>> FCR_SHIFT)) != 0) {
            return TimingError.INTERNAL;
        }
        setFcr(Long.divideUnsigned(delta << FCR_SHIFT, cyc));
        return null;
    }

    /** A CBR outside PSB+ means a frequency change: start over, then use it like a header CBR. */
    public TimingError updateCbr(int ratio) {
        reset();
        return headerCbr(ratio);
    }

    /** A CBR inside PSB+: with the nominal frequency known, the ratio is nominal/CBR. */
    public TimingError headerCbr(int ratio) {
        long p1 = config.nomFreq() & 0xffL;
        if (p1 == 0) {
            return null;
        }
        long r = ratio & 0xffL;
        if (r == 0) {
            return TimingError.BAD_PACKET;
        }
        setFcr(Long.divideUnsigned(p1 << FCR_SHIFT, r));
        return null;
    }

    public TimingError updateTma(int tmaCtc, int tmaFc) {
        return null;
    }

    public TimingError updateMtc(int mtcCtc) {
        int lastCtc = ctc;
        boolean hadMtc = haveMtc;
        long cyc = cycMtc;
        boolean check = checkSkl168;
        checkSkl168 = false;
        int freq = config.mtcFreq();
        int c = (mtcCtc & 0xff) << freq;
        if (!hadMtc) {
            cycMtc = 0;
            ctc = c;
            haveMtc = true;
            return null;
        }
        if (cyc == 0) {
            return null;
        }
        haveMtc = true;
        cycMtc = 0;
        ctc = c;
        lostMtc += 1;
        long delta = Timing.ctcDelta(c, lastCtc, config);
        if (delta < 0) {
            return TimingError.BAD_PACKET;
        }
        if (config.cpuid15Eax() == 0 || config.cpuid15Ebx() == 0) {
            return TimingError.BAD_CONFIG;
        }
        long f = Timing.ctcToFc(delta, config);
        if ((f & ~(-1L >>> FCR_SHIFT)) != 0) {
            return TimingError.INTERNAL;
        }
        long newFcr = Long.divideUnsigned(f << FCR_SHIFT, cyc);
        if (check) {
            // SKL168: CYC packets right before PSB can be dropped; skip this MTC if it looks like it.
            if (Long.compareUnsigned(1L << freq, delta) < 0) {
                return null;
            }
            if (freq < 10 && haveFcr()) {
                long dfc = (fcr * (cyc + 0xf00)) >>> FCR_SHIFT;
                if (Long.compareUnsigned(dfc, f) < 0) {
                    return null;
                }
            }
        }
        setFcr(newFcr);
        lostMtc = 0;
        return null;
    }

    public TimingError updateCyc(long cycles) {
        cycMtc += cycles;
        cycTsc += cycles;
        return null;
    }

    /** An overflow with {@code --keep-tcal-on-ovf}: keep the ratio, drop the partial measurements. */
    public TimingError updateOvf() {
        tsc = 0;
        cycTsc = 0;
        cycMtc = 0;
        ctc = 0;
        haveMtc = false;
        return null;
    }
}

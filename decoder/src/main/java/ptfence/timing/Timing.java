package ptfence.timing;

/**
 * Estimates the TSC at each timing packet from TSC, TMA, MTC and CYC packets, with the same arithmetic
 * as libipt's pt_time (so ptdump's {@code --time} column and the flow decoder's timestamps agree with
 * libipt to the tick). All state is primitive; one instance per decoded stream. Values that are unsigned
 * in the SDM are kept in Java longs/ints and compared and divided as unsigned.
 *
 * <p>Update methods return {@code null} on success or the error libipt would report; on error the state
 * is left as libipt leaves it.
 */
public final class Timing {
    private final TimingConfig config;

    private long tsc;
    private long base;
    private long fc;
    private int ctc;
    private int ctcCyc;
    private int lostMtc;
    private int lostCyc;
    private int cbr;
    private boolean haveTsc;
    private boolean haveCbr;
    private boolean haveTma;
    private boolean haveMtc;

    public Timing(TimingConfig config) {
        this.config = config;
    }

    /** Forgets everything (start of decode, resync). */
    public void reset() {
        tsc = 0;
        base = 0;
        fc = 0;
        ctc = 0;
        ctcCyc = 0;
        lostMtc = 0;
        lostCyc = 0;
        cbr = 0;
        haveTsc = false;
        haveCbr = false;
        haveTma = false;
        haveMtc = false;
    }

    /** Takes over {@code o}'s state (a PSB segment's decoder starts where the trace before it left the clock). */
    public void copyFrom(Timing o) {
        tsc = o.tsc;
        base = o.base;
        fc = o.fc;
        ctc = o.ctc;
        ctcCyc = o.ctcCyc;
        lostMtc = o.lostMtc;
        lostCyc = o.lostCyc;
        cbr = o.cbr;
        haveTsc = o.haveTsc;
        haveCbr = o.haveCbr;
        haveTma = o.haveTma;
        haveMtc = o.haveMtc;
    }

    /** True if every later update gives the same results on this and on {@code o}. */
    public boolean sameState(Timing o) {
        return tsc == o.tsc && base == o.base && fc == o.fc && ctc == o.ctc && ctcCyc == o.ctcCyc && lostMtc == o.lostMtc
                && lostCyc == o.lostCyc && cbr == o.cbr && haveTsc == o.haveTsc && haveCbr == o.haveCbr
                && haveTma == o.haveTma && haveMtc == o.haveMtc;
    }

    /** The current TSC estimate (0 before any TSC); check {@link #haveTsc()}. */
    public long tsc() {
        return tsc;
    }

    /** Whether a TSC packet has been seen, i.e. {@link #tsc()} is wall-clock time. */
    public boolean haveTsc() {
        return haveTsc;
    }

    /** MTC packets whose time could not be used since the last TSC. */
    public int lostMtc() {
        return lostMtc;
    }

    /** CYC packets that could not be used (no calibration) since the last TSC or MTC. */
    public int lostCyc() {
        return lostCyc;
    }

    /** The last core:bus ratio, or 0 if none was seen. */
    public int cbr() {
        return haveCbr ? cbr : 0;
    }

    public TimingError updateTsc(long value) {
        haveTsc = true;
        haveTma = false;
        haveMtc = false;
        tsc = base = value;
        ctc = 0;
        fc = 0;
        lostMtc = 0;
        lostCyc = 0;
        return null;
    }

    public TimingError updateCbr(int ratio) {
        int r = ratio & 0xff;
        if (r == 0) {
            return TimingError.BAD_PACKET;
        }
        haveCbr = true;
        cbr = r;
        return null;
    }

    public TimingError updateTma(int tmaCtc, int tmaFc) {
        if (!haveTsc || haveTma) {
            return TimingError.BAD_CONTEXT;
        }
        if (haveMtc) {
            return TimingError.INTERNAL;
        }
        int mtcHi = config.mtcFreq() + 8;
        int ctcMask = (1 << mtcHi) - 1;
        haveTma = true;
        base -= tmaFc & 0xffffL;
        fc += tmaFc & 0xffffL;
        if (mtcHi <= 16) {
            haveMtc = true;
        }
        ctc = ctcCyc = tmaCtc & ctcMask;
        return null;
    }

    public TimingError updateMtc(int mtcCtc) {
        boolean hadTsc = haveTsc;
        boolean hadTma = haveTma;
        boolean hadMtc = haveMtc;
        if (hadTsc && !hadTma) {
            return null;
        }
        long b = base;
        int lastCtc = ctc;
        int freq = config.mtcFreq();
        int c = (mtcCtc & 0xff) << freq;
        if (fc != 0 || lostCyc != 0 || !hadMtc) {
            ctcCyc = c;
        }
        haveMtc = true;
        fc = 0;
        ctc = c;
        lostCyc = 0;
        if (!hadMtc) {
            if (!hadTma) {
                return null;
            }
            if ((lastCtc & ~0xffff) != 0) {
                return TimingError.INTERNAL;
            }
            int ctcLo = c & 0xffff;
            int ctcHi = c & ~0xffff;
            if (Integer.compareUnsigned(ctcLo, lastCtc) < 0) {
                ctcHi -= 1 << 16;
                ctcHi &= 0xff << freq;
            }
            lastCtc |= ctcHi;
        }
        long delta = ctcDelta(c, lastCtc, config);
        if (delta < 0) {
            lostMtc += 1;
            return TimingError.BAD_PACKET;
        }
        if (config.cpuid15Eax() == 0 || config.cpuid15Ebx() == 0) {
            return TimingError.BAD_CONFIG;
        }
        b += ctcToFc(delta, config);
        tsc = base = b;
        return null;
    }

    /**
     * MTC packets were passed over without computing time (nothing prints it): keep only what
     * {@link #updateMtc} would have left for {@link #updateTma}'s checks. With an MTC period of at most 2^15
     * CTC ticks (IA32_RTIT_CTL.MTCFreq is 4 bits), updateMtc and updateCyc cannot fail: every CTC value they
     * compare stays below 2^(freq+8), so one wrap correction always suffices, and CTC deltas below 2^23 times a
     * 32-bit CPUID ratio stay below 2^56, so no overflow either.
     */
    public void mtcSkipped() {
        if (!haveTsc || haveTma) {
            haveMtc = true;
        }
    }

    /**
     * Applies a CYC packet given the calibration's current fast-counter ratio {@code fcr} (0 if the
     * calibration has none; the CYC is then counted as lost).
     */
    public TimingError updateCyc(long cycles, long fcr) {
        if (fcr == 0) {
            lostCyc += 1;
            return null;
        }
        long cyc = cycles;
        long f = fc;
        if (f == 0 && ctc != ctcCyc) {
            // The CYC spans MTC periods: drop the part that belongs to earlier periods.
            long delta = ctcDelta(ctc, ctcCyc, config);
            if (delta < 0) {
                return TimingError.BAD_PACKET;
            }
            if (config.cpuid15Eax() == 0 || config.cpuid15Ebx() == 0) {
                return TimingError.BAD_CONFIG;
            }
            long oldCyc = Long.divideUnsigned(ctcToFc(delta, config) << TimeCalibration.FCR_SHIFT, fcr);
            if (Long.compareUnsigned(cyc, oldCyc) < 0) {
                cyc = oldCyc;
            }
            cyc -= oldCyc;
        }
        f += (cyc * fcr) >>> TimeCalibration.FCR_SHIFT;
        fc = f;
        tsc = base + f;
        return null;
    }

    /** CTC ticks from {@code last} to {@code now}, correcting one wrap of the MTC range; -1 if impossible. */
    static long ctcDelta(int now, int last, TimingConfig config) {
        int c = now;
        if (Integer.compareUnsigned(c, last) < 0) {
            c += 1 << (config.mtcFreq() + 8);
            if (Integer.compareUnsigned(c, last) < 0) {
                return -1;
            }
        }
        return (c - last) & 0xffffffffL;
    }

    /** CTC ticks to fast-counter (TSC) ticks: ctc * cpuid[0x15].ebx / cpuid[0x15].eax. */
    static long ctcToFc(long ctcTicks, TimingConfig config) {
        return Long.divideUnsigned(ctcTicks * (config.cpuid15Ebx() & 0xffffffffL), config.cpuid15Eax() & 0xffffffffL);
    }
}

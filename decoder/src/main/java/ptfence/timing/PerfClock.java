package ptfence.timing;

/**
 * The trace's time as perf's Intel PT decoder computes it (tools/perf/util/intel-pt-decoder, its timestamp): a TSC
 * packet sets it (one that steps back by less than the slip is held), a TMA anchors the CTC, and each MTC sets it to
 * the anchor plus the whole CTC distance counted since, converted in one step (libipt instead adds each MTC's
 * converted step, so their times part by a tick now and then); one that would step back is ignored. CYC packets
 * move it by cycles at the core:bus ratio's rate between MTCs. Perf script's times are this clock's, so its lines
 * match perf's to the nanosecond.
 */
public final class PerfClock {
    private static final long TSC_SLIP = 0x10000;

    private final int mtcShift;
    private final long ratioN;
    private final long ratioD;
    private final long mult;
    private final double maxNonTurbo;

    private long timestamp;
    private long tscTimestamp;
    private long ctcTimestamp;
    private long ctcDelta;
    private int lastMtc;
    private boolean haveTma;
    private boolean fixupLastMtc;
    private long cycRef;
    private long cycleCount;
    private double cbrCycToTsc;
    private int cbr;
    /** The packet before the one being applied was a CYC; the one being applied is one. */
    private boolean lastWasCyc;
    private boolean thisIsCyc;
    private double calcCycToTsc;
    private boolean haveCalc;
    private boolean lookaheadWanted;

    /**
     * @param mtcShift the MTC period as a power of two of CTC ticks
     * @param ratioN TSC:CTC numerator (CPUID 0x15 EBX)
     * @param ratioD denominator (CPUID 0x15 EAX); 0: MTC carries no time
     * @param maxNonTurbo the maximum non-turbo ratio (CYC's cycles to TSC ticks is this over the CBR)
     */
    public PerfClock(int mtcShift, long ratioN, long ratioD, int maxNonTurbo) {
        this.mtcShift = mtcShift;
        this.ratioN = ratioN & 0xffffffffL;
        this.ratioD = ratioN == 0 ? 0 : ratioD & 0xffffffffL;
        this.mult = this.ratioD != 0 && this.ratioN % this.ratioD == 0 ? this.ratioN / this.ratioD : 0;
        this.maxNonTurbo = maxNonTurbo;
    }

    public void copyFrom(PerfClock o) {
        timestamp = o.timestamp;
        tscTimestamp = o.tscTimestamp;
        ctcTimestamp = o.ctcTimestamp;
        ctcDelta = o.ctcDelta;
        lastMtc = o.lastMtc;
        haveTma = o.haveTma;
        fixupLastMtc = o.fixupLastMtc;
        cycRef = o.cycRef;
        cycleCount = o.cycleCount;
        cbrCycToTsc = o.cbrCycToTsc;
        cbr = o.cbr;
        lastWasCyc = o.lastWasCyc;
        thisIsCyc = o.thisIsCyc;
        calcCycToTsc = o.calcCycToTsc;
        haveCalc = o.haveCalc;
    }

    /** The time now (TSC ticks), or -1 before any TSC. */
    public long tsc() {
        return timestamp == 0 ? -1 : timestamp;
    }

    private static long multdiv(long t, long n, long d) {
        if (d == 0) {
            return 0;
        }
        return Long.divideUnsigned(t, d) * n + Long.divideUnsigned(Long.remainderUnsigned(t, d) * n, d);
    }

    public void tsc(long payload) {
        haveTma = false;
        long t;
        if (timestamp == 0) {
            t = payload;
            tscTimestamp = t;
        } else {
            t = payload | (timestamp & (0xffL << 56));
            tscTimestamp = t;
            if (Long.compareUnsigned(t, timestamp) < 0 && timestamp - t < TSC_SLIP) {
                t = timestamp; // a TSC that slipped past an MTC: held
            }
            if (Long.compareUnsigned(t, timestamp) < 0) {
                t += 1L << 56;
                tscTimestamp = t;
            }
        }
        timestamp = t;
        if (lastWasCyc) {
            cycRef = timestamp;
            cycleCount = 0;
            haveCalc = false; // perf computes a new rate only after an MTC
        }
    }

    public void tma(int ctc, int fc) {
        if (ratioD == 0) {
            return;
        }
        int ctcRem = ctc & ((1 << mtcShift) - 1);
        lastMtc = (ctc >>> mtcShift) & 0xff;
        ctcTimestamp = tscTimestamp - (fc & 0xffffL);
        ctcTimestamp -= mult != 0 ? ctcRem * mult : multdiv(ctcRem, ratioN, ratioD);
        ctcDelta = 0;
        haveTma = true;
        fixupLastMtc = true;
    }

    public void mtc(int payload) {
        boolean afterCyc = lastWasCyc;
        if (!haveTma) {
            return;
        }
        int mtc = payload & 0xff;
        if (mtcShift > 8 && fixupLastMtc) {
            fixupLastMtc = false;
            int firstMissing = 1 << (16 - mtcShift);
            int mask = ~(firstMissing - 1);
            lastMtc |= mtc & mask;
            if (lastMtc >= mtc) {
                lastMtc -= firstMissing;
                lastMtc &= 0xff;
            }
        }
        int delta = mtc > lastMtc ? mtc - lastMtc : mtc + 256 - lastMtc;
        ctcDelta += (long) delta << mtcShift;
        long t = ctcTimestamp + (mult != 0 ? ctcDelta * mult : multdiv(ctcDelta, ratioN, ratioD));
        if (Long.compareUnsigned(t, timestamp) >= 0) {
            timestamp = t;
        }
        lastMtc = mtc;
        if (afterCyc) {
            cycRef = timestamp;
            cycleCount = 0;
            haveCalc = false;
            lookaheadWanted = true; // perf measures cycles to TSC up to the next MTC
        }
    }

    public void cbr(int ratio) {
        int r = ratio & 0xff;
        if (r == 0 || r == cbr) {
            return;
        }
        cbr = r;
        cbrCycToTsc = maxNonTurbo / r;
        cycRef = timestamp; // cycles count from here at the new rate (perf 6.1.y's fix for a standalone CBR)
        cycleCount = 0;
    }

    public void cyc(long cycles) {
        cycleCount += cycles;
        if (cycRef == 0 || !haveCalc && cbr == 0) {
            return;
        }
        long t = (long) (cycRef + cycleCount * (haveCalc ? calcCycToTsc : cbrCycToTsc));
        if (Long.compareUnsigned(t, timestamp) >= 0) {
            timestamp = t;
        }
    }

    /** Every packet but PAD, before it is applied: perf's "last packet was CYC" looks one packet back. */
    public void packet(boolean cyc) {
        lastWasCyc = thisIsCyc;
        thisIsCyc = cyc;
    }

    /** An MTC after a CYC asks for the packets ahead: perf measures the cycles-to-TSC rate up to the next MTC. */
    public Lookahead lookahead() {
        if (!lookaheadWanted) {
            return null;
        }
        lookaheadWanted = false;
        return new Lookahead();
    }

    /**
     * perf's look-ahead for the rate of cycles to TSC ticks (intel_pt_calc_cyc_cb): packets after the MTC are fed in
     * order (PAD left out) until one of the methods returns true (stop).
     */
    public final class Lookahead {
        private long cycles;
        private int lcbr;
        private double lcbrRate;
        private int llastMtc = lastMtc;
        private long lctcDelta = ctcDelta;
        private long ltimestamp = timestamp;
        private boolean lfixup = fixupLastMtc;
        private boolean prevCyc = true; // the packet before the first one ahead is the MTC's own CYC... as perf sets it

        /** A packet that does not stop the look-ahead and carries nothing for it (TNT, TIP, FUP, PSB, MODE...). */
        public boolean skip() {
            prevCyc = false;
            return false;
        }

        /** A packet that stops it (TIP.PGD, TRACESTOP, power events, OVF, TSC, TMA...). */
        public boolean stop() {
            return true;
        }

        public boolean cyc(long c) {
            cycles += c;
            prevCyc = true;
            return false;
        }

        public boolean cbr(int ratio) {
            prevCyc = false;
            int r = ratio & 0xff;
            if (lcbr != 0 && lcbr != r) {
                return true;
            }
            lcbr = r;
            lcbrRate = r == 0 ? 0 : maxNonTurbo / r;
            return false;
        }

        public boolean mtc(int payload) {
            boolean afterCyc = prevCyc;
            prevCyc = false;
            if (!haveTma) {
                return false;
            }
            int mtc = payload & 0xff;
            if (mtcShift > 8 && lfixup) {
                lfixup = false;
                int firstMissing = 1 << (16 - mtcShift);
                llastMtc |= mtc & ~(firstMissing - 1);
                if (llastMtc >= mtc) {
                    llastMtc -= firstMissing;
                    llastMtc &= 0xff;
                }
            }
            int delta = mtc > llastMtc ? mtc - llastMtc : mtc + 256 - llastMtc;
            lctcDelta += (long) delta << mtcShift;
            llastMtc = mtc;
            long t = ctcTimestamp + (mult != 0 ? lctcDelta * mult : multdiv(lctcDelta, ratioN, ratioD));
            if (Long.compareUnsigned(t, ltimestamp) < 0) {
                return true;
            }
            if (!afterCyc) {
                ltimestamp = t;
                return false;
            }
            if (lcbr == 0 && cbr != 0) {
                lcbr = cbr;
                lcbrRate = cbrCycToTsc;
            }
            if (cycles == 0) {
                return true;
            }
            double rate = (double) (t - timestamp) / cycles;
            if (lcbr != 0 && rate > lcbrRate && rate / lcbrRate > 1.25) {
                return true;
            }
            calcCycToTsc = rate;
            haveCalc = true;
            return true;
        }
    }

    /** TRACESTOP, a bad packet, an overflow: the CTC anchor is lost. */
    public void lose() {
        haveTma = false;
    }
}

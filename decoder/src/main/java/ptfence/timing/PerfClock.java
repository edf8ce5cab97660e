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

    // perf's cycle count for IPC (tot_cyc_cnt): CYC packets' cycles while tracing is on or, without CYC, the time
    // since tracing went on at the core:bus ratio; a sample takes it when perf's decoder returns between packets
    private long totCyc;
    private long baseCyc;
    private long cycCntTimestamp;
    private double tscToCyc;
    private boolean haveCyc;
    private boolean sampleCyc;
    private boolean pge;
    private boolean inPsb;
    /** The last flow packet was a TIP.PGD (or TRACESTOP) that turned the count off: a walk failing there undoes it. */
    private boolean offByPgd;
    private long sampleTotCyc;
    /** Times the count moved (sampleCyc set); and what a conditional branch's state would take, with its mark. */
    private long cycSets;
    private long condTot;
    private boolean condSample;
    private long condSets;
    /** What perf's state at a full IP found after an error took there (the packet is behind the clock now). */
    private long ipTot;
    private boolean ipSample;
    private long ipSets;

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

    /** A clock with this one's parameters and state. */
    public PerfClock copy() {
        PerfClock c = new PerfClock(mtcShift, ratioN, ratioD, (int) maxNonTurbo);
        c.copyFrom(this);
        return c;
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
        totCyc = o.totCyc;
        baseCyc = o.baseCyc;
        cycCntTimestamp = o.cycCntTimestamp;
        tscToCyc = o.tscToCyc;
        haveCyc = o.haveCyc;
        sampleCyc = o.sampleCyc;
        pge = o.pge;
        inPsb = o.inPsb;
        offByPgd = o.offByPgd;
        sampleTotCyc = o.sampleTotCyc;
        cycSets = o.cycSets;
        noReference = o.noReference;
    }

    /**
     * Whether this clock gives the times {@code o} gives from a PSB on (a PSB segment's guessed start against the
     * sequential decode's, ptfence.flow.SeamState): the state its time is made of, the PSB+'s TSC, TMA and CBR restating
     * only part of it (the CYC reference and rate carry over). The cycle counts (IPC) are left out, as are the flags
     * of the packet before, which the PSB packet itself sets.
     */
    public boolean sameTime(PerfClock o) {
        return timestamp == o.timestamp && tscTimestamp == o.tscTimestamp && ctcTimestamp == o.ctcTimestamp
                && ctcDelta == o.ctcDelta && lastMtc == o.lastMtc && haveTma == o.haveTma
                && fixupLastMtc == o.fixupLastMtc && cycRef == o.cycRef && cycleCount == o.cycleCount
                && Double.compare(cbrCycToTsc, o.cbrCycToTsc) == 0 && cbr == o.cbr
                && Double.compare(calcCycToTsc, o.calcCycToTsc) == 0 && haveCalc == o.haveCalc
                && noReference == o.noReference;
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
        if (timestamp == 0 && noReference) {
            if (lastWasCyc) {
                cycRef = 0;
                cycleCount = 0;
                haveCalc = false;
            }
            return;
        }
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

    /** The last TSC packet's time (perf's tsc_timestamp). */
    public long lastTsc() {
        return tscTimestamp;
    }

    /**
     * perf's fast forward moved its decoder to a PSB within the buffer it reads when its clock was {@code atJump}
     * (intel_pt_fast_forward, intel_pt_reposition): the packets between are never read, so this clock becomes that
     * one, cycle reference and cycles counted since included (a CYC after the PSB+ counts on from them:
     * intel_pt_calc_cyc_timestamp), with its time zeroed and no buffer reference time left: a TSC is ignored until a
     * CYC or MTC sets the time again (intel_pt_calc_tsc_timestamp widens one by the one or the other), and a TMA
     * counts from the last TSC taken before the jump.
     */
    public void repositionedFrom(PerfClock atJump) {
        copyFrom(atJump);
        timestamp = 0;
        haveTma = false;
        noReference = true;
    }

    /** The buffer's reference time is used up and the time was zeroed (perf's decoder then ignores a TSC). */
    private boolean noReference;

    public void tma(int ctc, int fc) {
        if (ratioD == 0) {
            return;
        }
        if (pge && !inPsb) {
            cycCountFromNow();
        } else {
            cycCountByTime();
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
        cycCountByTime();
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
        tscToCyc = r / maxNonTurbo;
        if (pge) {
            cycCountFromNow();
        }
        cycRef = timestamp; // cycles count from here at the new rate (perf 6.1.y's fix for a standalone CBR)
        cycleCount = 0;
    }

    public void cyc(long cycles) {
        haveCyc = true;
        if (pge) {
            totCyc += cycles;
        }
        sampleCyc = true;
        cycSets++;
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

    /**
     * Packets that turn tracing on or off for perf's cycle count (its decoder's pge): TIP.PGE, TIP.PGD, TRACESTOP, a
     * PSB+ (whose FUP says tracing is on).
     */
    public void flowPacket(int kind) {
        offByPgd = kind == FLOW_PGD && pge;
        switch (kind) {
            case FLOW_PGE -> {
                pge = true;
                cycCountFromNow();
            }
            case FLOW_PGD -> pge = false;
            case FLOW_PSB -> inPsb = true;
            case FLOW_PSBEND -> inPsb = false;
            case FLOW_FUP -> {
                if (inPsb) {
                    pge = true;
                }
            }
            default -> { }
        }
    }

    /**
     * perf's walk to the packet in hand failed (no code): its decoder takes the error before it handles that packet,
     * so a TIP.PGD it was walking to leaves tracing on for the count (MTCs in the scan after move it) until the scan
     * meets a packet that turns it off.
     */
    public void walkFailed() {
        if (offByPgd) {
            pge = true;
            offByPgd = false;
        }
    }

    public static final int FLOW_PGE = 1, FLOW_PGD = 2, FLOW_PSB = 3, FLOW_PSBEND = 4, FLOW_FUP = 5;

    /** Without CYC, cycles count from now on at the core:bus ratio (perf's intel_pt_mtc_cyc_cnt_pge). */
    private void cycCountFromNow() {
        if (haveCyc) {
            return;
        }
        cycCntTimestamp = timestamp;
        baseCyc = totCyc;
    }

    /** Without CYC, an MTC or TMA moves the count by the time since tracing went on (intel_pt_mtc_cyc_cnt_upd). */
    private void cycCountByTime() {
        if (haveCyc) {
            return;
        }
        sampleCyc = true;
        cycSets++;
        if (!pge || Long.compareUnsigned(timestamp, cycCntTimestamp) <= 0) {
            return;
        }
        // all in double as perf's C (u64 * double + u64), truncated once: adding the base after truncating loses the
        // last cycle where the product's fraction rounds up at the sum's magnitude
        long c = toU64(unsigned(timestamp - cycCntTimestamp) * tscToCyc + unsigned(baseCyc));
        if (Long.compareUnsigned(c, totCyc) > 0) {
            totCyc = c;
        }
    }

    private static double unsigned(long v) {
        return v >= 0 ? v : (v >>> 1) * 2.0 + (v & 1);
    }

    private static long toU64(double d) {
        return d >= 0x1p63 ? (long) (d - 0x1p63) + Long.MIN_VALUE : (long) d;
    }

    /**
     * perf's decoder returns a state between packets (its sample time moves): the state takes the cycle count if it
     * moved since the last such state. Returns whether this state carries an IPC (perf's INTEL_PT_SAMPLE_IPC: with
     * CYC only the state that took a new count; without, every one).
     */
    public boolean cycSampleTime() {
        boolean took = false;
        if (sampleCyc) {
            sampleTotCyc = totCyc;
            sampleCyc = false;
            took = true;
        }
        return took || !haveCyc;
    }

    /** A state perf returns while walking to a packet: an IPC only without CYC, with the count last taken. */
    public boolean cycState() {
        return !haveCyc;
    }

    /** A decode error: perf's state takes the count as it is, without IPC. */
    public void cycError() {
        sampleTotCyc = totCyc;
    }

    /**
     * A conditional branch whose state perf returns only if it is taken (or sampled), known later, when packets
     * after it may have been read: what its state would take now is kept for {@link #condTaken}/{@link #condNotTaken}.
     */
    public void condState() {
        condTot = totCyc;
        condSample = sampleCyc;
        condSets = cycSets;
    }

    /** The branch was taken: its state takes the count it had then; returns whether it carries an IPC. */
    public boolean condTaken() {
        return stateTaken(condTot, condSample, condSets);
    }

    /**
     * A state perf returned at a point behind the clock now, whose count then was {@code tot} ({@code sample}: moved
     * since the state before, after {@code sets} moves): it takes that count, and a count moved since is the next
     * state's. Returns whether it carries an IPC, as {@link #cycSampleTime}.
     */
    private boolean stateTaken(long tot, boolean sample, long sets) {
        if (sample) {
            sampleTotCyc = tot;
            if (cycSets == sets) {
                sampleCyc = false;
            }
        }
        return sample || !haveCyc;
    }

    /** Not taken, so no state: perf drops the moved count (a later one counts again). */
    public void condNotTaken() {
        if (condSample && cycSets == condSets) {
            sampleCyc = false;
        }
    }

    /**
     * The clock as it stood at the full IP perf's scan after an error found ({@code there}: this clock carried up to
     * that packet). perf returns its trace begin state at that packet; ptdecode makes it only once the walk from it
     * fails, when later packets (an MTC) may have moved the count: {@link #stateAtIp} takes what perf's state took.
     */
    public void markIp(PerfClock there) {
        ipTot = there.totCyc;
        ipSample = there.sampleCyc;
        ipSets = there.cycSets;
    }

    /**
     * The trace begin state at the full IP {@link #markIp} saw: it takes the count it had there, and a count moved
     * since is the next state's; returns whether it carries an IPC, as {@link #cycSampleTime}.
     */
    public boolean stateAtIp() {
        return stateTaken(ipTot, ipSample, ipSets);
    }

    /** The cycle count the last state took (perf's state tot_cyc_cnt). */
    public long sampleCycles() {
        return sampleTotCyc;
    }

    /** TRACESTOP, a bad packet, an overflow: the CTC anchor is lost. */
    public void lose() {
        haveTma = false;
    }
}

package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The intel_pt PERF_RECORD_AUXTRACE_INFO private words (tools/perf/arch/x86/util/intel-pt.c): time conversion
 * from the perf mmap page, the config bits perf parsed from the PMU's format files, and the address filter.
 * Words a recording's perf version did not write read as 0; {@code capEventTrace} is -1 when absent.
 */
public record IntelPtInfo(long pmuType, long timeShift, long timeMult, long timeZero, boolean capUserTimeZero,
        long tscBit, long noretcompBit, long haveSchedSwitch, boolean snapshotMode, boolean perCpuMmaps, long mtcBit,
        long mtcFreqBits, long tscCtcRatioN, long tscCtcRatioD, long cycBit, long maxNonTurboRatio, String filter,
        long capEventTrace) {

    /**
     * A recording without intel_pt (the samples of its other events alone): a pmu type no event has, and a tsc bit
     * with a user time zero so that no rule about the trace's time makes the events' own samples timeless.
     */
    public static final IntelPtInfo NONE = new IntelPtInfo(-1, 0, 1, 0, true, 1, 0, 0, false, true, 0, 0, 0, 0, 0, 0,
            "", -1);

    /** INTEL_PT_AUXTRACE_PRIV_MAX: the fixed words before the filter string. */
    public static final int FIXED_WORDS = 17;

    /** Decodes the info; throws {@link BadPerfData} if it is not intel_pt or the filter runs past the record. */
    public static IntelPtInfo of(PerfRecord.AuxtraceInfo info) {
        if (info.auxType() != PerfRecord.AuxtraceInfo.TYPE_INTEL_PT) {
            throw new BadPerfData("AUXTRACE_INFO of type " + info.auxType() + ", not intel_pt (1)");
        }
        List<Long> p = info.priv();
        long[] w = new long[FIXED_WORDS];
        for (int i = 0; i < Math.min(FIXED_WORDS, p.size()); i++) {
            w[i] = p.get(i);
        }
        String filter = "";
        long capEventTrace = -1;
        int next = FIXED_WORDS;
        long len = w[16];
        if (p.size() > FIXED_WORDS && len > 0) {
            long words = (len + 1 + 7) / 8;
            if (len > (long) (p.size() - FIXED_WORDS) * 8) {
                throw new BadPerfData("intel_pt filter string of " + len + " bytes runs past AUXTRACE_INFO");
            }
            ByteBuffer b = ByteBuffer.allocate((int) words * 8).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < words && next + i < p.size(); i++) {
                b.putLong(p.get(next + i));
            }
            byte[] s = new byte[(int) len];
            b.flip();
            b.get(s);
            int n = 0;
            while (n < s.length && s[n] != 0) {
                n++;
            }
            filter = new String(s, 0, n, StandardCharsets.UTF_8);
            next += (int) words;
        }
        if (p.size() > next) {
            capEventTrace = p.get(next);
        }
        return new IntelPtInfo(w[0], w[1], w[2], w[3], w[4] != 0, w[5], w[6], w[7], w[8] != 0, w[9] != 0, w[10],
                w[11], w[12], w[13], w[14], w[15], filter, capEventTrace);
    }

    /** The AUXTRACE_INFO record perf would write for this info. */
    public PerfRecord.AuxtraceInfo toRecord() {
        List<Long> p = new ArrayList<>();
        p.add(pmuType);
        p.add(timeShift);
        p.add(timeMult);
        p.add(timeZero);
        p.add(capUserTimeZero ? 1L : 0L);
        p.add(tscBit);
        p.add(noretcompBit);
        p.add(haveSchedSwitch);
        p.add(snapshotMode ? 1L : 0L);
        p.add(perCpuMmaps ? 1L : 0L);
        p.add(mtcBit);
        p.add(mtcFreqBits);
        p.add(tscCtcRatioN);
        p.add(tscCtcRatioD);
        p.add(cycBit);
        p.add(maxNonTurboRatio);
        byte[] f = filter.getBytes(StandardCharsets.UTF_8);
        p.add((long) f.length);
        if (f.length > 0) {
            int words = (f.length + 1 + 7) / 8;
            ByteBuffer b = ByteBuffer.allocate(words * 8).order(ByteOrder.LITTLE_ENDIAN);
            b.put(f).clear();
            for (int i = 0; i < words; i++) {
                p.add(b.getLong(i * 8));
            }
        }
        if (capEventTrace != -1) {
            p.add(capEventTrace);
        }
        return new PerfRecord.AuxtraceInfo(0, PerfRecord.AuxtraceInfo.TYPE_INTEL_PT, 0, p);
    }

    /** perf time (ns) of a TSC value, as perf's tsc_to_perf_time computes it. */
    public long tscToPerfTime(long tsc) {
        if (timeShift <= 0 || timeShift >= 64) {
            return timeZero + tsc * timeMult;
        }
        long quot = tsc >>> timeShift;
        long rem = tsc & ((1L << timeShift) - 1);
        return timeZero + quot * timeMult + ((rem * timeMult) >>> timeShift);
    }

    /** The TSC value of a perf time (ns), as perf's perf_time_to_tsc computes it; times before time zero give 0. */
    public long perfTimeToTsc(long ns) {
        if (ns == Long.MAX_VALUE || ns == Long.MIN_VALUE) {
            return ns;
        }
        long t = ns - timeZero;
        if (t < 0) {
            return t < -(1L << 62) ? Long.MIN_VALUE : 0;
        }
        if (timeShift <= 0 || timeShift >= 64) {
            return timeMult == 0 ? t : t / timeMult;
        }
        long quot = t / timeMult;
        long rem = t % timeMult;
        return (quot << timeShift) + (rem << timeShift) / timeMult;
    }
}

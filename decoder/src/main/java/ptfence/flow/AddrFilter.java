package ptfence.flow;

/**
 * The address ranges of IA32_RTIT_CTL.ADDRn_CFG / IA32_RTIT_ADDRn_A/B in effect when the trace was recorded (ptxed's
 * --filter:addr<n>_*): 1 is a FilterEn range (trace only inside), 2 a TraceStop range. The decoder needs them for
 * erratum SKL014 (a TIP.PGD without IP for a direct branch that left the filter).
 */
public final class AddrFilter {
    /** Address ranges the hardware has (ptxed accepts four). */
    public static final int RANGES = 4;
    private static final int FILTER_EN = 1;
    private static final int TRACE_STOP = 2;

    private final int[] cfg = new int[RANGES];
    private final long[] a = new long[RANGES];
    private final long[] b = new long[RANGES];

    public void set(int n, int config, long from, long to) {
        cfg[n] = config;
        a[n] = from;
        b[n] = to;
    }

    /** True if any range is configured (else the filter, and SKL014, do not apply). */
    public boolean configured() {
        for (int c : cfg) {
            if (c != 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * True if tracing is on at {@code addr}: not in a TraceStop range, and in a FilterEn range if there is any
     * (both ends inclusive).
     */
    public boolean traces(long addr) {
        boolean anyFilter = false;
        boolean inFilter = false;
        for (int n = 0; n < RANGES; n++) {
            boolean inside = Long.compareUnsigned(addr, a[n]) >= 0 && Long.compareUnsigned(addr, b[n]) <= 0;
            if (cfg[n] == TRACE_STOP && inside) {
                return false;
            }
            if (cfg[n] == FILTER_EN) {
                anyFilter = true;
                inFilter |= inside;
            }
        }
        return !anyFilter || inFilter;
    }
}

package ptfence.script;

/**
 * perf script's time column: {@code %5lu.%09llu: } with --ns, else {@code %12s: } of seconds with six decimals
 * (microseconds, truncated); --reltime counts from the first line printed, --deltatime from the one before.
 */
public final class PerfTime implements ScriptMerge.TimeField {
    private final boolean ns;
    private final boolean reltime;
    private final boolean deltatime;
    private long initial;
    private long previous;

    public PerfTime(boolean ns, boolean reltime, boolean deltatime) {
        this.ns = ns;
        this.reltime = reltime;
        this.deltatime = deltatime;
    }

    @Override
    public void write(LineBytes out, long time) {
        format(out, shown(time), ns);
        out.ch(':').ch(' ');
    }

    /** The time a printed line shows for perf time {@code time}: as it is, from the first line or the one before. */
    public long shown(long time) {
        if (reltime) {
            if (initial == 0) {
                initial = time;
            }
            return time - initial;
        }
        if (deltatime) {
            long t = previous != 0 ? time - previous : 0;
            previous = time;
            return t;
        }
        return time;
    }

    /** The seconds without the colon: "969388.448429" (padded to 12) or "969388.448429572" (seconds padded to 5). */
    public static void format(LineBytes out, long t, boolean ns) {
        long secs = Long.divideUnsigned(t, 1_000_000_000L);
        long nsecs = t - secs * 1_000_000_000L;
        if (ns) {
            out.sdec(secs, 5);
            out.ch('.').decZero(nsecs, 9);
            return;
        }
        long usecs = nsecs / 1000;
        int digits = 1;
        for (long p = 10; digits < 19 && Long.compareUnsigned(secs, p) >= 0; p *= 10) {
            digits++;
        }
        out.spaces(12 - (digits + 7));
        out.dec(secs).ch('.').decZero(usecs, 6);
    }
}

package ptfence.script;

import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.SampleType;

/**
 * perf's order among CPUs' samples of equal time. perf decodes its CPUs' queues from a heap keyed by each queue's time
 * (intel_pt_process_queues): it pops the earliest and lets it run while its time is below the next queue's time + 1
 * and below the time of the record being delivered; a queue that stops goes back into the heap behind those already
 * there with its time. Every record with a time is such a limit (intel_pt_process_event), shown or not. So at equal
 * times the running CPU goes on, unless a record's time stopped it since it last started; then the CPU that stopped
 * first goes first. The one home of this rule for the sample views' {@link ScriptMerge} and the call views' merge.
 */
public final class QueueOrder {
    private final long[] limits;
    private int nextLimit;
    /** When each source last stopped (sources not yet run: in their order, before any stop). */
    private final long[] stoppedAt;
    private long stops;
    private int running = -1;
    private boolean stopped;

    /** {@code sources} CPUs' queues; {@code limits}: the times of the recording's records (ascending, 0 for none). */
    public QueueOrder(int sources, long[] limits) {
        this.limits = limits;
        this.stoppedAt = new long[sources];
        for (int i = 0; i < sources; i++) {
            stoppedAt[i] = i - (long) sources;
        }
    }

    /** The time perf's queues are run up to before record {@code r} is delivered (0: none, it has no time). */
    public static long limitOf(PerfRecord r) {
        long t;
        if (r instanceof PerfRecord.Sample s) {
            t = (s.sampleType() & SampleType.TIME) != 0 ? s.time() : 0;
        } else {
            t = r.sampleId().has(SampleType.TIME) ? r.sampleId().time() : 0;
        }
        return t == -1 ? 0 : t;
    }

    /**
     * The earliest line waiting is at perf time {@code t}: every record before or at it has stopped the running CPU.
     * Returns whether that changed the order of ties (the choice must then be made again).
     */
    public boolean reach(long t) {
        if (t < 0 || nextLimit == limits.length || limits[nextLimit] > t) {
            return false;
        }
        while (nextLimit < limits.length && limits[nextLimit] <= t) {
            nextLimit++;
        }
        return stop();
    }

    /** At equal times, whether source {@code i}'s line goes before source {@code j}'s. */
    public boolean before(int i, int j) {
        if (!stopped && running == i) {
            return true;
        }
        if (!stopped && running == j) {
            return false;
        }
        return stoppedAt[i] < stoppedAt[j];
    }

    /** Source {@code i}'s line was taken. */
    public void taken(int i) {
        if (i != running || stopped) {
            stop();
            running = i;
            stopped = false;
        }
    }

    private boolean stop() {
        if (running < 0 || stopped) {
            return false;
        }
        stoppedAt[running] = ++stops;
        stopped = true;
        return true;
    }
}

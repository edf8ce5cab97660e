package ptfence.sideband;

/**
 * Which task runs on one CPU as its trace moves on in time: pid, tid and comm from the sideband's switch, comm and
 * fork records, looked up again only when the time leaves the span of the current task (one CPU's trace is read in
 * time order). A per-thread trace (perf record --per-thread) has one fixed thread.
 */
public final class TaskCursor {
    private final Sideband sideband;
    private final int cpu;
    private final int fixedTid;
    private long from = Long.MAX_VALUE;
    private long to = Long.MIN_VALUE;
    /** The current task's run on the CPU: from its switch in to the next switch (MAX_VALUE: none). */
    private long runFrom = Long.MIN_VALUE;
    private long runTo = Long.MAX_VALUE;
    private int pid = -1;
    private int tid = -1;
    private String comm;
    /** The one task of an untimed trace's CPU, when its timeline has only one (else unknown). */
    private final Sideband.Task only;

    /** @param fixedTid the traced thread of a per-thread trace, else -1 */
    public TaskCursor(Sideband sideband, int cpu, int fixedTid) {
        this.sideband = sideband;
        this.cpu = cpu;
        this.fixedTid = fixedTid;
        this.only = sideband.onlyTask(cpu);
    }

    /** Moves to perf time {@code time} (-1: unknown). */
    public void at(long time) {
        if (time >= from && time < to) {
            return;
        }
        if (fixedTid >= 0) {
            tid = fixedTid;
            pid = sideband.pidOf(fixedTid);
            from = Long.MIN_VALUE;
            to = Long.MAX_VALUE;
        } else if (time < 0) {
            // no time, no switch to follow: only a CPU that ran one task all along can say which
            pid = only == null ? -1 : only.pid();
            tid = only == null ? -1 : only.tid();
            from = -1;
            to = 0;
        } else {
            Sideband.Task t = sideband.taskAt(cpu, time);
            Sideband.Task next = sideband.taskAfter(cpu, time);
            pid = t == null ? -1 : t.pid();
            tid = t == null ? -1 : t.tid();
            from = t == null ? Long.MIN_VALUE : t.time();
            to = next == null ? Long.MAX_VALUE : next.time();
        }
        runFrom = from;
        runTo = to;
        comm = tid < 0 ? null : sideband.commAt(tid, time);
        if (tid >= 0 && time >= 0) {
            to = Math.min(to, sideband.nextCommChange(tid, time)); // renamed (exec) while running: look again then
        }
    }

    /** When the current task's run on the CPU began (its switch in; MIN_VALUE where the sideband does not say). */
    public long runFrom() {
        return runFrom;
    }

    /** When the current task's run on the CPU ends (the next switch; MAX_VALUE: none recorded). */
    public long runTo() {
        return runTo;
    }

    public int pid() {
        return pid;
    }

    public int tid() {
        return tid;
    }

    /** The thread's name, or null when no record names it. */
    public String comm() {
        return comm;
    }
}

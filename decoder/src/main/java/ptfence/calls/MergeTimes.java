package ptfence.calls;

import java.util.function.LongConsumer;

/**
 * The times one CPU's flow tells a merge by time when only some of its items go there (perf's call views sample
 * calls and returns, not every branch). The merge takes the earliest item of any CPU, and at equal times lets the CPU
 * it took last go on; so an item left out still orders the others by where a CPU's run of equal times ends. Only
 * that is told: a left-out time once per run of equal times, and not at all next to an item of the same time (a CPU's
 * items of one time are taken one after another, so such a time changes nothing).
 */
public final class MergeTimes {
    private final LongConsumer out;
    private boolean pending;
    private long pendingTime;
    private long last = Long.MIN_VALUE;

    /** @param out takes a time to tell the merge (as an item with nothing to show) */
    public MergeTimes(LongConsumer out) {
        this.out = out;
    }

    /** An item of perf time {@code t} is about to go to the merge. */
    public void item(long t) {
        if (pending && pendingTime != t) {
            out.accept(pendingTime);
        }
        pending = false;
        last = t;
    }

    /** An item of perf time {@code t} is left out. */
    public void left(long t) {
        if (pending) {
            if (t == pendingTime) {
                return;
            }
            out.accept(pendingTime);
            last = pendingTime;
            pending = false;
        }
        if (t != last) {
            pending = true;
            pendingTime = t;
        }
    }

    /**
     * The left-out time not yet told (Long.MIN_VALUE: none). A PSB segment's seam compares it (none expected there):
     * whether and when it is told depends on what comes next, the same on both sides of the seam only for the same time.
     */
    public long pending() {
        return pending ? pendingTime : Long.MIN_VALUE;
    }

    /** The time last told or of the last item (a left-out time equal to it is not told). */
    public long last() {
        return last;
    }

    /** The flow ends (or stops for a while): the time not yet told is told. */
    public void flush() {
        if (pending) {
            out.accept(pendingTime);
            last = pendingTime;
            pending = false;
        }
    }
}

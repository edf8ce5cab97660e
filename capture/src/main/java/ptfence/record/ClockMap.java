package ptfence.record;

import java.util.function.LongUnaryOperator;

/**
 * Converts CLOCK_MONOTONIC ns — the clock of the fence's images (bpf_ktime_get_ns) and of {@link System#nanoTime} —
 * into the recording's perf clock ns (perf_clock, i.e. local_clock, the clock PT's TSC converts to), from paired
 * observations: a perf timestamp known to lie between two CLOCK_MONOTONIC readings.
 * <p>
 * Each pair gives the offset {@code perf - monotonic} at the middle of its bracket, uncertain by half the bracket's
 * width. Times between two pairs take the offset interpolated linearly (the two clocks drift apart by the NTP
 * slew and the sched_clock calibration error, a few ppm); times before the first pair take the first offset, times
 * after the last the last offset. Pairs must come in increasing CLOCK_MONOTONIC order; the oldest are dropped once
 * {@code capacity} are held (the fence's times are converted within a second of the event, so only recent pairs
 * matter). Thread-safe: the loop adds pairs while the fence's consumer converts.
 */
public final class ClockMap implements LongUnaryOperator {
    /**
     * One observation: a record stamped {@code perf} by the kernel while CLOCK_MONOTONIC went from {@code monoBefore}
     * to {@code monoAfter}.
     */
    public record Pair(long monoBefore, long monoAfter, long perf) {
        public Pair {
            if (monoAfter < monoBefore) {
                throw new IllegalArgumentException("bracket ends before it starts: " + monoBefore + ".." + monoAfter);
            }
        }

        /** CLOCK_MONOTONIC at the bracket's middle (where the perf stamp is assumed to be). */
        public long monoMid() {
            return monoBefore + (monoAfter - monoBefore) / 2;
        }

        /** How far the stamp can be from {@link #monoMid}: half the bracket (rounded up). */
        public long halfWidth() {
            return (monoAfter - monoBefore + 1) / 2;
        }

        /** perf − CLOCK_MONOTONIC at the middle. */
        public long offset() {
            return perf - monoMid();
        }
    }

    private final long[] mid, offset, half;
    private int first, count;
    private long added, widestHalf, minOffset = Long.MAX_VALUE, maxOffset = Long.MIN_VALUE;

    public ClockMap(int capacity) {
        if (capacity < 2) throw new IllegalArgumentException("clock map capacity " + capacity + ": at least 2");
        mid = new long[capacity];
        offset = new long[capacity];
        half = new long[capacity];
    }

    /**
     * A map holding the last 4096 pairs: almost 7 minutes at the recorder's pace of one per 100 ms, where the fence's
     * times are converted within seconds of their event.
     */
    public ClockMap() {
        this(4096);
    }

    /** Adds an observation; one not after the last one held is refused (false). */
    public synchronized boolean add(Pair p) {
        long m = p.monoMid();
        if (count > 0 && m <= mid[index(count - 1)]) return false;
        if (count == mid.length) {
            first = (first + 1) % mid.length;
            count--;
        }
        int i = index(count++);
        mid[i] = m;
        offset[i] = p.offset();
        half[i] = p.halfWidth();
        added++;
        widestHalf = Math.max(widestHalf, half[i]);
        minOffset = Math.min(minOffset, offset[i]);
        maxOffset = Math.max(maxOffset, offset[i]);
        return true;
    }

    /** Whether any pair is held; without one nothing can be converted. */
    public synchronized boolean isEmpty() {
        return count == 0;
    }

    /** The perf time of CLOCK_MONOTONIC {@code monotonicNs}. */
    public synchronized long toPerf(long monotonicNs) {
        return monotonicNs + offsetAt(monotonicNs);
    }

    @Override
    public long applyAsLong(long monotonicNs) {
        return toPerf(monotonicNs);
    }

    /** perf − CLOCK_MONOTONIC at {@code monotonicNs}. */
    public synchronized long offsetAt(long monotonicNs) {
        if (count == 0) throw new IllegalStateException("clock map has no pairs yet");
        int after = upperBound(monotonicNs); // first held pair whose middle is after the time
        if (after == 0) return offset[index(0)];
        if (after == count) return offset[index(count - 1)];
        int a = index(after - 1), b = index(after);
        double fraction = (double) (monotonicNs - mid[a]) / (double) (mid[b] - mid[a]);
        return offset[a] + Math.round(fraction * (offset[b] - offset[a]));
    }

    /**
     * A bound on the conversion's error at {@code monotonicNs} from the pairs alone: the wider half-bracket of the
     * pairs used. Outside the held pairs add the drift ({@link #driftPpm}) times the distance to the nearest pair.
     */
    public synchronized long uncertaintyAt(long monotonicNs) {
        if (count == 0) throw new IllegalStateException("clock map has no pairs yet");
        int after = upperBound(monotonicNs);
        if (after == 0) return half[index(0)];
        if (after == count) return half[index(count - 1)];
        return Math.max(half[index(after - 1)], half[index(after)]);
    }

    /** Pairs added since creation (held or dropped). */
    public synchronized long pairsAdded() {
        return added;
    }

    /** The widest half-bracket of any pair added: the offsets' worst uncertainty. */
    public synchronized long widestHalfWidth() {
        return widestHalf;
    }

    /** How far the offset moved over the pairs added (max − min), in ns: the two clocks' drift over the run. */
    public synchronized long offsetSpread() {
        return count == 0 ? 0 : maxOffset - minOffset;
    }

    /**
     * The offset's rate of change between the oldest and newest pair held, in parts per million (0 with fewer than
     * two pairs).
     */
    public synchronized double driftPpm() {
        if (count < 2) return 0;
        int a = index(0), b = index(count - 1);
        return (offset[b] - offset[a]) * 1e6 / (double) (mid[b] - mid[a]);
    }

    private int index(int k) {
        return (first + k) % mid.length;
    }

    /** Number of held pairs whose middle is at or before {@code t}. */
    private int upperBound(long t) {
        int lo = 0, hi = count;
        while (lo < hi) {
            int m = (lo + hi) >>> 1;
            if (mid[index(m)] <= t) lo = m + 1;
            else hi = m;
        }
        return lo;
    }

    @Override
    public synchronized String toString() {
        return String.format("clock map: %d pairs, widest ±%d ns, offset spread %d ns, drift %.2f ppm", added,
                widestHalf, offsetSpread(), driftPpm());
    }
}

package ptfence.sys;

/** clock_gettime(2) for the clocks the recorder compares (System.nanoTime is CLOCK_MONOTONIC on Linux HotSpot). */
public final class PosixClock {
    public static final int CLOCK_MONOTONIC = 1, CLOCK_MONOTONIC_RAW = 4, CLOCK_BOOTTIME = 7;

    private PosixClock() {}

    /** The clock's time in ns. */
    public static long nanos(int clockId) {
        long[] ts = new long[2];
        Native.check(Native.LIBC.clock_gettime(clockId, ts), "clock_gettime(" + clockId + ")");
        return ts[0] * 1_000_000_000L + ts[1];
    }
}

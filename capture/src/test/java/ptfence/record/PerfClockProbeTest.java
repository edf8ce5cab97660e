package ptfence.record;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import ptfence.sys.PosixClock;
import ptfence.sys.TaskComm;

/** The clock probe against the kernel: its stamps, in the clock asked for, fall inside their brackets. */
class PerfClockProbeTest {
    @BeforeAll
    static void requirements() {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
                "needs root: perf_event_open (kernel.perf_event_paranoid may refuse others)");
    }

    @Test
    void systemNanoTimeIsClockMonotonic() {
        // the brackets are read with System.nanoTime while the fence stamps with bpf_ktime_get_ns (CLOCK_MONOTONIC)
        for (int i = 0; i < 1000; i++) {
            long before = System.nanoTime();
            long mono = PosixClock.nanos(PosixClock.CLOCK_MONOTONIC);
            long after = System.nanoTime();
            assertTrue(before <= mono && mono <= after, before + " " + mono + " " + after);
        }
    }

    @Test
    void aMonotonicProbeStampsInsideItsBracket() throws Exception {
        String name = TaskComm.get();
        try (PerfClockProbe probe = PerfClockProbe.open(PosixClock.CLOCK_MONOTONIC)) {
            for (int i = 0; i < 200; i++) {
                ClockMap.Pair p = probe.sample();
                assertTrue(p.monoBefore() <= p.perf() && p.perf() <= p.monoAfter(), p.toString());
            }
        }
        assertEquals(name, TaskComm.get(), "the thread keeps its name");
    }

    @Test
    void perfClockPairsAgreeWithEachOther() throws Exception {
        ClockMap map = new ClockMap();
        try (PerfClockProbe probe = PerfClockProbe.open(-1)) {
            long start = System.nanoTime();
            while (System.nanoTime() - start < 2_000_000_000L) {
                assertTrue(map.add(probe.sample()));
                Thread.sleep(50);
            }
        }
        System.out.println("perf clock vs CLOCK_MONOTONIC over 2 s: " + map + ", offset "
                + map.offsetAt(System.nanoTime()) + " ns");
        // A bracket is one prctl plus two clock reads: microseconds, unless preempted three times in a row.
        assertTrue(map.widestHalfWidth() < 1_000_000, map.toString());
        // local_clock and CLOCK_MONOTONIC tick at the same nominal rate: NTP slews at most 500 ppm.
        assertTrue(Math.abs(map.driftPpm()) < 500, map.toString());
    }
}

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
        java.util.List<ClockMap.Pair> pairs = new java.util.ArrayList<>();
        try (PerfClockProbe probe = PerfClockProbe.open(-1)) {
            long start = System.nanoTime();
            while (System.nanoTime() - start < 2_000_000_000L) {
                ClockMap.Pair p = probe.sample();
                pairs.add(p);
                assertTrue(map.add(p));
                Thread.sleep(50);
            }
        }
        // each stamp as its neighbours predict it: off by no more than the brackets and 500 ppm over the gap
        for (int i = 1; i + 1 < pairs.size(); i++) {
            ClockMap.Pair a = pairs.get(i - 1), p = pairs.get(i), b = pairs.get(i + 1);
            ClockMap m = new ClockMap();
            m.add(a);
            m.add(b);
            long bound = p.halfWidth() + Math.max(a.halfWidth(), b.halfWidth()) + (b.monoMid() - a.monoMid()) / 2000;
            long err = Math.abs(m.toPerf(p.monoMid()) - p.perf());
            assertTrue(err <= bound, "pair " + i + " off its neighbours by " + err + " ns > " + bound);
        }
        System.out.println("perf clock vs CLOCK_MONOTONIC over 2 s: " + map + ", offset "
                + map.offsetAt(System.nanoTime()) + " ns");
        // A bracket is one prctl plus two clock reads: about a microsecond, unless preempted eight times in a row.
        assertTrue(map.widestHalfWidth() < 200_000, map.toString());
        // local_clock and CLOCK_MONOTONIC tick at the same nominal rate: NTP slews at most 500 ppm.
        assertTrue(Math.abs(map.driftPpm()) < 500, map.toString());
    }
}

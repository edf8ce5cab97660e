package ptfence.record;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** The conversion against synthetic clocks whose true relation is known. */
class ClockMapTest {
    /** A perf clock running {@code ppm} faster than CLOCK_MONOTONIC, {@code base} ns ahead at monotonic 0. */
    private static long truePerf(long mono, long base, double ppm) {
        return base + mono + Math.round(mono * ppm / 1e6);
    }

    @Test
    void aConstantOffsetIsExactFromExactPairs() {
        ClockMap m = new ClockMap();
        m.add(new ClockMap.Pair(1_000, 1_000, 1_000 - 777));
        m.add(new ClockMap.Pair(5_000, 5_000, 5_000 - 777));
        for (long t : new long[] {0, 1_000, 3_333, 5_000, 9_999_999}) assertEquals(t - 777, m.toPerf(t));
        assertEquals(0, m.offsetSpread());
        assertEquals(0, m.widestHalfWidth());
    }

    @Test
    void driftIsInterpolatedBetweenPairsWithinTheirBrackets() {
        long base = -3_456_789_012L;
        double ppm = 40;
        Random rnd = new Random(5);
        ClockMap m = new ClockMap();
        long widest = 0;
        // a pair per second for a minute; the stamp anywhere in a bracket of up to 4 µs
        for (int s = 1; s <= 60; s++) {
            long before = s * 1_000_000_000L + rnd.nextInt(1000);
            long width = rnd.nextInt(4000);
            long stampedAt = before + (long) (rnd.nextDouble() * width);
            assertTrue(m.add(new ClockMap.Pair(before, before + width, truePerf(stampedAt, base, ppm))));
            widest = Math.max(widest, (width + 1) / 2);
        }
        assertEquals(widest, m.widestHalfWidth());
        for (int i = 0; i < 10_000; i++) {
            long t = 1_000_000_000L + (long) (rnd.nextDouble() * 59e9);
            long err = Math.abs(m.toPerf(t) - truePerf(t, base, ppm));
            // linear truth: only the stamps' positions inside their brackets (and rounding) are unknown
            assertTrue(err <= m.uncertaintyAt(t) + 1, "error " + err + " ns at " + t + " > ±" + m.uncertaintyAt(t));
        }
        assertEquals(ppm, m.driftPpm(), 0.2, "drift over the minute");
        assertEquals(Math.round(59 * ppm * 1000), m.offsetSpread(), 2 * widest + 2);
    }

    @Test
    void outsideThePairsTheNearestOffsetHolds() {
        ClockMap m = new ClockMap();
        m.add(new ClockMap.Pair(1_000, 1_010, 50_005));   // offset 49_000 at 1_005
        m.add(new ClockMap.Pair(2_000, 2_010, 51_105));   // offset 49_100 at 2_005
        assertEquals(100 + 49_000, m.toPerf(100));
        assertEquals(9_000 + 49_100, m.toPerf(9_000));
        assertEquals(1_505 + 49_050, m.toPerf(1_505), "half way: half the change");
        assertEquals(5, m.uncertaintyAt(1_505));
    }

    @Test
    void pairsMustAdvanceAndTheOldestGo() {
        ClockMap m = new ClockMap(3);
        assertTrue(m.isEmpty());
        assertThrows(IllegalStateException.class, () -> m.toPerf(5));
        assertTrue(m.add(new ClockMap.Pair(10, 10, 110)));
        assertFalse(m.add(new ClockMap.Pair(10, 10, 500)), "same middle");
        assertFalse(m.add(new ClockMap.Pair(0, 4, 500)), "earlier");
        assertTrue(m.add(new ClockMap.Pair(20, 20, 220)));
        assertTrue(m.add(new ClockMap.Pair(30, 30, 330)));
        assertTrue(m.add(new ClockMap.Pair(40, 40, 440))); // drops the first (offset 100)
        assertEquals(4, m.pairsAdded());
        assertEquals(5 + 200, m.toPerf(5), "before the oldest held pair: its offset");
        assertEquals(35 + 350, m.toPerf(35));
        assertThrows(IllegalArgumentException.class, () -> new ClockMap.Pair(5, 4, 0));
    }
}

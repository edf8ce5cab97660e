package ptfence.record;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * How well ptrec knows perf's clock in CLOCK_MONOTONIC terms (root; not a test):
 * {@code java -cp <test classpath> ptfence.record.ClockProbeBench [seconds] [intervalMs]}. Samples like the recorder
 * (a pair every interval) and prints the brackets' half-widths, the offset's drift, and the leave-one-out error:
 * each pair's perf stamp predicted from its neighbours alone (interpolated) and from the previous pair alone
 * (extrapolated, the fence's case between two samples), against the bracket it was actually read in.
 */
public final class ClockProbeBench {
    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 60;
        int intervalMs = args.length > 1 ? Integer.parseInt(args[1]) : 100;
        List<ClockMap.Pair> pairs = new ArrayList<>();
        try (PerfClockProbe probe = PerfClockProbe.open(-1)) {
            for (int i = 0; i < 50; i++) probe.sample(); // warm-up: the JIT, not the clocks
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            while (System.nanoTime() < end) {
                pairs.add(probe.sample());
                Thread.sleep(intervalMs);
            }
        }
        int n = pairs.size();
        long[] half = pairs.stream().mapToLong(ClockMap.Pair::halfWidth).sorted().toArray();
        long[] interp = new long[n - 2], extrap = new long[n - 1];
        for (int i = 1; i < n - 1; i++) {
            ClockMap m = new ClockMap();
            m.add(pairs.get(i - 1));
            m.add(pairs.get(i + 1));
            interp[i - 1] = Math.abs(m.toPerf(pairs.get(i).monoMid()) - pairs.get(i).perf());
        }
        for (int i = 1; i < n; i++) {
            ClockMap m = new ClockMap();
            m.add(pairs.get(i - 1));
            extrap[i - 1] = Math.abs(m.toPerf(pairs.get(i).monoMid()) - pairs.get(i).perf());
        }
        Arrays.sort(interp);
        Arrays.sort(extrap);
        ClockMap all = new ClockMap(n + 1);
        pairs.forEach(all::add);
        System.out.printf("%d pairs over %d s, one per %d ms; offset perf - CLOCK_MONOTONIC %d ns at the start%n", n,
                seconds, intervalMs, pairs.get(0).offset());
        System.out.println("| ns | p50 | p99 | max |");
        System.out.println("|---|---|---|---|");
        System.out.printf("| bracket half-width | %d | %d | %d |%n", p(half, 50), p(half, 99), half[n - 1]);
        System.out.printf("| stamp vs interpolated from neighbours | %d | %d | %d |%n", p(interp, 50), p(interp, 99),
                interp[interp.length - 1]);
        System.out.printf("| stamp vs extrapolated from the previous pair | %d | %d | %d |%n", p(extrap, 50),
                p(extrap, 99), extrap[extrap.length - 1]);
        System.out.printf("offset moved %d ns (max - min) over the run; drift %.3f ppm%n", all.offsetSpread(),
                all.driftPpm());
        // Where in its bracket the kernel stamps: a CLOCK_MONOTONIC probe reads both sides in one clock.
        long[] bias = new long[1000];
        try (PerfClockProbe probe = PerfClockProbe.open(ptfence.sys.PosixClock.CLOCK_MONOTONIC)) {
            for (int i = 0; i < 50; i++) probe.sample();
            for (int i = 0; i < bias.length; i++) {
                ClockMap.Pair q = probe.sample();
                bias[i] = q.perf() - q.monoMid();
            }
        }
        Arrays.sort(bias);
        System.out.printf("CLOCK_MONOTONIC probe: stamp - bracket middle p1 %d, p50 %d, p99 %d ns%n", p(bias, 1),
                p(bias, 50), p(bias, 99));
    }

    private static long p(long[] sorted, int pct) {
        return sorted[Math.min(sorted.length - 1, sorted.length * pct / 100)];
    }
}

package ptfence.gc;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code bin/ptbench gc-race [ROUNDS] [CAPTURE_THREADS] [SEED]}: the race of {@link GcRace} for thousands of rounds
 * (default 5000 rounds, 3 capture threads); prints rounds, captures and the regions lost (must be 0).
 */
public final class GcRaceBench {
    private GcRaceBench() {}

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5000;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        long seed = args.length > 2 ? Long.parseLong(args[2]) : System.nanoTime();
        Path dir = Files.createTempDirectory("ptfence-gc-race");
        String load = Files.readString(Path.of("/proc/loadavg")).trim();
        GcRace.Result r = GcRace.run(dir, rounds, threads, seed);
        System.out.printf("%-10s %-8s %-8s %-10s %-12s %-14s %-8s %-10s %-10s %-8s %s%n", "rounds", "gc runs",
                "captures", "crashed", "regions", "lost regions", "lost rec", "rec dropped", "freed", "s",
                "loadavg before");
        System.out.printf("%-10d %-8d %-8d %-10d %-12d %-14d %-8d %-10d %-10d %-8.1f %s%n", r.rounds(), r.gcRuns(),
                r.captures(), r.crashed(), r.regionsCommitted(), r.lostRegions(), r.lostRecordings(),
                r.recordingsDropped(), r.regionsFreed(), r.millis() / 1000.0, load);
        System.out.println("seed " + seed + "; loadavg after: " + Files.readString(Path.of("/proc/loadavg")).trim());
        r.problems().forEach(p -> System.out.println("problem: " + p));
        try (var s = Files.walk(dir)) {
            s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        if (r.lostRegions() + r.lostRecordings() > 0 || !r.problems().isEmpty()) {
            System.exit(1);
        }
    }
}

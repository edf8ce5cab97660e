package ptfence.bench;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import ptfence.packet.PacketCursor;
import ptfence.packet.TraceDecodeException;
import ptfence.packet.TraceSource;

/**
 * Packet-decoding speed (a benchmark, not a test): times the {@link PacketCursor} loop in-process and
 * {@code bin/ptdecode packets --quiet FILE} as a whole process, and prints MB/s next to libipt's figures
 * on this machine (pt_pkt_next loop: 72 MB/s tnt, 130 MB/s mixed; ptdump --quiet: 10.4 / 17.7 MB/s).
 *
 * <pre>
 * bin/ptbench packets [FILE...]     # default: the bench traces in $PTFENCE_BENCH_DIR or /tmp/ptfence-bench
 * </pre>
 * Missing default traces are generated with fixtures/data/bench/gen_bench.py (100 MiB each, then 10 copies
 * concatenated for the 1 GiB files).
 */
public final class PacketBench {
    private PacketBench() {}

    public static void main(String[] args) throws Exception {
        Path repo = Path.of(System.getProperty("ptfence.repo", ".")).toAbsolutePath().normalize();
        List<Path> files = new ArrayList<>();
        if (args.length > 0) {
            for (String a : args) {
                files.add(Path.of(a));
            }
        } else {
            Path dir = Path.of(System.getenv().getOrDefault("PTFENCE_BENCH_DIR", "/tmp/ptfence-bench"));
            Path shared = Path.of(System.getProperty("ptfence.data", repo.resolve("fixtures/data").toString()));
            for (String v : new String[] {"tnt", "mixed"}) {
                files.add(ensure(dir, shared, v));
            }
        }
        System.out.println("MB/s by wall clock (and by CPU time, which a loaded machine disturbs less):");
        System.out.printf("%-20s %6s %12s %12s %11s %18s %18s%n", "trace", "MiB", "packets", "cursor", "cursor-cpu",
                "ptdecode --quiet", "ptdecode-cpu");
        for (Path f : files) {
            long size = Files.size(f);
            double[] cursor = cursorRate(f);
            long packets = countPackets(f);
            double[] whole = processRate(repo, f, size);
            System.out.printf("%-20s %6.0f %12d %12.1f %11.1f %18.1f %18s%n", f.getFileName(), size / 1048576.0,
                    packets, cursor[0], cursor[1], whole[0], whole[1] > 0 ? String.format("%.1f", whole[1]) : "-");
        }
        System.out.println("libipt on this machine: pt_pkt_next 72 MB/s (tnt), 130 MB/s (mixed); "
                + "target 3x: 216 / 390 MB/s whole process.");
    }

    static Path ensure(Path dir, Path shared, String variant) throws Exception {
        Files.createDirectories(dir);
        Path small = dir.resolve("bench-" + variant + ".pt");
        Path big = dir.resolve("bench-" + variant + "-1G.pt");
        if (!Files.exists(big)) {
            if (!Files.exists(small)) {
                System.err.println("generating " + small + " ...");
                Process p = new ProcessBuilder("python3", shared.resolve("bench/gen_bench.py").toString(), variant,
                        small.toString(), "--segments", "25600").inheritIO().start();
                if (p.waitFor() != 0) {
                    throw new IllegalStateException("gen_bench.py failed");
                }
            }
            Path tmp = dir.resolve(big.getFileName() + ".tmp");
            try (var out = Files.newOutputStream(tmp)) {
                for (int k = 0; k < 10; k++) {
                    Files.copy(small, out);
                }
            }
            Files.move(tmp, big);
        }
        return big;
    }

    /** Best of three timed passes of the bare cursor loop (after one warm-up pass): {wall, cpu} MB/s. */
    static double[] cursorRate(Path f) {
        double best = 0;
        double bestCpu = 0;
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        for (int run = 0; run < 4; run++) {
            long c0 = mx.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            long n = decodeAll(f);
            long t1 = System.nanoTime();
            long c1 = mx.getCurrentThreadCpuTime();
            if (run > 0) {
                best = Math.max(best, sizeOf(f) / 1e6 / ((t1 - t0) / 1e9));
                bestCpu = Math.max(bestCpu, sizeOf(f) / 1e6 / ((c1 - c0) / 1e9));
            }
            if (n == 0) {
                throw new IllegalStateException("no packets in " + f);
            }
        }
        return new double[] {best, bestCpu};
    }

    static long countPackets(Path f) {
        return decodeAll(f);
    }

    static long decodeAll(Path f) {
        long n = 0;
        try (TraceSource src = TraceSource.open(f)) {
            PacketCursor c = new PacketCursor(src);
            if (!c.syncForward()) {
                return 0;
            }
            for (;;) {
                try {
                    while (c.next() != PacketCursor.END) {
                        n++;
                    }
                    return n;
                } catch (TraceDecodeException e) {
                    if (!c.syncForward()) {
                        return n;
                    }
                }
            }
        }
    }

    static long sizeOf(Path f) {
        return new File(f.toString()).length();
    }

    /**
     * Whole process, JVM start included: bin/ptdecode packets --quiet FILE, best of three; {wall, cpu} MB/s
     * (cpu = user+sys from /usr/bin/time when available, else 0).
     */
    static double[] processRate(Path repo, Path f, long size) throws Exception {
        double best = 0;
        double bestCpu = 0;
        boolean haveTime = Files.isExecutable(Path.of("/usr/bin/time"));
        for (int run = 0; run < 3; run++) {
            Path cpuFile = Files.createTempFile("ptbench", ".cpu");
            List<String> cmd = new ArrayList<>();
            if (haveTime) {
                cmd.addAll(List.of("/usr/bin/time", "-o", cpuFile.toString(), "-f", "%U %S"));
            }
            cmd.addAll(List.of(repo.resolve("bin/ptdecode").toString(), "packets", "--quiet", f.toString()));
            long t0 = System.nanoTime();
            Process p = new ProcessBuilder(cmd).inheritIO().start();
            int rc = p.waitFor();
            long t1 = System.nanoTime();
            if (rc != 0) {
                throw new IllegalStateException("ptdecode exited " + rc + " on " + f);
            }
            best = Math.max(best, size / 1e6 / ((t1 - t0) / 1e9));
            if (haveTime) {
                String[] us = Files.readString(cpuFile).trim().split("\\s+");
                double cpu = Double.parseDouble(us[us.length - 2]) + Double.parseDouble(us[us.length - 1]);
                bestCpu = Math.max(bestCpu, size / 1e6 / cpu);
            }
            Files.deleteIfExists(cpuFile);
        }
        return new double[] {best, bestCpu};
    }
}

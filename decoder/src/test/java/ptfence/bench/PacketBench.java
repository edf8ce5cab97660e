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
 * Missing default traces are generated with ../shared/bench/gen_bench.py (100 MiB each, then 10 copies
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
            Path shared = Path.of(System.getProperty("ptfence.shared", repo.resolve("../shared").toString()));
            for (String v : new String[] {"tnt", "mixed"}) {
                files.add(ensure(dir, shared, v));
            }
        }
        System.out.printf("%-22s %10s %14s %14s %16s%n", "trace", "MiB", "cursor MB/s", "packets/s", "ptdecode MB/s");
        for (Path f : files) {
            long size = Files.size(f);
            double cursor = cursorRate(f);
            long packets = countPackets(f);
            double secs = size / 1e6 / cursor;
            double whole = processRate(repo, f, size);
            System.out.printf("%-22s %10.0f %14.1f %14.3g %16.1f%n", f.getFileName(), size / 1048576.0, cursor,
                    packets / secs, whole);
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

    /** Best of three timed passes of the bare cursor loop (after one warm-up pass). */
    static double cursorRate(Path f) {
        double best = 0;
        for (int run = 0; run < 4; run++) {
            long t0 = System.nanoTime();
            long n = decodeAll(f);
            long t1 = System.nanoTime();
            if (run > 0) {
                best = Math.max(best, sizeOf(f) / 1e6 / ((t1 - t0) / 1e9));
            }
            if (n == 0) {
                throw new IllegalStateException("no packets in " + f);
            }
        }
        return best;
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

    /** Whole process, JVM start included: bin/ptdecode packets --quiet FILE (best of two). */
    static double processRate(Path repo, Path f, long size) throws Exception {
        double best = 0;
        for (int run = 0; run < 2; run++) {
            long t0 = System.nanoTime();
            Process p = new ProcessBuilder(repo.resolve("bin/ptdecode").toString(), "packets", "--quiet", f.toString())
                    .inheritIO().start();
            int rc = p.waitFor();
            long t1 = System.nanoTime();
            if (rc != 0) {
                throw new IllegalStateException("ptdecode exited " + rc + " on " + f);
            }
            best = Math.max(best, size / 1e6 / ((t1 - t0) / 1e9));
        }
        return best;
    }
}

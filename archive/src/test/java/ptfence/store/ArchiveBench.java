package ptfence.store;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import ptfence.gc.GarbageCollector;
import ptfence.gc.GcPolicy;
import ptfence.gc.GcReport;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;

/**
 * Archive bench (not a test): puts/s and gets/s for BPF-sized images (100 B..64 KiB, log-uniform), gc time
 * with half the images unreferenced, size on disk against raw bytes. Prints a table.
 *
 * <pre>
 * mvn -q -o -pl archive -am test-compile dependency:copy-dependencies -DincludeScope=test -DoutputDirectory=target/lib-test
 * java --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
 *   -cp archive/target/test-classes:archive/target/classes:'archive/target/lib/*' ptfence.store.ArchiveBench [N] [DIR]
 * </pre>
 */
public final class ArchiveBench {
    private ArchiveBench() {}

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        Path dir = args.length > 1 ? Path.of(args[1]) : Files.createTempDirectory("ptfence-bench");
        Path archiveDir = dir.resolve("archive");
        int batch = 1000;
        List<String> rows = new ArrayList<>();
        List<ContentKey> keys = new ArrayList<>(n);
        long raw = 0;
        try (Archive a = Archive.open(archiveDir)) {
            SplittableRandom sizes = new SplittableRandom(1);
            Random fill = new Random(2);
            long t0 = System.nanoTime();
            for (int done = 0; done < n; done += batch) {
                List<byte[]> images = new ArrayList<>(batch);
                for (int i = done; i < Math.min(n, done + batch); i++) {
                    byte[] img = new byte[logUniform(sizes, 100, 64 * 1024)];
                    fill.nextBytes(img);
                    images.add(img);
                    raw += img.length;
                }
                keys.addAll(a.putAll(images));
            }
            double putSec = (System.nanoTime() - t0) / 1e9;
            rows.add(row("put, " + batch + " per txn", n, putSec, raw));

            int singles = Math.min(2000, n);
            t0 = System.nanoTime();
            for (int i = 0; i < singles; i++) {
                byte[] img = new byte[logUniform(sizes, 100, 64 * 1024)];
                fill.nextBytes(img);
                a.put(img);
            }
            rows.add(row("put, 1 per txn", singles, (System.nanoTime() - t0) / 1e9, -1));

            t0 = System.nanoTime();
            int dedup = Math.min(20_000, n);
            a.write(b -> {
                for (int i = 0; i < dedup; i++) {
                    b.touch(keys.get(i));
                }
                return null;
            });
            rows.add(row("re-put (dedup touch), 1 txn", dedup, (System.nanoTime() - t0) / 1e9, -1));

            List<ContentKey> order = new ArrayList<>(keys);
            java.util.Collections.shuffle(order, new Random(3));
            long[] got = {0};
            t0 = System.nanoTime();
            a.read(s -> {
                for (ContentKey k : order) {
                    got[0] += s.requireImage(k).length;
                }
                return null;
            });
            rows.add(row("get (verified), random, 1 snapshot", n, (System.nanoTime() - t0) / 1e9, got[0]));

            t0 = System.nanoTime();
            for (int i = 0; i < Math.min(20_000, n); i++) {
                a.get(order.get(i)).orElseThrow();
            }
            rows.add(row("get (verified), 1 snapshot each", Math.min(20_000, n), (System.nanoTime() - t0) / 1e9, -1));

            // Regions for every image, half of them linked to a recording: gc must drop the other half.
            t0 = System.nanoTime();
            for (int done = 0; done < n; done += batch) {
                int from = done;
                a.write(b -> {
                    if (from == 0) {
                        Recordings.register(b, Recording.started("bench", "", "boot", 0));
                    }
                    for (int i = from; i < Math.min(n, from + batch); i++) {
                        ContentKey k = keys.get(i);
                        long len = b.imageInfo(k).orElseThrow().length();
                        long id = RegionIndex.add(b, new Region("boot", 0xffffffffc0000000L + (long) i * 0x10000L, len,
                                i, Region.OPEN, RegionKind.BPF_PROG, "prog" + i, k, null));
                        if (i % 2 == 0) {
                            Recordings.link(b, "bench", id);
                        }
                    }
                    return null;
                });
            }
            rows.add(row("add region (+link half), " + batch + " per txn", n, (System.nanoTime() - t0) / 1e9, -1));

            Random q = new Random(4);
            t0 = System.nanoTime();
            int lookups = Math.min(100_000, n);
            a.read(s -> {
                for (int i = 0; i < lookups; i++) {
                    int j = q.nextInt(n);
                    RegionIndex.at(s, "boot", 0xffffffffc0000000L + (long) j * 0x10000L + 50, j + 1).orElseThrow();
                }
                return null;
            });
            rows.add(row("region at (boot, address, time)", lookups, (System.nanoTime() - t0) / 1e9, -1));

            long fileBefore = a.fileSize();
            t0 = System.nanoTime();
            GcReport r = GarbageCollector.run(a, GcPolicy.defaults());
            double gcSec = (System.nanoTime() - t0) / 1e9;
            rows.add(row("gc: " + r.imagesFreed() + " images + " + r.regionsFreed() + " regions freed", n, gcSec,
                    r.bytesFreed()));
            t0 = System.nanoTime();
            GarbageCollector.run(a, GcPolicy.defaults());
            rows.add(row("gc again (nothing to free)", n / 2, (System.nanoTime() - t0) / 1e9, -1));

            System.out.printf(Locale.ROOT, "%nptfence archive bench: %d images, %s raw, log-uniform 100 B..64 KiB%n", n,
                    mib(raw));
            System.out.printf(Locale.ROOT, "%-44s %10s %10s %12s %10s%n", "operation", "count", "seconds", "ops/s", "MiB/s");
            rows.forEach(System.out::println);
            System.out.printf(Locale.ROOT, "%nsize on disk: data.mdb %s for %s of image bytes (%.3fx) before gc; "
                    + "%s after gc (LMDB keeps freed pages for reuse)%n", mib(fileBefore), mib(raw + 0),
                    (double) fileBefore / raw, mib(a.fileSize()));
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static String row(String what, long count, double seconds, long bytes) {
        return String.format(Locale.ROOT, "%-44s %10d %10.2f %12.0f %10s", what, count, seconds, count / seconds,
                bytes < 0 ? "" : String.format(Locale.ROOT, "%.0f", bytes / seconds / (1 << 20)));
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1 << 20));
    }

    private static int logUniform(SplittableRandom r, int min, int max) {
        return (int) Math.round(Math.exp(Math.log(min) + r.nextDouble() * (Math.log(max) - Math.log(min))));
    }

}

package ptfence.store;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import ptfence.gc.GarbageCollector;
import ptfence.gc.GcPolicy;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;

/**
 * The child JVM the crash test kills with SIGKILL. {@code puts DIR SEED}: bursts of batched puts with
 * regions and links, printing "ACK key" for each image once its batch committed. {@code gc DIR}: prints
 * "GC-START" and runs a gc with tiny transactions. {@code fill DIR MIB}: puts that many MiB, printing keys.
 */
public final class CrashChild {
    private CrashChild() {}

    public static void main(String[] args) {
        Path dir = Path.of(args[1]);
        try (Archive a = Archive.open(dir)) {
            if (args[0].equals("puts")) {
                puts(a, Long.parseLong(args[2]));
            } else if (args[0].equals("fill")) {
                fill(a, Integer.parseInt(args[2]));
            } else {
                System.out.println("GC-START");
                System.out.flush();
                GarbageCollector.run(a, new GcPolicy(Duration.ofDays(30), 0, false, 3));
                System.out.println("GC-DONE");
            }
        }
    }

    /** Puts this many MiB of 64 KiB images, growing the map, and prints their keys. */
    private static void fill(Archive a, int mib) {
        Random rnd = new Random(mib);
        for (int batch = 0; batch < mib / 4; batch++) {
            List<byte[]> images = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                byte[] img = new byte[64 * 1024];
                rnd.nextBytes(img);
                images.add(img);
            }
            for (ContentKey k : a.putAll(images)) {
                System.out.println("ACK " + k.hex());
            }
        }
        System.out.println("MAP " + a.mapSize());
    }

    private static void puts(Archive a, long seed) {
        Random rnd = new Random(seed);
        String rec = "crash-" + seed;
        a.write(b -> {
            Recordings.register(b, Recording.started(rec, "", "boot-crash", 0));
            return null;
        });
        System.out.println("READY");
        System.out.flush();
        for (long t = 0; ; t++) {
            int n = 1 + rnd.nextInt(20);
            List<byte[]> images = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                byte[] img = new byte[100 + rnd.nextInt(16 * 1024)];
                rnd.nextBytes(img);
                images.add(img);
            }
            long time = t;
            List<ContentKey> keys = a.write(b -> {
                List<ContentKey> out = new ArrayList<>();
                long addr = 0xffffffffc0000000L + (time % 64) * 0x10000L;
                for (byte[] img : images) {
                    ContentKey k = b.put(img);
                    long id = RegionIndex.add(b, new Region("boot-crash", addr, img.length, time, Region.OPEN,
                            RegionKind.BPF_PROG, "p" + time, k, null));
                    Recordings.link(b, rec, id);
                    out.add(k);
                    addr += 0x8000;
                }
                return out;
            });
            StringBuilder sb = new StringBuilder();
            for (ContentKey k : keys) {
                sb.append("ACK ").append(k.hex()).append('\n');
            }
            System.out.print(sb);
            System.out.flush();
        }
    }
}

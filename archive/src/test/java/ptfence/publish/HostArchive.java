package ptfence.publish;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

/**
 * Test helper: an archive as one host's captures leave it, with recordings whose BPF regions use images made from a
 * seed (two hosts given the same seed load "the same programs": the same images, in their own boots and times).
 */
final class HostArchive {
    final Path dir;
    final String boot;
    /** The images, by key, and the regions of each recording. */
    final Map<ContentKey, byte[]> images = new HashMap<>();
    final Map<String, List<Region>> recordings = new HashMap<>();

    HostArchive(Path dir, String boot) {
        this.dir = dir;
        this.boot = boot;
    }

    /** Adds a recording using {@code n} images from {@code seed} (sizes 16 B .. maxSize), created {@code ageMs} ago. */
    HostArchive record(String id, long seed, int n, int maxSize, long ageMs) throws Exception {
        Random rnd = new Random(seed);
        List<Region> regions = new ArrayList<>();
        long t = 1_000_000 + ((long) boot.hashCode() & 0xffff);
        for (int i = 0; i < n; i++) {
            byte[] img = new byte[16 + rnd.nextInt(Math.max(1, maxSize - 16))];
            rnd.nextBytes(img);
            long address = 0xffffffffc0000000L + ((long) i << 16);
            regions.add(new Region(boot, address, img.length, t + i, t + i + 500, RegionKind.BPF_PROG,
                    String.format("bpf_prog_%016x_p%d", seed * 1000 + i, i), ContentKey.of(img), null));
            images.put(ContentKey.of(img), img);
        }
        Path perf = Files.write(dir.resolveSibling(id + ".perf.data"), new byte[] {1});
        try (Archive a = Archive.open(dir)) {
            a.write(b -> {
                Recordings.register(b, new Recording(id, perf.toString(), boot, t, t + n + 600,
                        System.currentTimeMillis() - ageMs));
                for (Region r : regions) {
                    b.put(images.get(r.key()));
                    Recordings.link(b, id, RegionIndex.add(b, r));
                }
                return null;
            });
        }
        recordings.put(id, regions);
        return this;
    }

    /** The object this host publishes for an image (from its own regions of it). */
    byte[] expectedObject(ContentKey key) {
        List<Region> using = new ArrayList<>();
        recordings.values().forEach(l -> l.stream().filter(r -> r.key().equals(key)).forEach(using::add));
        return ImageObject.write(key, images.get(key), using);
    }
}

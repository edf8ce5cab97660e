package ptfence.publish;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import ptfence.cli.BadInputException;
import ptfence.cli.Progress;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

/**
 * {@code ptarchive publish}: writes an archive's images into a {@link PublishTree} as {@link ImageObject}s, and a
 * {@link PublishedRecording} manifest per recording.
 *
 * <p>Order matters for {@code gc --published} running at the same time on another host: the manifests are written
 * (or, unchanged, marked as published now) first, then every image they name is looked for and written if absent;
 * so an image gc set aside in the meantime is written again, and one it sets aside later is named by a manifest gc
 * reads before it deletes anything ({@link TreeGc}). Objects themselves are never touched once written: debuginfod
 * rescans a file whose time changes, and a tree of millions of objects must not be rescanned every hour.
 *
 * <p>The archive is only read, in snapshots of {@link #CHUNK} images, so a publish never holds back a capture.
 */
public final class Publisher {
    /** A manifest's mark younger than this is not renewed (gc ages recordings in days). */
    public static final Duration REFRESH = Duration.ofHours(6);
    static final int CHUNK = 500;
    /** Objects written at once (their forced writes share the file system's journal commits). */
    static final int WRITERS = 8;

    /** Which recordings to publish: all (and every image any region uses), those active since a time, or one. */
    public record Selection(long sinceMillis, String recordingId) {
        public static Selection all() {
            return new Selection(Long.MIN_VALUE, null);
        }

        boolean everything() {
            return sinceMillis == Long.MIN_VALUE && recordingId == null;
        }
    }

    /**
     * What a publish did.
     *
     * @param recordings manifests written or renewed
     * @param images     images the selection names
     * @param written    objects this run wrote
     * @param present    objects already in the tree (another host, an earlier run)
     * @param bytes      bytes of the objects written
     * @param vanished   images gc took from the archive while the publish ran (not published)
     */
    public record Report(long recordings, long images, long written, long present, long bytes, long vanished) {}

    private Publisher() {}

    /** Publishes the selection; {@code host} goes into the manifests. */
    public static Report publish(Archive archive, PublishTree tree, Selection selection, String host,
            Progress progress) {
        // pass 1: which recordings, and which region (ids) use each image
        Map<ContentKey, List<Long>> regionsByKey = new TreeMap<>();
        List<PublishedRecording> manifests = new ArrayList<>();
        archive.read(s -> {
            List<Recording> recordings = new ArrayList<>();
            for (Recording r : Recordings.all(s)) {
                if (selection.recordingId() != null ? r.id().equals(selection.recordingId())
                        : lastActiveMillis(r) >= selection.sinceMillis() || r.endTime() == Recording.RUNNING) {
                    recordings.add(r);
                }
            }
            if (selection.recordingId() != null && recordings.isEmpty()) {
                throw new BadInputException("archive " + archive.directory() + ": no recording '"
                        + selection.recordingId() + "' (see 'ptarchive ls --recordings')");
            }
            Map<Long, ContentKey> keyOf = new HashMap<>();
            if (selection.everything()) {
                RegionIndex.all(s, r -> {
                    keyOf.put(r.id(), r.key());
                    return false;
                });
            }
            for (Recording r : recordings) {
                TreeSet<ContentKey> keys = new TreeSet<>();
                for (long id : Recordings.regionIds(s, r.id())) {
                    ContentKey k = keyOf.computeIfAbsent(id, i -> RegionIndex.get(s, i).map(Region::key).orElse(null));
                    if (k != null) {
                        keys.add(k);
                    }
                }
                manifests.add(new PublishedRecording(r, host, keys));
            }
            keyOf.forEach((id, k) -> {
                if (k != null) {
                    regionsByKey.computeIfAbsent(k, x -> new ArrayList<>()).add(id);
                }
            });
            return null;
        });

        progress.phase("publishing recordings", manifests.size());
        for (PublishedRecording m : manifests) {
            putManifest(tree, m);
            progress.add(1);
        }

        List<ContentKey> keys = new ArrayList<>(regionsByKey.keySet());
        progress.phase("publishing images", keys.size());
        ExecutorService writers = Executors.newFixedThreadPool(WRITERS,
                r -> {
                    Thread t = new Thread(r, "publish-writer");
                    t.setDaemon(true);
                    return t;
                });
        try {
            return publishImages(archive, tree, keys, regionsByKey, manifests.size(), writers, progress);
        } finally {
            writers.shutdownNow();
        }
    }

    private static Report publishImages(Archive archive, PublishTree tree, List<ContentKey> keys,
            Map<ContentKey, List<Long>> regionsByKey, int recordings, ExecutorService writers,
            Progress progress) {
        long[] counts = new long[4]; // written, present, bytes, vanished
        for (int i = 0; i < keys.size(); i += CHUNK) {
            List<ContentKey> chunk = keys.subList(i, Math.min(keys.size(), i + CHUNK));
            List<ContentKey> absent = new ArrayList<>();
            for (ContentKey k : chunk) {
                if (tree.hasObject(k)) {
                    counts[1]++;
                } else {
                    absent.add(k);
                }
            }
            // build the missing objects from one snapshot; write them after it is closed
            Map<ContentKey, byte[]> objects = new LinkedHashMap<>();
            archive.read(s -> {
                for (ContentKey k : absent) {
                    Optional<byte[]> image = s.image(k);
                    List<Region> regions = new ArrayList<>();
                    for (long id : regionsByKey.get(k)) {
                        RegionIndex.get(s, id).map(r -> RegionIndex.withContent(s, r)).ifPresent(regions::add);
                    }
                    if (image.isEmpty() || regions.isEmpty()) {
                        counts[3]++;
                        continue;
                    }
                    objects.put(k, ImageObject.write(k, image.get(), regions));
                }
                return null;
            });
            // several writers at once: the file system commits their forced writes together
            List<Future<Boolean>> put = new ArrayList<>();
            for (Map.Entry<ContentKey, byte[]> e : objects.entrySet()) {
                put.add(writers.submit(() -> tree.putObject(e.getKey(), e.getValue())));
            }
            // every write of the chunk is waited for, failed or not: each removes its own temporary file, and the
            // command must not end (and report the first failure) while another writer still has one in the tree
            RuntimeException failed = null;
            int n = 0;
            for (Map.Entry<ContentKey, byte[]> e : objects.entrySet()) {
                try {
                    if (join(put.get(n++))) {
                        counts[0]++;
                        counts[2] += e.getValue().length;
                    } else {
                        counts[1]++; // another publisher linked its own first
                    }
                } catch (RuntimeException x) {
                    if (failed == null) {
                        failed = x;
                    }
                }
            }
            if (failed != null) {
                throw failed;
            }
            progress.add(chunk.size());
        }
        return new Report(recordings, keys.size(), counts[0], counts[1], counts[2], counts[3]);
    }

    private static boolean join(Future<Boolean> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("publish interrupted", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /** Writes a manifest unless the same one is there; a same one older than {@link #REFRESH} is marked now. */
    private static void putManifest(PublishTree tree, PublishedRecording m) {
        byte[] json = m.toJson();
        String id = m.recording().id();
        byte[] there = tree.readManifest(id);
        if (there != null && Arrays.equals(there, json) && refresh(tree, id, System.currentTimeMillis())) {
            return;
        }
        tree.putManifest(id, json);
    }

    /** True if the manifest is there (its mark renewed when older than {@link #REFRESH}); false if absent. */
    private static boolean refresh(PublishTree tree, String recordingId, long now) {
        long mtime = tree.manifestMillis(recordingId);
        return mtime >= 0 && (mtime >= now - REFRESH.toMillis() || tree.touchManifest(recordingId));
    }

    /** A recording's last activity: its creation, or its perf.data's last write while it runs (as gc ages it). */
    static long lastActiveMillis(Recording r) {
        long t = r.createdMillis();
        if (!r.perfDataPath().isEmpty()) {
            try {
                Path p = Path.of(r.perfDataPath());
                if (p.isAbsolute() && Files.exists(p)) {
                    t = Math.max(t, Files.getLastModifiedTime(p).toMillis());
                }
            } catch (IOException | java.nio.file.InvalidPathException e) {
                // unreadable: its creation time
            }
        }
        return t;
    }
}

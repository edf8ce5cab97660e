package ptfence.debuginfod;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import ptfence.cli.BadInputException;
import ptfence.perfdata.Feature;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionMetadata;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

/**
 * Completes the local archive with what a recording names ({@link Feature.TextRegions}) and the archive lacks: each
 * image it does not hold is fetched by its content key from the debuginfod servers ({@link DebuginfodClient}, or the
 * client cache), parsed and checked ({@link PublishedImage}: build id, hash), and then kept in the archive with its
 * regions, linked to the recording (registered here with this perf.data, so the archive's gc keeps them while the
 * file exists). A region whose image the archive holds already is added without asking anyone. When the archive
 * cannot be written (read-only), what was fetched is still used, for this decode only.
 */
public final class RemoteImages {
    /** Images fetched at once. */
    static final int PARALLEL = 8;
    /** Writes per archive transaction. */
    static final int BATCH = 256;
    /**
     * Without DEBUGINFOD_MAXSIZE, an object may hold twice its image's bytes and this much more: the ELF headers, the
     * symbols and the region records (a program's BTF and line info, a kernel's kallsyms: a few MB). An answer past
     * it is not the image asked for and is not read further; with {@link #PARALLEL} images fetched at once, the
     * bodies of servers sending without end cost at most that many such bounds.
     */
    static final long OBJECT_ALLOWANCE = 32L << 20;

    /**
     * What was done.
     *
     * @param regions   regions added, for the code map when they could not be kept
     * @param images    the fetched images' bytes by key
     * @param kept      whether they are in the archive now
     * @param fetched   images fetched
     * @param bytes     their bytes
     * @param servers   the servers that gave them (as DEBUGINFOD_URLS names them), in the order first used
     * @param missing   one line per image no server had, with each server's answer
     * @param note      why nothing was kept ("" when kept)
     */
    public record Outcome(List<Region> regions, Map<ContentKey, byte[]> images, boolean kept, int fetched, long bytes,
            List<String> servers, List<String> missing, String note) {
        /** Nothing to add. */
        public static final Outcome NOTHING = new Outcome(List.of(), Map.of(), true, 0, 0, List.of(), List.of(), "");
    }

    private RemoteImages() {}

    /**
     * Adds to the archive in {@code dir} (created if absent when there is something to add) every region of
     * {@code named} it lacks, fetching images through {@code client} (null: none is asked). The recording is
     * registered with {@code perfData}'s path (null: a recording read from a pipe, aged by gc's --keep only).
     */
    public static Outcome complete(Feature.TextRegions named, Path dir, Path perfData, DebuginfodClient client) {
        // which regions (by id) are not in the archive, and which of their images are
        Map<Long, Region> needed = new LinkedHashMap<>();
        for (Feature.TextRegion e : named.regions()) {
            Region r = NamedCode.region(named, e, RegionMetadata.None.INSTANCE);
            if (r != null) {
                needed.putIfAbsent(r.id(), r);
            }
        }
        Map<ContentKey, RegionMetadata> localMeta = new HashMap<>();
        Map<ContentKey, Boolean> local = new HashMap<>();
        if (Archive.exists(dir)) {
            try (Archive a = Archive.openReadOnly(dir)) {
                a.read(s -> {
                    needed.values().removeIf(r -> RegionIndex.get(s, r.id()).isPresent());
                    for (Region r : needed.values()) {
                        local.computeIfAbsent(r.key(), s::hasImage);
                        if (local.get(r.key())) {
                            // the same code kept for another region: its metadata (same name) is this one's
                            RegionIndex.byName(s, r.name()).stream().filter(g -> g.key().equals(r.key())).findFirst()
                                    .ifPresent(g -> localMeta.putIfAbsent(r.key(), g.metadata()));
                        }
                    }
                    return null;
                });
            }
        }
        if (needed.isEmpty()) {
            return Outcome.NOTHING;
        }
        Map<ContentKey, List<Region>> remote = new LinkedHashMap<>();
        for (Region r : needed.values()) {
            if (!local.getOrDefault(r.key(), false)) {
                remote.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r);
            }
        }
        Map<ContentKey, PublishedImage> got = new HashMap<>();
        List<String> missing = new ArrayList<>();
        java.util.Set<String> servers = new java.util.LinkedHashSet<>();
        if (!remote.isEmpty() && client != null) {
            fetchAll(client, remote, got, servers, missing);
        } else if (!remote.isEmpty()) {
            missing.add(remote.size() + " image(s) not in the archive; no DEBUGINFOD_URLS to fetch them from");
        }
        List<Region> add = new ArrayList<>();
        Map<ContentKey, byte[]> images = new HashMap<>();
        long bytes = 0;
        for (Region r : needed.values()) {
            PublishedImage p = got.get(r.key());
            if (p != null) {
                add.add(withMetadata(r, p.metadataFor(r.id(), r.address(), r.name())));
                if (images.put(r.key(), p.bytes()) == null) {
                    bytes += p.bytes().length;
                }
            } else if (local.getOrDefault(r.key(), false)) {
                add.add(withMetadata(r, localMeta.getOrDefault(r.key(), RegionMetadata.None.INSTANCE)));
            }
        }
        if (add.isEmpty()) {
            return new Outcome(List.of(), Map.of(), true, 0, 0, List.of(), missing, "");
        }
        String note = keep(named, dir, perfData, add, images);
        return new Outcome(add, images, note.isEmpty(), got.size(), bytes, List.copyOf(servers), missing, note);
    }

    private static void fetchAll(DebuginfodClient client, Map<ContentKey, List<Region>> remote,
            Map<ContentKey, PublishedImage> got, java.util.Set<String> servers, List<String> missing) {
        ClientCache cache = new ClientCache(client.settings().cache());
        cache.cleanIfDue();
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(PARALLEL, remote.size()), r -> {
            Thread t = new Thread(r, "debuginfod-fetch");
            t.setDaemon(true);
            return t;
        });
        try {
            Map<ContentKey, Future<Object>> futures = new LinkedHashMap<>();
            for (ContentKey k : remote.keySet()) {
                long length = remote.get(k).get(0).length();
                futures.put(k, pool.submit(() -> fetch(client, cache, k, length)));
            }
            for (Map.Entry<ContentKey, Future<Object>> e : futures.entrySet()) {
                Object o;
                try {
                    o = e.getValue().get();
                } catch (java.util.concurrent.ExecutionException ex) {
                    o = "it could not be read (" + DebuginfodClient.describe(ex.getCause()) + ")";
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    return;
                }
                if (o instanceof Fetched f) {
                    got.put(e.getKey(), f.image());
                    if (f.server() != null) {
                        servers.add(f.server());
                    }
                } else {
                    Region r = remote.get(e.getKey()).get(0);
                    missing.add("image " + e.getKey().hex() + " of " + r.name() + " (0x" + Long.toHexString(r.address())
                            + ", " + r.length() + " bytes) not found: " + o);
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** The most read for the object of an image of {@code length} bytes when DEBUGINFOD_MAXSIZE is not set. */
    static long limit(long length) {
        return 2 * Math.max(0, Math.min(length, 1L << 32)) + OBJECT_ALLOWANCE;
    }

    /** A checked image and the server that gave it (null: the client cache). */
    private record Fetched(PublishedImage image, String server) {}

    /** A checked image ({@link Fetched}), or why there is none (a String). */
    private static Object fetch(DebuginfodClient client, ClientCache cache, ContentKey key, long length) {
        long limit = limit(length);
        ClientCache.Lookup l = cache.lookup(key.hex(), "executable");
        if (l instanceof ClientCache.Lookup.Hit h) {
            try {
                if (Files.size(h.file()) <= limit) {
                    return new Fetched(PublishedImage.parse(key, Files.readAllBytes(h.file())), null);
                }
            } catch (IOException | PublishedImage.Refused e) {
                // a bad cached copy: ask the servers
            }
        } else if (l instanceof ClientCache.Lookup.RecentMiss m) {
            return "the client cache " + cache.root() + " holds a miss for it (asked again in " + m.secondsLeft()
                    + " s)";
        }
        PublishedImage[] parsed = new PublishedImage[1];
        DebuginfodClient.Answer a = client.fetch(key.hex(), "executable", limit, b -> {
            try {
                parsed[0] = PublishedImage.parse(key, b);
                return null;
            } catch (PublishedImage.Refused r) {
                return r.getMessage();
            }
        });
        if (a instanceof DebuginfodClient.Answer.Found f) {
            return new Fetched(parsed[0], f.server());
        }
        return String.join("; ", ((DebuginfodClient.Answer.NotFound) a).servers());
    }

    private static Region withMetadata(Region r, RegionMetadata m) {
        return new Region(r.bootId(), r.address(), r.length(), r.validFrom(), r.validTo(), r.kind(), r.name(),
                r.key(), m);
    }

    /** Puts images, regions and links in the archive; "" when done, else why not (they are used unkept). */
    private static String keep(Feature.TextRegions named, Path dir, Path perfData, List<Region> add,
            Map<ContentKey, byte[]> images) {
        try (Archive a = Archive.open(dir)) {
            Recording rec = new Recording(named.recordingId(), perfData == null ? ""
                    : perfData.toAbsolutePath().normalize().toString(), named.bootId(), named.start(), named.end(),
                    System.currentTimeMillis());
            for (int i = 0; i < add.size(); i += BATCH) {
                List<Region> chunk = add.subList(i, Math.min(add.size(), i + BATCH));
                a.write(b -> {
                    if (Recordings.get(b, rec.id()).isEmpty()) {
                        Recordings.register(b, rec);
                    }
                    for (Region r : chunk) {
                        byte[] img = images.get(r.key());
                        if (img != null) {
                            b.put(img);
                        }
                        Recordings.link(b, rec.id(), RegionIndex.add(b, r));
                    }
                    return null;
                });
            }
            return "";
        } catch (BadInputException | IllegalArgumentException | java.io.UncheckedIOException e) {
            // a read-only or full archive, one another user owns: the images still serve this decode
            return "not kept in the archive " + dir + " (" + e.getMessage() + ")";
        }
    }
}

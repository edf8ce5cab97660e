package ptfence.gc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import ptfence.recording.Lease;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ContentKey;
import ptfence.store.Verifier;

/**
 * Captures and gc runs racing on one archive with random timing (issue 20): capture threads do what ptrec does
 * ({@link Recordings#begin}, batches of images put, regions added and linked, {@link Recordings#finish}, the lease
 * closed; some "crash" instead and let a short lease run out), a gc thread runs gc with a random {@code --keep} of
 * 0 to 20 ms (sometimes a tiny {@code --max-size}) and small sweep transactions, and a second gc thread races it.
 * After every round of the first gc thread a check asserts, in one snapshot, that every live capture's recording is
 * there with every region it committed, that every recording still kept has all of its committed regions (linked,
 * present, their images present), and that the archive verifies as {@code ptarchive verify} does: every page of
 * data.mdb (with the free-page lists a writer reuses), images re-hashed, every index entry and link.
 *
 * <p>Used by {@code GcRaceTest} (hundreds of rounds) and {@code GcRaceBench} (thousands).
 */
public final class GcRace {
    /** What a run found; {@code problems} holds the first few, one line each. */
    public record Result(long rounds, long captures, long crashed, long regionsCommitted, long lostRegions,
            long lostRecordings, long gcRuns, long recordingsDropped, long regionsFreed, long checks, long millis,
            List<String> problems) {}

    private static final Duration LEASE_TTL = Duration.ofMinutes(10);

    /** A capture as the checker sees it: LIVE from its begin's commit until its lease is closed, then DONE. */
    private static final class Capture {
        final String id;
        volatile boolean begun;
        volatile boolean live;
        final List<Long> committed = new CopyOnWriteArrayList<>();

        Capture(String id) {
            this.id = id;
        }
    }

    private GcRace() {}

    /**
     * Runs {@code rounds} rounds of the checking gc thread (each: a gc, then the check) against
     * {@code captureThreads} capture threads and one more gc thread, in an archive under {@code dir}.
     */
    public static Result run(Path dir, int rounds, int captureThreads, long seed) throws Exception {
        long t0 = System.nanoTime();
        Map<String, Capture> captures = new ConcurrentHashMap<>();
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong started = new AtomicLong();
        AtomicLong crashed = new AtomicLong();
        AtomicLong regionsCommitted = new AtomicLong();
        // each lost recording, each lost (recording, region) once, however many rounds see it missing
        Set<String> lostRegions = ConcurrentHashMap.newKeySet();
        Set<String> lostRecordings = ConcurrentHashMap.newKeySet();
        AtomicLong gcRuns = new AtomicLong();
        AtomicLong dropped = new AtomicLong();
        AtomicLong freed = new AtomicLong();
        long[] checks = {0};
        Files.createDirectories(dir);
        try (Archive archive = Archive.open(dir.resolve("archive"))) {
            List<byte[]> pool = new ArrayList<>();
            Random poolRnd = new Random(seed);
            for (int i = 0; i < 64; i++) {
                byte[] img = new byte[64 + poolRnd.nextInt(2000)];
                poolRnd.nextBytes(img);
                pool.add(img);
            }
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < captureThreads; t++) {
                long s = seed * 31 + t;
                threads.add(new Thread(() -> {
                    Random rnd = new Random(s);
                    try {
                        while (!stop.get()) {
                            capture(archive, dir, rnd, pool, captures, started, crashed, regionsCommitted, problems,
                                    lostRecordings);
                        }
                    } catch (Throwable e) {
                        problems.add("capture thread: " + e);
                        stop.set(true);
                    }
                }, "capture-" + t));
            }
            Thread otherGc = new Thread(() -> {
                Random rnd = new Random(seed * 17);
                try {
                    while (!stop.get()) {
                        gc(archive, rnd, gcRuns, dropped, freed);
                        sleepMicros(rnd.nextInt(3000));
                    }
                } catch (Throwable e) {
                    problems.add("second gc thread: " + e);
                    stop.set(true);
                }
            }, "gc-2");
            threads.add(otherGc);
            threads.forEach(Thread::start);
            Random rnd = new Random(seed * 7);
            long round = 0;
            try {
                for (; round < rounds && !stop.get(); round++) {
                    sleepMicros(rnd.nextInt(4000));
                    gc(archive, rnd, gcRuns, dropped, freed);
                    check(archive, captures, problems, lostRegions, lostRecordings, round);
                    checks[0]++;
                }
            } finally {
                stop.set(true);
                for (Thread t : threads) {
                    t.join();
                }
            }
            // and once more at rest: every kept recording whole, the archive verified
            check(archive, captures, problems, lostRegions, lostRecordings, round);
            checks[0]++;
            return new Result(round, started.get(), crashed.get(), regionsCommitted.get(), lostRegions.size(),
                    lostRecordings.size(), gcRuns.get(), dropped.get(), freed.get(), checks[0],
                    (System.nanoTime() - t0) / 1_000_000, List.copyOf(problems).subList(0, Math.min(10,
                            problems.size())));
        }
    }

    /** One capture, as ptrec makes it: begin, batches of regions over a few milliseconds, finish (or crash). */
    private static void capture(Archive archive, Path dir, Random rnd, List<byte[]> pool, Map<String, Capture> captures,
            AtomicLong started, AtomicLong crashed, AtomicLong regionsCommitted, ConcurrentLinkedQueue<String> problems,
            Set<String> lostRecordings) throws Exception {
        String id = UUID.randomUUID().toString();
        Path perfData = dir.resolve(id + ".data");
        boolean crash = rnd.nextInt(8) == 0;
        Capture c = new Capture(id);
        captures.put(id, c);
        // ptrec registers its perf.data's path before the file exists; the file comes a moment later
        Lease lease = Recordings.begin(archive, Recording.started(id, perfData.toString(), "boot", 0), "race " + id,
                crash ? Duration.ofMillis(5 + rnd.nextInt(30)) : LEASE_TTL);
        c.live = !crash; // a crashing capture's lease runs out on its own: the checker does not count on it
        c.begun = true;
        started.incrementAndGet();
        sleepMicros(rnd.nextInt(2000));
        Files.write(perfData, new byte[] {1});
        int batches = 1 + rnd.nextInt(5);
        for (int i = 0; i < batches; i++) {
            sleepMicros(rnd.nextInt(3000));
            int n = 1 + rnd.nextInt(4);
            List<byte[]> images = new ArrayList<>();
            for (int k = 0; k < n; k++) {
                if (rnd.nextInt(3) == 0) {
                    images.add(pool.get(rnd.nextInt(pool.size()))); // dedup with images gc may be sweeping
                } else {
                    byte[] img = new byte[32 + rnd.nextInt(1500)];
                    rnd.nextBytes(img);
                    images.add(img);
                }
            }
            long base = 0xffffffffa0000000L + (rnd.nextLong() & 0xfffffff000L);
            List<Long> ids;
            try {
                ids = archive.write(b -> {
                    List<Long> added = new ArrayList<>();
                    for (int k = 0; k < images.size(); k++) {
                        ContentKey key = b.put(images.get(k));
                        long rid = RegionIndex.add(b, new Region("boot", base + 0x1000L * k, images.get(k).length,
                                rnd.nextInt(1000), Region.OPEN, RegionKind.BPF_PROG, "prog_" + id.substring(0, 8) + "_"
                                + k, key, null));
                        Recordings.link(b, id, rid);
                        added.add(rid);
                    }
                    return added;
                });
            } catch (IllegalArgumentException e) {
                // Recordings.link: the recording is gone
                if (c.live) {
                    problems.add("live capture " + id + ": its recording was dropped (" + e.getMessage() + ")");
                    lostRecordings.add(id);
                    c.live = false; // it cannot go on
                }
                return;
            }
            c.committed.addAll(ids);
            regionsCommitted.addAndGet(ids.size());
        }
        if (crash) {
            crashed.incrementAndGet();
            return; // killed: no finish, the lease expires
        }
        if (!archive.write(b -> Recordings.finish(b, id, 1_000_000))) {
            problems.add("live capture " + id + ": its recording was gone at its end");
            lostRecordings.add(id);
        }
        // not live from before the lease is closed: a gc may drop the finished recording at once, and a check between
        // the two steps would otherwise count on a lease that is gone
        c.live = false;
        Recordings.closeLease(archive, lease.id());
    }

    private static void gc(Archive archive, Random rnd, AtomicLong gcRuns, AtomicLong dropped, AtomicLong freed) {
        Duration keep = Duration.ofMillis(new int[] {0, 0, 1, 5, 20}[rnd.nextInt(5)]);
        long maxBytes = rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(20_000) : 0;
        GcReport r = GarbageCollector.run(archive, new GcPolicy(keep, maxBytes, false, 1 + rnd.nextInt(40)));
        gcRuns.incrementAndGet();
        dropped.addAndGet(r.droppedRecordings().size());
        freed.addAndGet(r.regionsFreed());
    }

    /** The invariants, in one snapshot (see the class comment); counts what is missing. */
    private static void check(Archive archive, Map<String, Capture> captures, ConcurrentLinkedQueue<String> problems,
            Set<String> lostRegions, Set<String> lostRecordings, long round) {
        try {
            Archive.inspect(archive.directory(), true); // the page check, while the others write
        } catch (RuntimeException e) {
            problems.add("round " + round + ": verify's page check: " + e.getMessage());
        }
        // what each capture had committed, and whether it was live, before the snapshot ...
        Map<String, Boolean> liveBefore = new java.util.HashMap<>();
        Map<String, List<Long>> committed = new java.util.HashMap<>();
        for (Capture c : captures.values()) {
            liveBefore.put(c.id, c.live);
            committed.put(c.id, List.copyOf(c.committed));
        }
        archive.read(s -> {
            // ... and still live after it was taken: then its lease held throughout the snapshot
            Set<String> live = new HashSet<>();
            liveBefore.forEach((id, was) -> {
                if (was && captures.get(id).live) {
                    live.add(id);
                }
            });
            Set<String> present = new HashSet<>();
            Recordings.all(s).forEach(r -> present.add(r.id()));
            for (String id : live) {
                if (!present.contains(id) && lostRecordings.add(id)) {
                    problems.add("round " + round + ": live capture " + id + " has no recording");
                }
            }
            for (Map.Entry<String, List<Long>> e : committed.entrySet()) {
                if (!present.contains(e.getKey())) {
                    continue; // dropped while not live: --keep allows it
                }
                Set<Long> linked = new HashSet<>(Recordings.regionIds(s, e.getKey()));
                for (long rid : e.getValue()) {
                    Region r = RegionIndex.get(s, rid).orElse(null);
                    if ((r == null || !linked.contains(rid) || !s.hasImage(r.key()))
                            && lostRegions.add(e.getKey() + "/" + rid)) {
                        problems.add("round " + round + ": recording " + e.getKey() + (live.contains(e.getKey())
                                ? " (live)" : " (kept)") + " lost region " + Region.idHex(rid) + (r == null
                                ? "" : !linked.contains(rid) ? " (unlinked)" : " (its image)"));
                    }
                }
            }
            List<String> damage = new ArrayList<>();
            Verifier.images(s, damage::add);
            RegionIndex.check(s, damage::add);
            Recordings.check(s, damage::add);
            damage.forEach(d -> problems.add("round " + round + ": verify: " + d));
            return null;
        });
        // a capture that is done and whose recording is gone no longer needs watching
        captures.values().removeIf(c -> c.begun && !c.live && archive.read(s -> Recordings.get(s, c.id).isEmpty()));
    }

    private static void sleepMicros(long micros) throws InterruptedException {
        if (micros > 0) {
            Thread.sleep(micros / 1000, (int) (micros % 1000) * 1000);
        }
    }
}

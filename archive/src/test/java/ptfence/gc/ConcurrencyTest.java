package ptfence.gc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.recording.Lease;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.ImageAt;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

/**
 * A capture-like writer, a looping gc and several readers on one archive for a few seconds. No reader
 * may find a region whose image is missing, and the writer (which puts images in one transaction and
 * adds regions for them in the next, as ptrec does) must never find its images gone.
 */
class ConcurrencyTest {
    private static final long RUN_MILLIS = 5_000;

    @TempDir
    Path tmp;

    @Test
    void writerGcAndReadersTogether() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        AtomicLong reads = new AtomicLong();
        AtomicLong regionsWritten = new AtomicLong();
        AtomicLong gcRuns = new AtomicLong();
        AtomicLong freed = new AtomicLong();
        try (Archive archive = Archive.open(tmp.resolve("a"))) {
            Thread writer = new Thread(() -> {
                Random rnd = new Random(1);
                List<byte[]> recent = new ArrayList<>();
                try {
                    for (int rec = 0; !stop.get(); rec++) {
                        Path perf = Files.createFile(tmp.resolve("perf-" + rec + ".data"));
                        String id = "rec-" + rec;
                        // One capture session: a lease naming the recording from its begin until it has linked
                        // everything.
                        Lease lease = Recordings.begin(archive, Recording.started(id, perf.toString(), "boot", 0),
                                "test writer " + rec, Duration.ofMinutes(5));
                        List<byte[]> images = new ArrayList<>();
                        for (int i = 0; i < 20; i++) {
                            // Some images repeat earlier ones: dedup puts of images gc may be sweeping.
                            if (!recent.isEmpty() && rnd.nextInt(4) == 0) {
                                images.add(recent.get(rnd.nextInt(recent.size())));
                            } else {
                                byte[] img = new byte[100 + rnd.nextInt(3000)];
                                rnd.nextBytes(img);
                                images.add(img);
                            }
                        }
                        List<ContentKey> keys = archive.putAll(images);
                        int r = rec;
                        archive.write(b -> {
                            for (int i = 0; i < keys.size(); i++) {
                                long rid = RegionIndex.add(b, new Region("boot", 0xffffffffc0000000L + i * 0x10000L,
                                        images.get(i).length, r * 100L, r * 100L + 100, RegionKind.BPF_PROG,
                                        "prog" + i, keys.get(i), null));
                                Recordings.link(b, id, rid);
                            }
                            Recordings.finish(b, id, r * 100L + 100);  // the capture ends
                            return null;
                        });
                        Recordings.closeLease(archive, lease.id());
                        regionsWritten.addAndGet(keys.size());
                        recent.addAll(images);
                        if (recent.size() > 200) {
                            recent.subList(0, 100).clear();
                        }
                        if (rec >= 3) {
                            Files.deleteIfExists(tmp.resolve("perf-" + (rec - 3) + ".data"));  // gc drops it
                        }
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            }, "writer");
            Thread gc = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        // ended captures go after 50 ms (their perf.data, deleted below, is gone only within gc's
                        // grace period)
                        GcReport r = GarbageCollector.run(archive, new GcPolicy(Duration.ofMillis(50), 0, false, 7));
                        gcRuns.incrementAndGet();
                        freed.addAndGet(r.imagesFreed());
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            }, "gc");
            List<Thread> readers = new ArrayList<>();
            for (int n = 0; n < 3; n++) {
                int seed = n;
                readers.add(new Thread(() -> {
                    Random rnd = new Random(100 + seed);
                    try {
                        while (!stop.get()) {
                            archive.read(s -> {
                                List<Recording> recs = Recordings.all(s);
                                if (recs.isEmpty()) {
                                    return null;
                                }
                                Recording rec = recs.get(rnd.nextInt(recs.size()));
                                for (Region r : Recordings.regions(s, rec.id())) {
                                    ImageAt at = RegionIndex.bytesAt(s, "boot", r.address() + rnd.nextInt((int) r.length()),
                                            r.validFrom()).orElseThrow(() -> new AssertionError("region " + r.idHex()
                                                    + " found by recording but not by address"));
                                    assertEquals(r.key(), ContentKey.of(at.bytes()));
                                    reads.incrementAndGet();
                                }
                                for (Region r : RegionIndex.byName(s, "prog" + rnd.nextInt(20))) {
                                    s.requireImage(r.key());
                                    reads.incrementAndGet();
                                }
                                return null;
                            });
                        }
                    } catch (Throwable t) {
                        failures.add(t);
                    }
                }, "reader-" + n));
            }
            writer.start();
            gc.start();
            readers.forEach(Thread::start);
            Thread.sleep(RUN_MILLIS);
            stop.set(true);
            writer.join();
            gc.join();
            for (Thread t : readers) {
                t.join();
            }
            if (!failures.isEmpty()) {
                AssertionError e = new AssertionError(failures.size() + " failure(s), first: " + failures.peek());
                failures.forEach(e::addSuppressed);
                throw e;
            }
            assertTrue(gcRuns.get() > 2 && freed.get() > 0, "gc ran " + gcRuns + " times, freed " + freed);
            assertTrue(reads.get() > 100, "readers read " + reads);
            assertTrue(regionsWritten.get() > 100, "writer wrote " + regionsWritten);
            List<String> problems = new ArrayList<>();
            archive.read(s -> {
                ptfence.store.Verifier.images(s, problems::add);
                RegionIndex.check(s, problems::add);
                Recordings.check(s, problems::add);
                return null;
            });
            assertEquals(List.of(), problems);
        }
    }
}

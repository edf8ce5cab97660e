package ptfence.gc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.recording.PinTarget;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ContentKey;
import ptfence.store.Table;

class GarbageCollectorTest {
    static final long DAY = 86_400_000L;
    static final long NOW = 1_800_000_000_000L;

    @TempDir
    Path tmp;
    Archive archive;
    Path perfData;

    @BeforeEach
    void open() throws Exception {
        archive = Archive.open(tmp.resolve("archive"));
        perfData = Files.createFile(tmp.resolve("perf.data"));
    }

    @org.junit.jupiter.api.AfterEach
    void close() {
        archive.close();
    }

    static byte[] image(int seed, int len) {
        byte[] b = new byte[len];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** Registers a recording created {@code ageDays} before NOW with one region per image; returns region ids. */
    List<Long> recording(String id, int ageDays, String path, byte[]... images) {
        return archive.write(b -> {
            Recordings.register(b, new Recording(id, path, "boot", 0, 1000, NOW - ageDays * DAY));
            List<Long> ids = new java.util.ArrayList<>();
            long addr = 0x10000L * (id.hashCode() & 0xff);
            for (byte[] img : images) {
                long rid = RegionIndex.add(b, new Region("boot", addr, img.length, 0, Region.OPEN,
                        RegionKind.BPF_PROG, id + "_" + ids.size(), b.put(img), null));
                Recordings.link(b, id, rid);
                ids.add(rid);
                addr += 0x1000;
            }
            return ids;
        });
    }

    long count(Table t) {
        return archive.read(s -> s.count(t));
    }

    boolean has(byte[] img) {
        return archive.contains(ContentKey.of(img));
    }

    @Test
    void dropsOldRecordingsAndWhatOnlyTheyNeedKeepsSharedImages() {
        byte[] shared = image(1, 1000);
        byte[] oldOnly = image(2, 2000);
        byte[] newOnly = image(3, 3000);
        byte[] orphan = image(4, 4000);
        recording("old", 40, perfData.toString(), shared, oldOnly);
        recording("new", 1, perfData.toString(), shared, newOnly);
        archive.put(orphan);

        GcReport dry = GarbageCollector.run(archive, GcPolicy.defaults().asDryRun(), NOW);
        assertTrue(dry.dryRun());
        assertEquals(List.of("old"), dry.droppedRecordings().stream().map(GcReport.Dropped::id).toList());
        assertEquals(2, dry.imagesFreed());
        assertEquals(6000, dry.bytesFreed());
        assertEquals(2, count(Table.RECORDINGS), "dry run changes nothing");
        assertTrue(has(orphan) && has(oldOnly));

        GcReport r = GarbageCollector.run(archive, GcPolicy.defaults(), NOW);
        assertEquals(2, r.regionsFreed());
        assertEquals(2, r.imagesFreed());
        assertEquals(6000, r.bytesFreed());
        assertEquals(2, r.keptImages());
        assertEquals(4000, r.keptBytes());
        assertTrue(has(shared) && has(newOnly));
        assertFalse(has(oldOnly) || has(orphan));
        assertEquals(2, archive.read(s -> Recordings.regions(s, "new")).size());
        assertTrue(archive.read(s -> Recordings.get(s, "old")).isEmpty());

        GcReport again = GarbageCollector.run(archive, GcPolicy.defaults(), NOW);
        assertEquals(0, again.imagesFreed() + again.regionsFreed() + again.droppedRecordings().size(), "idempotent");
    }

    /** A program's BTF is content in the store like an image: kept while any kept region needs it, then freed. */
    @Test
    void programBtfStaysWhileARegionNeedsIt() {
        byte[] btf = image(9, 700);
        ptfence.region.BpfMetadata meta = new ptfence.region.BpfMetadata(1, "00000000000000aa", "p", 1, null, null,
                null, 0, null, 0, null, 0, 5, btf, null, 0, 0);
        for (String[] rec : new String[][] {{"oldbtf", "40"}, {"newbtf", "1"}}) {
            archive.write(b -> {
                Recordings.register(b, new Recording(rec[0], perfData.toString(), "boot", 0, 1000,
                        NOW - Integer.parseInt(rec[1]) * DAY));
                byte[] img = image(rec[0].hashCode(), 64);
                Recordings.link(b, rec[0], RegionIndex.add(b, new Region("boot", 0x1000L * rec[1].length(), 64, 0,
                        Region.OPEN, RegionKind.BPF_PROG, rec[0], b.put(img), meta)));
                return null;
            });
        }
        GarbageCollector.run(archive, GcPolicy.defaults(), NOW);
        assertTrue(has(btf), "the newer recording's region still needs it");
        GcReport r = GarbageCollector.run(archive, new GcPolicy(Duration.ofHours(1), 0, false, 500), NOW);
        assertEquals(1, r.regionsFreed());
        assertEquals(2, r.imagesFreed(), "the region's image and the BTF");
        assertFalse(has(btf));
    }

    @Test
    void recordingWhosePerfDataIsGoneIsDroppedUnlessPinned() {
        byte[] a = image(5, 100);
        byte[] b = image(6, 100);
        recording("gone", 1, tmp.resolve("missing.data").toString(), a);
        recording("gone-pinned", 1, tmp.resolve("missing2.data").toString(), b);
        archive.write(x -> {
            Recordings.pin(x, new PinTarget(PinTarget.Type.RECORDING, "gone-pinned"));
            return null;
        });
        GcReport r = GarbageCollector.run(archive, GcPolicy.defaults(), NOW);
        assertEquals(List.of("gone"), r.droppedRecordings().stream().map(GcReport.Dropped::id).toList());
        assertTrue(r.droppedRecordings().get(0).reason().contains("perf.data gone"));
        assertFalse(has(a));
        assertTrue(has(b));
        // Unpinned, it goes on the next run.
        archive.write(x -> Recordings.unpin(x, new PinTarget(PinTarget.Type.RECORDING, "gone-pinned")));
        GarbageCollector.run(archive, GcPolicy.defaults(), NOW);
        assertFalse(has(b));
        assertEquals(0, count(Table.REGIONS));
        assertEquals(0, count(Table.REGION_BY_ADDR) + count(Table.REGION_BY_NAME) + count(Table.REGION_TOUCH)
                + count(Table.RECORDING_REGIONS) + count(Table.IMAGE_INFO));
    }

    // issue 20: 'ptarchive import bundle --perf-data /typo' then gc dropped the import at once as "perf.data gone"
    @Test
    void perfDataGoneIsNotAppliedWithinTheGracePeriod() {
        byte[] a = image(50, 100);
        archive.write(b -> {
            Recordings.register(b, new Recording("imported", tmp.resolve("on-its-way.data").toString(), "boot", 0,
                    1000, NOW - GcPolicy.PERF_DATA_GRACE.toMillis() + 60_000));
            Recordings.link(b, "imported", RegionIndex.add(b, new Region("boot", 0x1000, a.length, 0, Region.OPEN,
                    RegionKind.BPF_PROG, "imported_0", b.put(a), null)));
            return null;
        });
        GcReport r = GarbageCollector.run(archive, GcPolicy.defaults(), NOW);
        assertEquals(List.of(), r.droppedRecordings(), "59 minutes old: its perf.data may still be on its way");
        assertTrue(has(a));
        GcReport later = GarbageCollector.run(archive, GcPolicy.defaults(), NOW + 120_000);
        assertEquals(List.of("imported"), later.droppedRecordings().stream().map(GcReport.Dropped::id).toList());
        assertTrue(later.droppedRecordings().get(0).reason().contains("perf.data gone"));
        assertFalse(has(a));
    }

    // issue 20: gc --keep=1s two seconds into 'ptrec --sideband-only -a' dropped the running capture's recording
    @Test
    void aLiveCapturesRecordingIsKeptWhateverKeepSaysUntilItsLeaseEnds() {
        byte[] a = image(51, 100);
        String perf = tmp.resolve("not-written-yet.data").toString(); // a capture's file may not exist yet
        long now = System.currentTimeMillis();
        var lease = Recordings.begin(archive, new Recording("live", perf, "boot", 0, Recording.RUNNING,
                now - 40 * DAY), "test capture", Duration.ofHours(1));
        archive.write(b -> {
            Recordings.link(b, "live", RegionIndex.add(b, new Region("boot", 0x2000, a.length, 0, Region.OPEN,
                    RegionKind.BPF_PROG, "live_0", b.put(a), null)));
            return null;
        });
        for (GcPolicy p : List.of(new GcPolicy(Duration.ZERO, 0, false, 1), new GcPolicy(Duration.ZERO, 1, false, 1))) {
            GcReport r = GarbageCollector.run(archive, p, now + 60_000);
            assertEquals(List.of(), r.droppedRecordings(), "--keep 0 and --max-size 1 leave a live recording");
            assertTrue(has(a));
        }
        archive.write(b -> Recordings.finish(b, "live", 5000));
        assertTrue(GarbageCollector.run(archive, new GcPolicy(Duration.ZERO, 0, false, 1), now + 60_000)
                .droppedRecordings().isEmpty(), "ended, perf.data gone, but the lease still holds");
        Recordings.closeLease(archive, lease.id());
        GcReport after = GarbageCollector.run(archive, new GcPolicy(Duration.ZERO, 0, false, 1), now + 60_000);
        assertEquals(List.of("live"), after.droppedRecordings().stream().map(GcReport.Dropped::id).toList());
        assertFalse(has(a));
    }

    // issue 20: a flipped bit made gc free regions and images kept recordings still needed
    @Test
    void gcDeletesNothingFromAnArchiveWithDamagedRecords() {
        byte[] a = image(52, 100);
        recording("old", 40, "", a);
        recording("new", 0, "", image(53, 100));
        // a link to a region that is not there (what a flipped bit in a link key looks like)
        archive.write(b -> {
            b.putRaw(Table.RECORDING_REGIONS, java.nio.ByteBuffer.allocate(4 + 8).put("new".getBytes())
                    .put((byte) 0).putLong(0x1234).array(), new byte[0]);
            return null;
        });
        long regions = count(Table.REGIONS);
        for (GcPolicy p : List.of(GcPolicy.defaults(), GcPolicy.defaults().asDryRun())) {
            ptfence.cli.BadInputException e = org.junit.jupiter.api.Assertions.assertThrows(
                    ptfence.cli.BadInputException.class, () -> GarbageCollector.run(archive, p, NOW));
            assertTrue(e.getMessage().contains("damaged (recording new needs region 0000000000001234 which is "
                    + "missing)") && e.getMessage().contains("gc deletes nothing"), e.getMessage());
        }
        assertEquals(regions, count(Table.REGIONS));
        assertEquals(2, count(Table.RECORDINGS));
        assertTrue(has(a), "the old recording's image waits for a verified archive");
    }

    @Test
    void pinnedImagesAndNamesSurvive() {
        byte[] a = image(7, 100);
        byte[] b = image(8, 100);
        byte[] c = image(9, 100);
        recording("r", 100, "", a, b);
        ContentKey kc = archive.put(c);
        archive.write(x -> {
            Recordings.pin(x, new PinTarget(PinTarget.Type.IMAGE, kc.hex()));
            Recordings.pin(x, new PinTarget(PinTarget.Type.NAME, "r_1"));
            return null;
        });
        GarbageCollector.run(archive, GcPolicy.defaults(), NOW);
        assertFalse(has(a));
        assertTrue(has(b), "region named r_1 is pinned, so its image stays");
        assertTrue(has(c));
        assertEquals(1, archive.read(s -> RegionIndex.byName(s, "r_1")).size());
    }

    @Test
    void liveLeaseProtectsWhatTheCaptureWroteExpiredLeaseDoesNot() {
        byte[] before = image(10, 100);
        archive.put(before);
        var lease = Recordings.openLease(archive, "test capture", Duration.ofHours(1));
        byte[] during = image(11, 100);
        archive.put(during);
        GcReport r = GarbageCollector.run(archive, GcPolicy.defaults(), System.currentTimeMillis());
        assertFalse(has(before), "put before the lease was opened, referenced by nothing");
        assertTrue(has(during), "held by the live lease");
        assertEquals(1, r.imagesFreed());
        // The capture crashed: its lease runs out; gc then frees the image and the lease.
        GcReport later = GarbageCollector.run(archive, GcPolicy.defaults(),
                System.currentTimeMillis() + Duration.ofHours(2).toMillis());
        assertFalse(has(during));
        assertEquals(1, later.leasesExpired());
        assertEquals(0, count(Table.LEASES));
        assertFalse(Recordings.renewLease(archive, lease.id(), Duration.ofHours(1)), "expired lease is gone");
    }

    @Test
    void maxSizeDropsOldestRecordingsFirstButNeverPinnedOnes() {
        recording("r1", 5, "", image(20, 10_000));
        recording("r2", 4, "", image(21, 10_000));
        recording("r3", 3, "", image(22, 10_000));
        recording("r4", 2, "", image(23, 10_000));
        archive.write(x -> {
            Recordings.pin(x, new PinTarget(PinTarget.Type.RECORDING, "r1"));
            return null;
        });
        GcReport r = GarbageCollector.run(archive, new GcPolicy(GcPolicy.DEFAULT_KEEP, 25_000, false, 2), NOW);
        assertEquals(List.of("r2", "r3"), r.droppedRecordings().stream().map(GcReport.Dropped::id).toList());
        assertEquals(20_000, r.keptBytes());
        assertTrue(has(image(20, 10_000)) && has(image(23, 10_000)));
        assertFalse(has(image(21, 10_000)) || has(image(22, 10_000)));
    }

    @Test
    void runningRecordingsAreOnlyDroppedByAgeSinceTheirPerfDatasLastWrite() throws Exception {
        byte[] live = image(40, 10_000);
        byte[] crashed = image(41, 10_000);
        Path livePerf = Files.createFile(tmp.resolve("live.data"));
        Path crashedPerf = Files.createFile(tmp.resolve("crashed.data"));
        Files.setLastModifiedTime(crashedPerf, java.nio.file.attribute.FileTime.fromMillis(NOW - 40 * DAY));
        Files.setLastModifiedTime(livePerf, java.nio.file.attribute.FileTime.fromMillis(NOW - DAY / 24));
        for (String id : new String[] {"live", "crashed", "starting"}) {
            byte[] img = id.equals("live") ? live : id.equals("crashed") ? crashed : image(42, 10);
            String path = id.equals("live") ? livePerf.toString() : id.equals("crashed") ? crashedPerf.toString()
                    : tmp.resolve("not-yet-created.data").toString();
            archive.write(b -> {
                Recordings.register(b, new Recording(id, path, "boot", 0, Recording.RUNNING,
                        id.equals("starting") ? NOW : NOW - 40 * DAY));
                Recordings.link(b, id, RegionIndex.add(b, new Region("boot", id.hashCode() & 0xffff, img.length, 0,
                        Region.OPEN, RegionKind.BPF_PROG, id, b.put(img), null)));
                return null;
            });
        }
        GcReport r = GarbageCollector.run(archive, new GcPolicy(GcPolicy.DEFAULT_KEEP, 1, false, 10), NOW);
        assertEquals(List.of("crashed"), r.droppedRecordings().stream().map(GcReport.Dropped::id).toList(),
                "over --max-size and created 40 days ago, but live and starting captures stay");
        assertTrue(has(live));
        assertFalse(has(crashed));
    }

    @Test
    void keepZeroDropsEverythingUnpinned() {
        recording("a", 0, "", image(30, 10));
        GcReport r = GarbageCollector.run(archive, new GcPolicy(Duration.ZERO, 0, false, 1), NOW + 1);
        assertEquals(1, r.droppedRecordings().size());
        assertEquals(0, count(Table.IMAGES));
    }
}

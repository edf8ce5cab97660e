package ptfence.publish;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Progress;
import ptfence.region.Region;
import ptfence.store.ContentKey;

/**
 * {@code gc --published}: what no recording published within the keep window names goes, nothing younger than the
 * grace goes, and a publish running on another host at the same time loses nothing, in loops with random timing.
 * Old trees are made by setting files' times back (a month in seconds is not a test).
 */
class TreeGcTest {
    static final Duration KEEP = Duration.ofDays(30);
    static final Duration GRACE = TreeGc.MIN_GRACE;
    static final long DAY = Duration.ofDays(1).toMillis();

    @TempDir
    Path tmp;

    HostArchive host(String name) throws IOException {
        Files.createDirectories(tmp.resolve(name));
        return new HostArchive(tmp.resolve(name).resolve("archive"), "boot-" + name);
    }

    static void age(Path file, long ms) throws IOException {
        Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis() - ms));
    }

    static void ageAll(PublishTree tree, long ms) throws IOException {
        try (Stream<Path> s = Files.walk(tree.root())) {
            for (Path p : s.filter(Files::isRegularFile).toList()) {
                age(p, ms);
            }
        }
    }

    static Set<ContentKey> keys(List<Region> regions) {
        Set<ContentKey> out = new HashSet<>();
        regions.forEach(r -> out.add(r.key()));
        return out;
    }

    @Test
    void whatNoRecentRecordingNamesGoesAndNothingYoungerThanTheGrace() throws Exception {
        HostArchive a = host("a").record("old", 1, 12, 500, 0).record("shared", 1, 4, 500, 0)
                .record("new", 2, 6, 500, 0);
        PublishTree tree = PublishTree.create(tmp.resolve("tree"), false);
        PublishTest.publish(a, tree, Publisher.Selection.all());
        ageAll(tree, 40 * DAY);                            // everything published 40 days ago ...
        PublishTest.publish(a, tree, new Publisher.Selection(Long.MIN_VALUE, "new"));   // ... "new" again today
        PublishTest.publish(a, tree, new Publisher.Selection(Long.MIN_VALUE, "shared"));
        age(tree.manifestPath("shared"), 29 * DAY);        // within the keep window
        // an object nobody names but published half an hour ago (inside the grace), and a killed publish's leftovers
        byte[] young = {1, 2, 3};
        Region y = ImageObjectTest.region(young, 0x1000, 1, "young");
        tree.putObject(y.key(), ImageObject.write(y.key(), young, List.of(y)));
        age(tree.objectPath(y.key()), Duration.ofMinutes(30).toMillis());
        Path staleTemp = Files.write(tree.objectPath(y.key()).resolveSibling(".executable.dead.tmp"), young);
        age(staleTemp, 2 * DAY);
        Path freshTemp = Files.write(tree.root().resolve(PublishTree.RECORDINGS).resolve(".x.json.1.tmp"), young);

        TreeGc.Report dry = TreeGc.run(tree, KEEP, GRACE, true, Progress.NONE);
        Set<ContentKey> oldOnly = keys(a.recordings.get("old"));
        oldOnly.removeAll(keys(a.recordings.get("shared")));
        assertEquals(1, dry.manifestsRemoved());
        assertEquals(oldOnly.size(), dry.objectsRemoved());
        assertTrue(Files.exists(tree.manifestPath("old")), "a dry run removes nothing");

        TreeGc.Report r = TreeGc.run(tree, KEEP, GRACE, false, Progress.NONE);
        assertEquals(new TreeGc.Report(false, 2, 1, 4 + 6 + 1, oldOnly.size(), r.bytesFreed(), 0, 1, List.of()), r);
        assertFalse(Files.exists(tree.manifestPath("old")));
        for (ContentKey k : a.images.keySet()) {
            assertEquals(!oldOnly.contains(k), Files.exists(tree.objectPath(k)), k.hex());
            assertEquals(!oldOnly.contains(k), Files.isDirectory(tree.objectPath(k).getParent()), "its directory");
        }
        assertTrue(Files.exists(tree.objectPath(y.key())), "younger than the grace");
        assertFalse(Files.exists(staleTemp));
        assertTrue(Files.exists(freshTemp), "a temporary file of a publish that may be running");
        assertEquals(r.objectsKept(), TreeGc.run(tree, KEEP, GRACE, false, Progress.NONE).objectsKept(),
                "a second run finds nothing more");
    }

    @Test
    void aGraceShorterThanAnHourIsRefusedAndOneGcRunsAtATime() throws Exception {
        PublishTree tree = PublishTree.create(tmp.resolve("tree"), false);
        assertThrows(IllegalArgumentException.class,
                () -> TreeGc.run(tree, KEEP, Duration.ofMinutes(30), false, Progress.NONE));
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(tree.root().resolve(TreeGc.LOCK),
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE);
                java.nio.channels.FileLock held = ch.lock()) {
            ptfence.cli.BadInputException e = assertThrows(ptfence.cli.BadInputException.class,
                    () -> TreeGc.run(tree, KEEP, GRACE, false, Progress.NONE));
            assertTrue(e.getMessage().contains("another gc --published is running"), e.getMessage());
        }
    }

    /**
     * Host b publishes a new recording that names images only an expired recording named, while gc runs over the
     * tree: whatever the interleaving (40 rounds, random delays; most rounds overlap), every image the new manifest
     * names is in the tree afterwards, whole; and the expired recording's other images are gone.
     */
    @Test
    void aPublishRunningDuringGcLosesNothing() throws Exception {
        HostArchive a = host("a").record("expired", 3, 90, 400, 0);
        HostArchive b = host("b").record("fresh", 3, 60, 400, 0); // the first 60 of the same programs
        Set<ContentKey> named = keys(b.recordings.get("fresh"));
        Random rnd = new Random(17);
        int overlapped = 0;
        long spared = 0;
        for (int round = 0; round < 40; round++) {
            PublishTree tree = PublishTree.create(tmp.resolve("tree" + round), false);
            PublishTest.publish(a, tree, Publisher.Selection.all());
            ageAll(tree, 40 * DAY);
            long[] began = new long[2];
            long[] finished = new long[2];
            TreeGc.Report[] report = new TreeGc.Report[1];
            int[] delays = {rnd.nextInt(10_000), rnd.nextInt(10_000)};
            PublishTest.atOnce(i -> {
                PublishTest.busyWait(delays[i]);
                began[i] = System.nanoTime();
                if (i == 0) {
                    report[0] = TreeGc.run(tree, KEEP, GRACE, false, Progress.NONE);
                } else {
                    PublishTest.publish(b, tree, Publisher.Selection.all());
                }
                finished[i] = System.nanoTime();
            }, 2);
            if (began[0] < finished[1] && began[1] < finished[0]) {
                overlapped++;
            }
            spared += report[0].spared();
            for (ContentKey k : named) {
                Path p = tree.objectPath(k);
                assertTrue(Files.exists(p), "round " + round + ": " + k.hex() + " named by 'fresh' is gone");
                byte[] got = Files.readAllBytes(p);
                assertTrue(java.util.Arrays.equals(got, a.expectedObject(k))
                        || java.util.Arrays.equals(got, b.expectedObject(k)), "round " + round + ": whole");
            }
            TreeGc.run(tree, KEEP, GRACE, false, Progress.NONE); // after both: the expired-only images go
            for (ContentKey k : a.images.keySet()) {
                assertEquals(named.contains(k), Files.exists(tree.objectPath(k)), "round " + round);
            }
            assertTrue(Files.exists(tree.manifestPath("fresh")));
            assertFalse(Files.exists(tree.manifestPath("expired")));
        }
        assertTrue(overlapped >= 10, "gc and publish ran at the same time in " + overlapped + " of 40 rounds (" + spared
                + " objects spared by a mark made while gc ran)");
    }

    @Test
    void manifestsRoundTripAndMalformedOnesAreNamed() {
        ptfence.recording.Recording rec = new ptfence.recording.Recording("id \"with\"\nodd chars", "", "boot", 5,
                ptfence.recording.Recording.RUNNING, 1234);
        PublishedRecording m = new PublishedRecording(rec, "host", new java.util.TreeSet<>(List.of(
                ContentKey.of(new byte[] {1}), ContentKey.of(new byte[] {2}))));
        PublishedRecording back = PublishedRecording.parse(m.toJson(), "m");
        assertEquals(m, back);
        assertArrayEquals(m.toJson(), back.toJson());
        for (String bad : List.of("", "{}", "{\"format\":\"ptfence.published/1\"}", "[1,2]",
                "{\"format\":\"ptfence.published/1\",\"recording\":\"r\",\"host\":\"h\",\"boot_id\":\"b\",\"start\":1,"
                        + "\"end\":null,\"created_ms\":2,\"images\":[\"zz\"]}")) {
            ptfence.cli.BadInputException e = assertThrows(ptfence.cli.BadInputException.class,
                    () -> PublishedRecording.parse(bad.getBytes(), "tree/recordings/x.json"));
            assertTrue(e.getMessage().startsWith("tree/recordings/x.json: "), e.getMessage());
        }
    }
}

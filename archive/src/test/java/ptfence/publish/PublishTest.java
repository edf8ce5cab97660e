package ptfence.publish;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Progress;
import ptfence.store.Archive;
import ptfence.store.ChildJvm;
import ptfence.store.ContentKey;

/**
 * Publishing is idempotent and content-addressed: one object per image however often and from however many hosts it
 * is published, each whole (never half written, even by a publish killed with SIGKILL), each the exact bytes its
 * publisher made.
 */
class PublishTest {
    @TempDir
    Path tmp;

    static Publisher.Report publish(HostArchive host, PublishTree tree, Publisher.Selection s) {
        try (Archive a = Archive.openReadOnly(host.dir)) {
            return Publisher.publish(a, tree, s, host.boot, Progress.NONE);
        }
    }

    @Test
    void aSecondPublishWritesNothingAndEveryObjectIsTheOneItsArchiveMakes() throws Exception {
        HostArchive a = new HostArchive(tmp.resolve("a/archive"), "boot-a");
        Files.createDirectories(tmp.resolve("a"));
        a.record("rec-1", 1, 20, 3000, 0).record("rec-2", 2, 10, 300, 0);
        PublishTree tree = PublishTree.create(tmp.resolve("tree"), true);
        Publisher.Report first = publish(a, tree, Publisher.Selection.all());
        assertEquals(new Publisher.Report(2, 30, 30, 0, first.bytes(), 0), first);
        for (ContentKey k : a.images.keySet()) {
            assertArrayEquals(a.expectedObject(k), Files.readAllBytes(tree.objectPath(k)), k.hex());
        }
        for (String id : List.of("rec-1", "rec-2")) {
            PublishedRecording m = PublishedRecording.parse(Files.readAllBytes(tree.manifestPath(id)), id);
            assertEquals(id, m.recording().id());
            assertEquals("boot-a", m.recording().bootId());
            Set<ContentKey> keys = new HashSet<>();
            a.recordings.get(id).forEach(r -> keys.add(r.key()));
            assertEquals(keys, m.images());
        }
        List<Long> mtimes = mtimes(tree);
        Publisher.Report second = publish(a, tree, Publisher.Selection.all());
        assertEquals(new Publisher.Report(2, 30, 0, 30, 0, 0), second);
        assertEquals(mtimes, mtimes(tree), "nothing rewritten or re-marked within " + Publisher.REFRESH);
        assertEquals(0, temps(tree).size());
    }

    @Test
    void sinceAndRecordingSelectWhatIsPublished() throws Exception {
        HostArchive a = new HostArchive(tmp.resolve("a/archive"), "boot-a");
        Files.createDirectories(tmp.resolve("a"));
        a.record("old", 1, 5, 100, Duration.ofDays(3).toMillis()).record("new", 2, 7, 100, 0);
        Files.setLastModifiedTime(tmp.resolve("a/old.perf.data"), java.nio.file.attribute.FileTime.fromMillis(
                System.currentTimeMillis() - Duration.ofDays(3).toMillis()));
        PublishTree tree = PublishTree.create(tmp.resolve("tree"), false);
        Publisher.Report r = publish(a, tree, new Publisher.Selection(System.currentTimeMillis()
                - Duration.ofDays(1).toMillis(), null));
        assertEquals(1, r.recordings());
        assertEquals(7, r.written());
        assertTrue(Files.exists(tree.manifestPath("new")) && !Files.exists(tree.manifestPath("old")));
        r = publish(a, tree, new Publisher.Selection(Long.MIN_VALUE, "old"));
        assertEquals(new Publisher.Report(1, 5, 5, 0, r.bytes(), 0), r);
    }

    /**
     * Two hosts that loaded the same programs publish into one tree at the same moment, 40 times with random
     * timing: each image is one object, whole, made by one of the two (its bytes are the same; only the regions
     * beside them differ), both manifests are there, no temporary file is left.
     */
    @Test
    void twoHostsPublishingTheSameImagesAtOnce() throws Exception {
        HostArchive a = new HostArchive(tmp.resolve("a/archive"), "boot-a");
        HostArchive b = new HostArchive(tmp.resolve("b/archive"), "boot-b");
        Files.createDirectories(tmp.resolve("a"));
        Files.createDirectories(tmp.resolve("b"));
        a.record("rec-a", 7, 60, 2000, 0);
        b.record("rec-b", 7, 60, 2000, 0);
        assertEquals(a.images.keySet(), b.images.keySet(), "the same programs, the same images");
        Random rnd = new Random(11);
        for (int round = 0; round < 40; round++) {
            PublishTree tree = PublishTree.create(tmp.resolve("tree" + round), false);
            long[] written = new long[2];
            HostArchive[] hosts = {a, b};
            int[] delays = {rnd.nextInt(3000), rnd.nextInt(3000)};
            atOnce(host -> {
                busyWait(delays[host]);
                written[host] = publish(hosts[host], tree, Publisher.Selection.all()).written();
            }, 2);
            assertEquals(60, written[0] + written[1], "round " + round + ": each image written once");
            for (ContentKey k : a.images.keySet()) {
                byte[] got = Files.readAllBytes(tree.objectPath(k));
                assertTrue(Arrays.equals(got, a.expectedObject(k)) || Arrays.equals(got, b.expectedObject(k)),
                        "round " + round + ": " + k.hex() + " is one host's object");
            }
            assertTrue(Files.exists(tree.manifestPath("rec-a")) && Files.exists(tree.manifestPath("rec-b")));
            assertEquals(List.of(), temps(tree), "round " + round);
        }
    }

    /**
     * A publish in its own JVM is killed with SIGKILL while it writes objects (when a random share of them, 5 to 90
     * %, is there), 5 times: every object in the tree is whole (the exact bytes its archive makes), at most temporary
     * files are left, and publishing again completes the tree. The moment is chosen by watching the tree, not the
     * clock, so a loaded machine moves it only within the writing.
     */
    @Test
    void aPublishKilledAtAnyMomentLeavesNoHalfObject() throws Exception {
        HostArchive a = new HostArchive(tmp.resolve("a/archive"), "boot-a");
        Files.createDirectories(tmp.resolve("a"));
        int n = 200;
        a.record("rec-1", 3, n, 48 << 10, 0);
        java.util.Map<ContentKey, byte[]> expected = new java.util.HashMap<>();
        a.images.keySet().forEach(k -> expected.put(k, a.expectedObject(k)));
        Path treeDir = tmp.resolve("tree");
        List<String> cmd = ChildJvm.command("ptfence.ptarchive.PtarchiveCommand", "--archive", a.dir.toString(),
                "publish", treeDir.toString());
        Random rnd = new Random(5);
        for (int round = 0; round < 5; round++) {
            int target = n / 20 + rnd.nextInt(n * 85 / 100);
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            long deadline = System.nanoTime() + 300_000_000_000L;
            while (keyDirs(treeDir) < target && p.isAlive() && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            p.destroyForcibly();
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            PublishTree tree = PublishTree.open(treeDir);
            int present = 0;
            for (ContentKey k : a.images.keySet()) {
                if (Files.exists(tree.objectPath(k))) {
                    present++;
                    assertArrayEquals(expected.get(k), Files.readAllBytes(tree.objectPath(k)),
                            "round " + round + ": " + k.hex() + " is whole");
                }
            }
            assertTrue(present < n, "round " + round + ": killed before it finished (" + present + " objects)");
            deleteTree(treeDir.resolve(PublishTree.OBJECTS)); // the next round writes them again
        }
        PublishTree tree = PublishTree.create(treeDir, true);
        Publisher.Report r = publish(a, tree, Publisher.Selection.all());
        assertEquals(n, r.written() + r.present());
        for (ContentKey k : a.images.keySet()) {
            assertArrayEquals(expected.get(k), Files.readAllBytes(tree.objectPath(k)));
        }
    }

    private static long keyDirs(Path tree) throws IOException {
        Path objects = tree.resolve(PublishTree.OBJECTS);
        if (!Files.isDirectory(objects)) {
            return 0;
        }
        try (Stream<Path> s = Files.list(objects)) {
            return s.count();
        }
    }

    /** One of the tasks {@link #atOnce} runs, by index. */
    @FunctionalInterface
    interface Task {
        void run(int index) throws Exception;
    }

    /** Runs {@code n} tasks on their own threads, released at the same instant; fails with the first failure. */
    static void atOnce(Task task, int n) throws Exception {
        CyclicBarrier start = new CyclicBarrier(n);
        List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int index = i;
            threads.add(new Thread(() -> {
                try {
                    start.await();
                    task.run(index);
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(List.of(), failures);
    }

    static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    static void busyWait(int micros) {
        long end = System.nanoTime() + micros * 1000L;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }

    static List<Long> mtimes(PublishTree tree) throws IOException {
        try (Stream<Path> s = Files.walk(tree.root())) {
            List<Long> out = new ArrayList<>();
            for (Path p : s.filter(Files::isRegularFile).sorted().toList()) {
                out.add(Files.getLastModifiedTime(p).toMillis());
            }
            return out;
        }
    }

    static List<Path> temps(PublishTree tree) throws IOException {
        try (Stream<Path> s = Files.walk(tree.root())) {
            return s.filter(p -> p.getFileName().toString().endsWith(PublishTree.TEMP_SUFFIX)).toList();
        }
    }
}

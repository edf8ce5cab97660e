package ptfence.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.BadInputException;
import ptfence.cli.Progress;
import ptfence.store.ContentKey;

/**
 * A publish tree is shared, so its directories are input: a {@code buildid/KEY} or {@code recordings} that is (or
 * becomes, while publish and gc run) a symbolic link to another directory is never written or deleted through.
 */
class TreeSymlinkTest {
    static final long DAY = Duration.ofDays(1).toMillis();

    @TempDir
    Path tmp;

    /** A directory outside the tree holding what gc and publish would touch there: an old object, old temp files. */
    Path outside() throws IOException {
        Path out = Files.createDirectories(tmp.resolve("outside"));
        for (String name : List.of(PublishTree.OBJECT_FILE, ".executable.dead.tmp", "x.tmp", "keep-me")) {
            Path f = Files.writeString(out.resolve(name), "outside " + name);
            Files.setLastModifiedTime(f, FileTime.fromMillis(System.currentTimeMillis() - 40 * DAY));
        }
        return out;
    }

    /** Every file under a directory, with its content: what "nothing written or deleted there" compares. */
    static Map<String, String> contents(Path dir) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.filter(p -> !p.equals(dir)).toList()) {
                out.put(dir.relativize(p).toString(), Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)
                        ? Files.readString(p) : "(dir)");
            }
        }
        return out;
    }

    /** A host's archive with one recording "rec" of {@code n} images made from {@code seed}. */
    HostArchive host(long seed, int n) throws Exception {
        return new HostArchive(Files.createDirectories(tmp.resolve("a")).resolve("archive"), "boot-a")
                .record("rec", seed, n, 300, 0);
    }

    @Test
    void gcDoesNotDeleteThroughASymlinkedKeyDirectory() throws Exception {
        Path outside = outside();
        Map<String, String> before = contents(outside);
        HostArchive a = host(1, 3);
        try (PublishTree tree = PublishTree.create(tmp.resolve("tree"), false)) {
            PublishTest.publish(a, tree, Publisher.Selection.all());
            Path link = tree.root().resolve(PublishTree.OBJECTS).resolve("ab".repeat(ContentKey.LENGTH));
            Files.createSymbolicLink(link, outside);
            TreeGcTest.ageAll(tree, 40 * DAY);
            TreeGc.Report r = TreeGc.run(tree, Duration.ofDays(1), TreeGc.MIN_GRACE, false, Progress.NONE);
            assertEquals(3, r.objectsRemoved(), "the tree's own expired objects still go: " + r);
            assertEquals(before, contents(outside), "nothing outside the tree is deleted");
            assertTrue(Files.isSymbolicLink(link), "the link is not ours: left");
        }
    }

    @Test
    void publishDoesNotWriteThroughASymlinkedKeyDirectoryOrRecordings() throws Exception {
        Path outside = outside();
        Map<String, String> before = contents(outside);
        HostArchive a = host(1, 3);
        ContentKey key = a.images.keySet().iterator().next();
        Path tree = tmp.resolve("tree");
        Files.createDirectories(tree.resolve(PublishTree.OBJECTS));
        Files.createSymbolicLink(tree.resolve(PublishTree.OBJECTS).resolve(key.hex()), outside);
        try (PublishTree t = PublishTree.create(tree, false)) {
            BadInputException e = assertThrows(BadInputException.class,
                    () -> PublishTest.publish(a, t, Publisher.Selection.all()));
            assertTrue(e.getMessage().startsWith("publish tree " + tree + ": ")
                    && e.getMessage().contains(t.objectPath(key).getParent() + ": is a symbolic link")
                    && !e.getMessage().contains("\n"), e.getMessage());
        }
        assertEquals(before, contents(outside));

        Path tree2 = tmp.resolve("tree2");
        Files.createDirectories(tree2);
        Files.createSymbolicLink(tree2.resolve(PublishTree.RECORDINGS), outside);
        BadInputException e = assertThrows(BadInputException.class, () -> PublishTree.create(tree2, false));
        assertTrue(e.getMessage().contains(tree2.resolve(PublishTree.RECORDINGS) + ": is a symbolic link"),
                e.getMessage());
        assertEquals(before, contents(outside));
    }

    /**
     * The check-then-use race: a thread keeps swapping key directories for symlinks to an outside directory (and
     * back) at random moments while publishes and gcs run; nothing outside is ever written or deleted, and every
     * refusal is one line.
     */
    @Test
    void aKeyDirectorySwappedForASymlinkWhilePublishAndGcRunIsNeverFollowed() throws Exception {
        Path outside = outside();
        Map<String, String> before = contents(outside);
        HostArchive a = host(7, 12);
        List<ContentKey> keys = new ArrayList<>(a.images.keySet());
        Random rnd = new Random(31);
        int rounds = 30, refused = 0, swaps = 0;
        for (int round = 0; round < rounds; round++) {
            try (PublishTree tree = PublishTree.create(tmp.resolve("tree" + round), false)) {
                PublishTest.publish(a, tree, Publisher.Selection.all());
                TreeGcTest.ageAll(tree, 40 * DAY); // every object and manifest expired: gc removes all it reaches
                Path objects = tree.root().resolve(PublishTree.OBJECTS);
                AtomicBoolean stop = new AtomicBoolean();
                int[] swapped = {0};
                long seed = rnd.nextLong();
                Thread swapper = new Thread(() -> {
                    Random r = new Random(seed);
                    while (!stop.get()) {
                        Path dir = objects.resolve(keys.get(r.nextInt(keys.size())).hex());
                        Path real = objects.resolve("real-" + r.nextInt(1 << 20));
                        try {
                            Files.move(dir, real);
                            Files.createSymbolicLink(dir, outside);
                            swapped[0]++;
                            if (r.nextBoolean()) {
                                Thread.sleep(0, r.nextInt(500_000));
                            }
                            Files.delete(dir);
                            Files.move(real, dir);
                        } catch (IOException | InterruptedException e) {
                            // gc removed it, a publish made it again meanwhile: try another
                        }
                    }
                });
                swapper.start();
                try {
                    for (int i = 0; i < 2; i++) {
                        try {
                            if (rnd.nextBoolean()) {
                                TreeGc.run(tree, Duration.ofDays(1), TreeGc.MIN_GRACE, false, Progress.NONE);
                            } else {
                                PublishTest.publish(a, tree, Publisher.Selection.all());
                            }
                        } catch (BadInputException e) {
                            refused++;
                            assertTrue(!e.getMessage().contains("\n") && e.getMessage().startsWith("publish tree"),
                                    e.getMessage());
                        }
                    }
                } finally {
                    stop.set(true);
                    swapper.join();
                }
                swaps += swapped[0];
                assertEquals(before, contents(outside), "round " + round + ": something outside was touched");
            }
        }
        System.out.printf("symlink swap loop: %d rounds, %d swaps, %d runs refused, outside untouched%n", rounds,
                swaps, refused);
        assertTrue(swaps >= rounds, "the swapper ran: " + swaps);
    }
}

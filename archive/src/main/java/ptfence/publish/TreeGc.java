package ptfence.publish;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import ptfence.cli.Progress;
import ptfence.store.ContentKey;

/**
 * {@code ptarchive gc --published DIR}: removes from a publish tree the objects no recording published within the
 * keep window names, the manifests of recordings not published within it, and temporary files publishes killed
 * long ago left behind.
 *
 * <p>A recording is live in the tree while some host published (or re-published) it within {@code keep}: each
 * host's cron publish renews the manifests of the recordings its own archive still keeps (its own gc's liveness
 * rules: leases of running captures, pins, perf.data present, age), so a recording any host keeps stays live here.
 *
 * <p>Safe next to publishes on any number of hosts. gc notes its start T0, then reads the manifests; a publish writes
 * its manifest before it writes or marks ({@link PublishTree#touch}) the objects the manifest names. So an object
 * that a manifest gc did not read names was marked after T0. gc removes only what is older than {@code grace} at T0,
 * and it removes a file by first renaming it aside and checking its time again (restoring it if a publish marked it
 * in between), so nothing published or marked after gc began is ever removed. {@code grace} also absorbs clock
 * skew between the hosts that write the tree; it must be at least twice {@link Publisher#REFRESH}.
 */
public final class TreeGc {
    /** The least grace allowed: publishes renew marks older than {@link Publisher#REFRESH}. */
    public static final Duration MIN_GRACE = Publisher.REFRESH.multipliedBy(2);
    /** The default grace. */
    public static final Duration DEFAULT_GRACE = Duration.ofDays(1);

    /**
     * What a run did (or, dry, would do).
     *
     * @param dryRun           nothing was removed
     * @param manifestsKept    manifests published within the keep window
     * @param manifestsRemoved manifests older than it
     * @param objectsKept      objects left
     * @param objectsRemoved   objects removed
     * @param bytesFreed       their bytes
     * @param spared           candidates spared because a publish marked them while gc ran
     * @param tempsRemoved     temporary files of killed publishes removed
     * @param unreadable       manifests that could not be read (kept, their objects not counted live: named here)
     */
    public record Report(boolean dryRun, long manifestsKept, long manifestsRemoved, long objectsKept,
            long objectsRemoved, long bytesFreed, long spared, long tempsRemoved, List<String> unreadable) {}

    private TreeGc() {}

    /** Runs gc over the tree. */
    public static Report run(PublishTree tree, Duration keep, Duration grace, boolean dryRun, Progress progress) {
        if (grace.compareTo(MIN_GRACE) < 0) {
            throw new IllegalArgumentException("--grace must be at least " + MIN_GRACE.toHours() + "h (publishes "
                    + "renew their marks every " + Publisher.REFRESH.toHours() + "h)");
        }
        long t0 = System.currentTimeMillis();
        long liveFrom = t0 - keep.toMillis();
        long oldBefore = t0 - grace.toMillis();
        Counts c = new Counts();
        List<String> unreadable = new ArrayList<>();

        progress.phase("reading manifests", 0);
        Set<ContentKey> live = new HashSet<>();
        List<Path> expired = new ArrayList<>();
        for (Path m : list(tree.root().resolve(PublishTree.RECORDINGS))) {
            String name = m.getFileName().toString();
            if (name.endsWith(PublishTree.TEMP_SUFFIX)) {
                removeStaleTemp(m, oldBefore, dryRun, c);
                continue;
            }
            long mtime = mtime(m);
            if (mtime < 0) {
                continue; // replaced or removed meanwhile
            }
            PublishedRecording pr;
            try {
                pr = PublishedRecording.parse(Files.readAllBytes(m), m.toString());
            } catch (NoSuchFileException e) {
                continue;
            } catch (IOException | RuntimeException e) {
                unreadable.add(m + ": " + e.getMessage());
                continue;
            }
            if (mtime >= liveFrom || mtime >= oldBefore) {
                live.addAll(pr.images());
                c.manifestsKept++;
            } else {
                expired.add(m);
            }
        }
        progress.phase("removing manifests", expired.size());
        for (Path m : expired) {
            if (remove(m, oldBefore, dryRun, c)) {
                c.manifestsRemoved++;
            } else {
                c.manifestsKept++;
            }
            progress.add(1);
        }

        progress.phase("sweeping objects", 0);
        for (Path dir : list(tree.root().resolve(PublishTree.OBJECTS))) {
            String hex = dir.getFileName().toString();
            if (hex.endsWith(PublishTree.TEMP_SUFFIX)) {
                removeStaleTemp(dir, oldBefore, dryRun, c);
                continue;
            }
            if (hex.length() != 2 * ContentKey.LENGTH || !ContentKey.isHex(hex) || !Files.isDirectory(dir)) {
                continue; // not ours: leave it
            }
            ContentKey key = ContentKey.parse(hex);
            for (Path f : list(dir)) {
                if (f.getFileName().toString().endsWith(PublishTree.TEMP_SUFFIX)) {
                    removeStaleTemp(f, oldBefore, dryRun, c);
                }
            }
            Path object = dir.resolve(PublishTree.OBJECT_FILE);
            long size = size(object);
            if (size < 0) {
                removeEmptyDir(dir, dryRun);
                continue;
            }
            if (live.contains(key) || mtime(object) >= oldBefore) {
                c.objectsKept++;
            } else if (remove(object, oldBefore, dryRun, c)) {
                c.objectsRemoved++;
                c.bytesFreed += size;
                removeEmptyDir(dir, dryRun);
            } else {
                c.objectsKept++;
            }
            progress.add(1);
        }
        return new Report(dryRun, c.manifestsKept, c.manifestsRemoved, c.objectsKept, c.objectsRemoved,
                c.bytesFreed, c.spared, c.tempsRemoved, List.copyOf(unreadable));
    }

    private static final class Counts {
        long manifestsKept, manifestsRemoved, objectsKept, objectsRemoved, bytesFreed, spared, tempsRemoved;
    }

    /**
     * Removes a file older than {@code oldBefore}: renames it aside, looks at its time again and puts it back if a
     * publish marked it in between (the publish then found it or wrote it again). False if it was kept.
     */
    private static boolean remove(Path file, long oldBefore, boolean dryRun, Counts c) {
        if (dryRun) {
            return mtime(file) >= 0 && mtime(file) < oldBefore;
        }
        Path aside = file.resolveSibling("." + file.getFileName() + ".gc-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong()) + PublishTree.TEMP_SUFFIX);
        try {
            Files.move(file, aside, StandardCopyOption.ATOMIC_MOVE);
        } catch (NoSuchFileException e) {
            return false; // another gc took it
        } catch (IOException e) {
            throw new UncheckedIOException("publish tree: removing " + file, e);
        }
        try {
            if (mtime(aside) >= oldBefore) {
                c.spared++;
                try {
                    Files.createLink(file, aside);
                } catch (FileAlreadyExistsException e) {
                    // a publish wrote it again meanwhile: that copy stays
                }
                return false;
            }
            return true;
        } catch (IOException e) {
            throw new UncheckedIOException("publish tree: restoring " + file, e);
        } finally {
            try {
                Files.deleteIfExists(aside);
            } catch (IOException e) {
                // left for the next gc (it is a temporary file)
            }
        }
    }

    private static void removeStaleTemp(Path f, long oldBefore, boolean dryRun, Counts c) {
        long t = mtime(f);
        if (t < 0 || t >= oldBefore || Files.isDirectory(f)) {
            return;
        }
        try {
            if (dryRun || Files.deleteIfExists(f)) {
                c.tempsRemoved++;
            }
        } catch (IOException e) {
            // not ours to fight over
        }
    }

    /** Removes a key's directory if it is empty; one a publish is writing into is not (the publish retries). */
    private static void removeEmptyDir(Path dir, boolean dryRun) {
        if (dryRun) {
            return;
        }
        try {
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            // not empty, or gone
        }
    }

    private static List<Path> list(Path dir) {
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
            s.forEach(out::add);
        } catch (NoSuchFileException e) {
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("publish tree: listing " + dir, e);
        }
        out.sort(null);
        return out;
    }

    private static long mtime(Path p) {
        try {
            return Files.getLastModifiedTime(p).toMillis();
        } catch (IOException e) {
            return -1;
        }
    }

    private static long size(Path p) {
        try {
            return Files.size(p);
        } catch (IOException e) {
            return -1;
        }
    }
}

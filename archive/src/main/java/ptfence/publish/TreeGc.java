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
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
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
 * <p>Safe next to publishes on any number of hosts, without ever touching an object (debuginfod rescans a file whose
 * time changes). A publish writes (or marks) its manifest before it looks for the objects the manifest names and
 * writes those it does not find. gc reads the manifests, sets the objects no live one names aside (renames them
 * within their directory), then reads the manifests again and puts back every object set aside that a manifest
 * written or marked meanwhile names, and only then deletes the rest. So an object a publish relies on was either named
 * by a manifest gc read the second time (put back), or set aside before that publish looked for it (written again).
 * Manifests are removed the same way: set aside, their time looked at again, put back if a publish marked them in
 * between. Nothing younger than {@code grace} is removed at all: that covers clock skew between the hosts writing the
 * tree and directory caches of network file systems. A gc killed midway leaves objects set aside: the next run puts
 * back those a live manifest names and deletes the others.
 */
public final class TreeGc {
    /** The least grace allowed. */
    public static final Duration MIN_GRACE = Duration.ofHours(1);
    /** The default grace. */
    public static final Duration DEFAULT_GRACE = Duration.ofDays(1);
    /** The file a running gc holds a lock on. */
    static final String LOCK = ".gc.lock";
    /** How an object set aside is named (within its key's directory), so a later run knows it. */
    static final String ASIDE = "." + PublishTree.OBJECT_FILE + ".gc-";

    /**
     * What a run did (or, dry, would do).
     *
     * @param dryRun           nothing was removed
     * @param manifestsKept    manifests published within the keep window
     * @param manifestsRemoved manifests older than it
     * @param objectsKept      objects left
     * @param objectsRemoved   objects removed
     * @param bytesFreed       their bytes
     * @param spared           candidates kept because a publish wrote or marked a manifest naming them while gc ran
     * @param tempsRemoved     temporary files of killed publishes removed
     * @param unreadable       manifests that could not be read (kept, their objects not counted live: named here)
     */
    public record Report(boolean dryRun, long manifestsKept, long manifestsRemoved, long objectsKept,
            long objectsRemoved, long bytesFreed, long spared, long tempsRemoved, List<String> unreadable) {}

    private TreeGc() {}

    /** Runs gc over the tree; one at a time per tree (a second is a one-line error while the first runs). */
    public static Report run(PublishTree tree, Duration keep, Duration grace, boolean dryRun, Progress progress) {
        if (grace.compareTo(MIN_GRACE) < 0) {
            throw new IllegalArgumentException("--grace must be at least " + MIN_GRACE.toMinutes() + " minutes");
        }
        Path lockFile = tree.root().resolve(LOCK);
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(lockFile,
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE);
                java.nio.channels.FileLock lock = tryLock(ch)) {
            if (lock == null) {
                throw new ptfence.cli.BadInputException("publish tree " + tree.root() + ": another gc --published "
                        + "is running (it holds " + lockFile + ")");
            }
            return collect(tree, keep, grace, dryRun, progress);
        } catch (IOException e) {
            throw new UncheckedIOException("publish tree " + tree.root() + ": locking " + lockFile, e);
        }
    }

    /** The lock, or null when another process (or another gc of this one) holds it. */
    private static java.nio.channels.FileLock tryLock(java.nio.channels.FileChannel ch) throws IOException {
        try {
            return ch.tryLock();
        } catch (java.nio.channels.OverlappingFileLockException e) {
            return null;
        }
    }

    private static Report collect(PublishTree tree, Duration keep, Duration grace, boolean dryRun, Progress progress) {
        long t0 = System.currentTimeMillis();
        long liveFrom = t0 - keep.toMillis();
        long oldBefore = t0 - grace.toMillis();
        Counts c = new Counts();
        List<String> unreadable = new ArrayList<>();

        progress.phase("reading manifests", 0);
        Map<Path, Long> read = new HashMap<>();
        Set<ContentKey> live = new HashSet<>();
        List<Path> expired = new ArrayList<>();
        for (Path m : manifests(tree, oldBefore, dryRun, c)) {
            long mtime = mtime(m);
            PublishedRecording pr = parse(m, unreadable);
            if (mtime < 0 || pr == null) {
                continue; // replaced or removed meanwhile, or unreadable (kept, named in the report)
            }
            read.put(m, mtime);
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

        progress.phase("setting objects aside", 0);
        List<Aside> aside = new ArrayList<>();
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
            Path object = dir.resolve(PublishTree.OBJECT_FILE);
            for (Path f : list(dir)) {
                String name = f.getFileName().toString();
                if (name.startsWith(ASIDE) && live.contains(key) && !dryRun) {
                    restore(f, object); // set aside by a gc that was killed
                } else if (name.endsWith(PublishTree.TEMP_SUFFIX)) {
                    removeStaleTemp(f, name.startsWith(ASIDE) ? Long.MAX_VALUE : oldBefore, dryRun, c);
                }
            }
            long size = size(object);
            if (size < 0) {
                removeEmptyDir(dir, dryRun);
            } else if (live.contains(key) || mtime(object) >= oldBefore) {
                c.objectsKept++;
            } else if (dryRun) {
                c.objectsRemoved++;
                c.bytesFreed += size;
            } else {
                Path to = dir.resolve(ASIDE + Long.toHexString(ThreadLocalRandom.current().nextLong())
                        + PublishTree.TEMP_SUFFIX);
                if (rename(object, to)) {
                    aside.add(new Aside(key, object, to, size));
                }
            }
            progress.add(1);
        }
        if (dryRun) {
            return report(true, c, unreadable);
        }

        // manifests written or marked since the first read name what publishes rely on: put those objects back
        progress.phase("reading manifests again", 0);
        Set<ContentKey> late = new HashSet<>();
        for (Path m : manifests(tree, oldBefore, false, c)) {
            Long before = read.get(m);
            long mtime = mtime(m);
            if (mtime >= 0 && (before == null || before != mtime || mtime >= t0)) {
                PublishedRecording pr = parse(m, unreadable);
                if (pr != null) {
                    late.addAll(pr.images());
                }
            }
        }
        progress.phase("removing objects", aside.size());
        for (Aside a : aside) {
            if (late.contains(a.key())) {
                restore(a.aside(), a.object());
                c.spared++;
                c.objectsKept++;
            } else {
                delete(a.aside());
                c.objectsRemoved++;
                c.bytesFreed += a.size();
                removeEmptyDir(a.object().getParent(), false);
            }
            progress.add(1);
        }
        return report(false, c, unreadable);
    }

    /** An object set aside: its key, where it was, where it is, its size. */
    private record Aside(ContentKey key, Path object, Path aside, long size) {}

    private static Report report(boolean dryRun, Counts c, List<String> unreadable) {
        return new Report(dryRun, c.manifestsKept, c.manifestsRemoved, c.objectsKept, c.objectsRemoved,
                c.bytesFreed, c.spared, c.tempsRemoved, List.copyOf(unreadable));
    }

    /** The manifests (temporary files older than the grace among them are removed on the way). */
    private static List<Path> manifests(PublishTree tree, long oldBefore, boolean dryRun, Counts c) {
        List<Path> out = new ArrayList<>();
        for (Path m : list(tree.root().resolve(PublishTree.RECORDINGS))) {
            if (m.getFileName().toString().endsWith(PublishTree.TEMP_SUFFIX)) {
                removeStaleTemp(m, oldBefore, dryRun, c);
            } else {
                out.add(m);
            }
        }
        return out;
    }

    private static PublishedRecording parse(Path m, List<String> unreadable) {
        try {
            return PublishedRecording.parse(Files.readAllBytes(m), m.toString());
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException | RuntimeException e) {
            if (!unreadable.contains(m + ": " + e.getMessage())) {
                unreadable.add(m + ": " + e.getMessage());
            }
            return null;
        }
    }

    /** Puts an object set aside back (unless a publish wrote it again meanwhile), and drops the aside copy. */
    private static void restore(Path aside, Path object) {
        try {
            Files.createLink(object, aside);
        } catch (FileAlreadyExistsException | NoSuchFileException e) {
            // written again by a publish, or already put back
        } catch (IOException e) {
            throw new UncheckedIOException("publish tree: putting back " + object, e);
        }
        delete(aside);
    }

    private static boolean rename(Path from, Path to) {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
            return true;
        } catch (NoSuchFileException e) {
            return false; // another gc took it
        } catch (IOException e) {
            throw new UncheckedIOException("publish tree: setting aside " + from, e);
        }
    }

    private static void delete(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            throw new UncheckedIOException("publish tree: removing " + p, e);
        }
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

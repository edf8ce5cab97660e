package ptfence.publish;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import ptfence.cli.BadInputException;
import ptfence.cli.Progress;
import ptfence.dir.DirHandle;
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
 *
 * <p>Everything is looked at, renamed and removed relative to handles on the tree's directories ({@link DirHandle}):
 * a key's directory that is a symbolic link (or becomes one while gc runs) is left alone, never followed.
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

    /** Runs gc over the tree; one at a time per tree (a second is a one-line error while the first runs). */
    public static Report run(PublishTree tree, Duration keep, Duration grace, boolean dryRun, Progress progress) {
        if (grace.compareTo(MIN_GRACE) < 0) {
            throw new IllegalArgumentException("--grace must be at least " + MIN_GRACE.toMinutes() + " minutes");
        }
        Path lockFile = tree.root().resolve(LOCK);
        try (java.nio.channels.FileChannel ch = tree.top().openForLock(LOCK);
                java.nio.channels.FileLock lock = tryLock(ch)) {
            if (lock == null) {
                throw new BadInputException("publish tree " + tree.root() + ": another gc --published "
                        + "is running (it holds " + lockFile + ")");
            }
            return new TreeGc(tree).collect(keep, grace, dryRun, progress);
        } catch (IOException e) {
            throw new BadInputException("publish tree " + tree.root() + ": locking " + lockFile + ": "
                    + PublishTree.reason(e), e);
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

    private final PublishTree tree;
    private final DirHandle objects;
    private final DirHandle recordings;

    private TreeGc(PublishTree tree) {
        this.tree = tree;
        this.objects = tree.objects();
        this.recordings = tree.recordings();
    }

    private Report collect(Duration keep, Duration grace, boolean dryRun, Progress progress) {
        long t0 = System.currentTimeMillis();
        long liveFrom = t0 - keep.toMillis();
        long oldBefore = t0 - grace.toMillis();
        Counts c = new Counts();
        List<String> unreadable = new ArrayList<>();

        progress.phase("reading manifests", 0);
        Map<String, Long> read = new HashMap<>();
        Set<ContentKey> live = new HashSet<>();
        List<String> expired = new ArrayList<>();
        for (String m : manifests(oldBefore, dryRun, c)) {
            long mtime = mtime(recordings, m);
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
        for (String m : expired) {
            if (remove(recordings, m, oldBefore, dryRun, c)) {
                c.manifestsRemoved++;
            } else {
                c.manifestsKept++;
            }
            progress.add(1);
        }

        progress.phase("setting objects aside", 0);
        List<Aside> aside = new ArrayList<>();
        for (String hex : list(objects)) {
            if (hex.endsWith(PublishTree.TEMP_SUFFIX)) {
                removeStaleTemp(objects, hex, oldBefore, dryRun, c);
                continue;
            }
            if (hex.length() != 2 * ContentKey.LENGTH || !ContentKey.isHex(hex)) {
                continue; // not ours: leave it
            }
            ContentKey key = ContentKey.parse(hex);
            try (DirHandle dir = keyDir(hex)) {
                if (dir == null) {
                    continue; // gone, or not a directory (a symlink is one of those): not followed, left alone
                }
                for (String name : list(dir)) {
                    if (name.startsWith(ASIDE) && live.contains(key) && !dryRun) {
                        restore(dir, name); // set aside by a gc that was killed
                    } else if (name.endsWith(PublishTree.TEMP_SUFFIX)) {
                        removeStaleTemp(dir, name, name.startsWith(ASIDE) ? Long.MAX_VALUE : oldBefore, dryRun, c);
                    }
                }
                BasicFileAttributes object = attributes(dir, PublishTree.OBJECT_FILE);
                if (object == null || !object.isRegularFile()) {
                    if (object == null) {
                        removeEmptyDir(hex, dryRun);
                    }
                } else if (live.contains(key) || object.lastModifiedTime().toMillis() >= oldBefore) {
                    c.objectsKept++;
                } else if (dryRun) {
                    c.objectsRemoved++;
                    c.bytesFreed += object.size();
                } else {
                    String to = ASIDE + Long.toHexString(ThreadLocalRandom.current().nextLong())
                            + PublishTree.TEMP_SUFFIX;
                    if (rename(dir, PublishTree.OBJECT_FILE, to)) {
                        aside.add(new Aside(key, to, object.size()));
                    }
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
        for (String m : manifests(oldBefore, false, c)) {
            Long before = read.get(m);
            long mtime = mtime(recordings, m);
            if (mtime >= 0 && (before == null || before != mtime || mtime >= t0)) {
                PublishedRecording pr = parse(m, unreadable);
                if (pr != null) {
                    late.addAll(pr.images());
                }
            }
        }
        progress.phase("removing objects", aside.size());
        for (Aside a : aside) {
            try (DirHandle dir = keyDir(a.key().hex())) {
                if (dir == null) {
                    // the key's directory was replaced meanwhile (not by a publish: it makes real directories); what
                    // was set aside stays there for the next gc
                } else if (late.contains(a.key())) {
                    restore(dir, a.aside());
                    c.spared++;
                    c.objectsKept++;
                } else {
                    delete(dir, a.aside());
                    c.objectsRemoved++;
                    c.bytesFreed += a.size();
                }
            }
            if (!late.contains(a.key())) {
                removeEmptyDir(a.key().hex(), false);
            }
            progress.add(1);
        }
        return report(false, c, unreadable);
    }

    /** An object set aside: its key, its name in the key's directory, its size. */
    private record Aside(ContentKey key, String aside, long size) {}

    /** A key's directory, or null when it is gone or is not a real directory (a symlink is refused, not followed). */
    private DirHandle keyDir(String hex) {
        try {
            return objects.child(hex, false, 0);
        } catch (IOException e) {
            return null;
        }
    }

    private static Report report(boolean dryRun, Counts c, List<String> unreadable) {
        return new Report(dryRun, c.manifestsKept, c.manifestsRemoved, c.objectsKept, c.objectsRemoved,
                c.bytesFreed, c.spared, c.tempsRemoved, List.copyOf(unreadable));
    }

    /** The manifests (temporary files older than the grace among them are removed on the way). */
    private List<String> manifests(long oldBefore, boolean dryRun, Counts c) {
        List<String> out = new ArrayList<>();
        for (String m : list(recordings)) {
            if (m.endsWith(PublishTree.TEMP_SUFFIX)) {
                removeStaleTemp(recordings, m, oldBefore, dryRun, c);
            } else {
                out.add(m);
            }
        }
        return out;
    }

    private PublishedRecording parse(String m, List<String> unreadable) {
        Path shown = recordings.shown(m);
        try {
            return PublishedRecording.parse(recordings.readAll(m), shown.toString());
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException | RuntimeException e) {
            String why = shown + ": " + (e instanceof IOException io ? PublishTree.reason(io) : e.getMessage());
            if (!unreadable.contains(why)) {
                unreadable.add(why);
            }
            return null;
        }
    }

    /** Puts an object set aside back (unless a publish wrote it again meanwhile), and drops the aside copy. */
    private static void restore(DirHandle dir, String aside) {
        try {
            dir.link(aside, PublishTree.OBJECT_FILE); // false: written again by a publish
        } catch (NoSuchFileException e) {
            // already put back
        } catch (IOException e) {
            throw failure(dir, "putting back " + PublishTree.OBJECT_FILE, e);
        }
        delete(dir, aside);
    }

    private static boolean rename(DirHandle dir, String from, String to) {
        try {
            dir.rename(from, to);
            return true;
        } catch (NoSuchFileException e) {
            return false; // another gc took it
        } catch (IOException e) {
            throw failure(dir, "setting aside " + from, e);
        }
    }

    private static void delete(DirHandle dir, String name) {
        try {
            dir.delete(name);
        } catch (IOException e) {
            throw failure(dir, "removing " + name, e);
        }
    }

    private static BadInputException failure(DirHandle dir, String doing, IOException e) {
        return new BadInputException("publish tree: " + dir.path() + ": " + doing + ": " + PublishTree.reason(e), e);
    }

    private static final class Counts {
        long manifestsKept, manifestsRemoved, objectsKept, objectsRemoved, bytesFreed, spared, tempsRemoved;
    }

    /**
     * Removes a file older than {@code oldBefore}: renames it aside, looks at its time again and puts it back if a
     * publish marked it in between (the publish then found it or wrote it again). False if it was kept.
     */
    private static boolean remove(DirHandle dir, String file, long oldBefore, boolean dryRun, Counts c) {
        if (dryRun) {
            long t = mtime(dir, file);
            return t >= 0 && t < oldBefore;
        }
        String aside = "." + file + ".gc-" + Long.toHexString(ThreadLocalRandom.current().nextLong())
                + PublishTree.TEMP_SUFFIX;
        try {
            dir.rename(file, aside);
        } catch (NoSuchFileException e) {
            return false; // another gc took it
        } catch (IOException e) {
            throw failure(dir, "removing " + file, e);
        }
        try {
            if (mtime(dir, aside) >= oldBefore) {
                c.spared++;
                dir.link(aside, file); // false: a publish wrote it again meanwhile, and that copy stays
                return false;
            }
            return true;
        } catch (IOException e) {
            throw failure(dir, "restoring " + file, e);
        } finally {
            try {
                dir.delete(aside);
            } catch (IOException e) {
                // left for the next gc (it is a temporary file)
            }
        }
    }

    private static void removeStaleTemp(DirHandle dir, String name, long oldBefore, boolean dryRun, Counts c) {
        BasicFileAttributes a = attributes(dir, name);
        if (a == null || a.lastModifiedTime().toMillis() >= oldBefore || a.isDirectory()) {
            return;
        }
        try {
            if (dryRun || dir.delete(name)) {
                c.tempsRemoved++;
            }
        } catch (IOException e) {
            // not ours to fight over
        }
    }

    /** Removes a key's directory if it is empty; one a publish is writing into is not (the publish retries). */
    private void removeEmptyDir(String hex, boolean dryRun) {
        if (dryRun) {
            return;
        }
        BasicFileAttributes a = attributes(objects, hex);
        if (a == null || !a.isDirectory()) {
            return; // a symlink or file put there is not ours to remove
        }
        try {
            objects.delete(hex);
        } catch (IOException e) {
            // not empty, or gone
        }
    }

    private static List<String> list(DirHandle dir) {
        try {
            return dir.list();
        } catch (NoSuchFileException e) {
            return new ArrayList<>();
        } catch (IOException e) {
            throw failure(dir, "listing", e);
        }
    }

    private static BasicFileAttributes attributes(DirHandle dir, String name) {
        try {
            return dir.attributes(name);
        } catch (IOException e) {
            return null;
        }
    }

    private static long mtime(DirHandle dir, String name) {
        BasicFileAttributes a = attributes(dir, name);
        return a == null ? -1 : a.lastModifiedTime().toMillis();
    }
}

package ptfence.publish;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;
import ptfence.cli.BadInputException;
import ptfence.dir.DirHandle;
import ptfence.store.ContentKey;

/**
 * A publish tree (docs/fleet.md): the directory {@code debuginfod -F} serves, shared by every host that publishes.
 *
 * <pre>
 * DIR/buildid/KEY/executable     one ELF object per image ({@link ImageObject}); KEY is the content key in hex, so
 *                                the tree is also a valid file:// DEBUGINFOD_URLS target
 * DIR/recordings/ID.json         one manifest per published recording ({@link PublishedRecording}); ID is the
 *                                SHA-256 of the recording id in hex
 * </pre>
 *
 * <p>Every file appears whole or not at all: it is written under a temporary name ({@code .NAME.RANDOM.tmp}) in its
 * own directory, forced to disk, then linked (objects: never replaced, so a key never changes content under
 * debuginfod) or renamed (manifests: replaced) into place. A publish killed at any moment leaves at most a temporary
 * file, which {@code gc --published} removes once it is old.
 *
 * <p>The tree is shared and may be written by other users: every file is opened, linked, renamed and removed relative
 * to a handle on its directory ({@link DirHandle}), never through a symbolic link, so a {@code buildid/KEY} or
 * {@code recordings} swapped for a link to another directory is refused, not written through.
 */
public final class PublishTree implements AutoCloseable {
    /** Subdirectory of the objects, as debuginfod's URL names it. */
    public static final String OBJECTS = "buildid";
    /** File name of an object inside its key's directory. */
    public static final String OBJECT_FILE = "executable";
    /** Subdirectory of the recording manifests. */
    public static final String RECORDINGS = "recordings";
    static final String TEMP_SUFFIX = ".tmp";
    private static final int DIR_MODE = 0777; // less the umask, as mkdir(1)

    private final Path root;
    private final boolean sync;
    private final DirHandle top;
    private final DirHandle objects;
    private final DirHandle recordings;

    private PublishTree(Path root, boolean sync, DirHandle top, DirHandle objects, DirHandle recordings) {
        this.root = root;
        this.sync = sync;
        this.top = top;
        this.objects = objects;
        this.recordings = recordings;
    }

    /**
     * A tree to publish into: created if absent, its top directory 0750 (kernel text reveals kernel addresses: the
     * owner and a group the server runs in may read it; widen it deliberately). {@code sync} forces each file to disk
     * before it appears.
     */
    public static PublishTree create(Path dir, boolean sync) {
        Path root = checked(dir);
        try {
            if (!Files.isDirectory(root)) {
                Files.createDirectories(root.getParent());
                try {
                    Files.createDirectory(root, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                            java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-x---")));
                } catch (FileAlreadyExistsException raced) {
                    // another host made it
                }
            }
        } catch (FileAlreadyExistsException e) {
            throw new BadInputException("publish tree " + root + ": " + e.getFile() + " exists and is not a directory");
        } catch (IOException e) {
            throw new BadInputException("publish tree " + root + ": cannot create it (" + reason(e) + ")");
        }
        return openHandles(root, sync, true);
    }

    /** An existing tree (gc): a path that is not one is a one-line error. */
    public static PublishTree open(Path dir) {
        Path root = checked(dir);
        if (!Files.isDirectory(root.resolve(OBJECTS)) || !Files.isDirectory(root.resolve(RECORDINGS))) {
            throw new BadInputException("publish tree " + root + ": not a publish tree (no " + OBJECTS + "/ and "
                    + RECORDINGS + "/ directories; 'ptarchive publish' makes one)");
        }
        return openHandles(root, true, false);
    }

    private static Path checked(Path dir) {
        if (dir.toString().isEmpty()) {
            throw new BadInputException("publish tree '': an empty path (give a directory; '.' for this one)");
        }
        return dir.toAbsolutePath().normalize();
    }

    private static PublishTree openHandles(Path root, boolean sync, boolean create) {
        DirHandle top = null, objects = null;
        try {
            top = DirHandle.open(root);
            objects = top.child(OBJECTS, create, DIR_MODE);
            DirHandle recordings = top.child(RECORDINGS, create, DIR_MODE);
            return new PublishTree(root, sync, top, objects, recordings);
        } catch (IOException e) {
            if (objects != null) objects.close();
            if (top != null) top.close();
            throw new BadInputException("publish tree " + root + ": " + reason(e));
        }
    }

    public Path root() {
        return root;
    }

    /** The tree's top directory (gc's lock file is there). */
    DirHandle top() {
        return top;
    }

    /** The objects' directory ({@value #OBJECTS}), as opened when the tree was. */
    DirHandle objects() {
        return objects;
    }

    /** The manifests' directory ({@value #RECORDINGS}), as opened when the tree was. */
    DirHandle recordings() {
        return recordings;
    }

    @Override
    public void close() {
        recordings.close();
        objects.close();
        top.close();
    }

    /** Where the object of this image is (whether or not it exists): for messages and tests, never opened by it. */
    public Path objectPath(ContentKey key) {
        return root.resolve(OBJECTS).resolve(key.hex()).resolve(OBJECT_FILE);
    }

    /** Where the manifest of this recording is (whether or not it exists): for messages and tests. */
    public Path manifestPath(String recordingId) {
        return root.resolve(RECORDINGS).resolve(manifestName(recordingId));
    }

    static String manifestName(String recordingId) {
        return HexFormat.of().formatHex(ContentKey.sha256(recordingId.getBytes(StandardCharsets.UTF_8))) + ".json";
    }

    /** True if the image's object is there (a regular file; a symlink in its place is not one). */
    public boolean hasObject(ContentKey key) {
        try (DirHandle dir = objects.child(key.hex(), false, 0)) {
            java.nio.file.attribute.BasicFileAttributes a = dir.attributes(OBJECT_FILE);
            return a != null && a.isRegularFile();
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            throw failure("looking for " + objectPath(key), e);
        }
    }

    /** A manifest's bytes, or null if there is none. */
    public byte[] readManifest(String recordingId) {
        try {
            return recordings.readAll(manifestName(recordingId));
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw failure("reading " + manifestPath(recordingId), e);
        }
    }

    /** A manifest's modification time in ms, or -1 if there is none. */
    public long manifestMillis(String recordingId) {
        try {
            java.nio.file.attribute.BasicFileAttributes a = recordings.attributes(manifestName(recordingId));
            return a == null ? -1 : a.lastModifiedTime().toMillis();
        } catch (IOException e) {
            throw failure("reading " + manifestPath(recordingId), e);
        }
    }

    /**
     * Writes an object unless one is there. Returns true if this call put it there; false if it was there already or
     * another publisher linked its own first (both are the same image, so either is right).
     */
    public boolean putObject(ContentKey key, byte[] object) {
        Path target = objectPath(key);
        for (int attempt = 0; ; attempt++) {
            try (DirHandle dir = objects.child(key.hex(), true, DIR_MODE)) {
                String temp = writeTemp(dir, OBJECT_FILE, object);
                try {
                    return link(dir, temp, OBJECT_FILE);
                } finally {
                    dir.delete(temp);
                }
            } catch (NoSuchFileException e) {
                // gc removed the key's empty directory between our mkdir and our write: make it again
                if (attempt > 3) {
                    throw failure("writing " + target, e);
                }
            } catch (IOException e) {
                throw failure("writing " + target, e);
            }
        }
    }

    /** Writes (or replaces) a manifest whole. */
    public void putManifest(String recordingId, byte[] content) {
        String name = manifestName(recordingId);
        try {
            String temp = writeTemp(recordings, name, content);
            try {
                recordings.rename(temp, name);
            } finally {
                recordings.delete(temp);
            }
        } catch (IOException e) {
            throw failure("writing " + manifestPath(recordingId), e);
        }
    }

    /**
     * Marks a manifest as published now (its modification time), so a {@code gc --published} that began earlier
     * keeps it. False if the file is not there (a gc took it: publish it again).
     */
    public boolean touchManifest(String recordingId) {
        String name = manifestName(recordingId);
        try {
            long now = System.currentTimeMillis();
            recordings.setModified(name, FileTime.fromMillis(now));
            // a gc may have renamed it aside (and be about to delete it) in between: look again by name; only a file
            // there now, marked, counts
            java.nio.file.attribute.BasicFileAttributes a = recordings.attributes(name);
            return a != null && a.lastModifiedTime().toMillis() >= now;
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            throw failure("touching " + manifestPath(recordingId), e);
        }
    }

    /** A failure as one line naming the tree, what was done and why (a full disk is "no space left on device"). */
    private BadInputException failure(String doing, IOException e) {
        return new BadInputException("publish tree " + root + ": " + doing + ": " + reason(e), e);
    }

    /** Why an I/O call failed, in words (never an exception's class name). */
    static String reason(IOException e) {
        if (e instanceof NoSuchFileException f) {
            return f.getFile() + ": no such file or directory";
        }
        if (e instanceof java.nio.file.AccessDeniedException f) {
            return f.getFile() + ": permission denied";
        }
        if (e instanceof FileAlreadyExistsException f) {
            return f.getFile() + ": exists";
        }
        if (e instanceof FileSystemException f) {
            return (f.getFile() == null ? "" : f.getFile() + ": ")
                    + (f.getReason() == null ? "failed" : lower(f.getReason()));
        }
        return e.getMessage() == null ? "input/output error" : lower(e.getMessage());
    }

    private static String lower(String s) {
        return s.isEmpty() ? s : Character.toLowerCase(s.charAt(0)) + s.substring(1);
    }

    private String writeTemp(DirHandle dir, String target, byte[] content) throws IOException {
        String temp = "." + target + "." + Long.toHexString(ThreadLocalRandom.current().nextLong()) + TEMP_SUFFIX;
        try (FileChannel ch = dir.createNew(temp)) {
            ByteBuffer b = ByteBuffer.wrap(content);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            if (sync) {
                ch.force(true);
            }
        } catch (IOException e) {
            try {
                dir.delete(temp);
            } catch (IOException gone) {
                // the write's error is the one to report
            }
            throw e;
        }
        return temp;
    }

    /** Links {@code temp} at {@code target} unless something is there; false if something was. */
    private static boolean link(DirHandle dir, String temp, String target) throws IOException {
        try {
            return dir.link(temp, target);
        } catch (NoSuchFileException e) {
            throw e;
        } catch (UnsupportedOperationException | FileSystemException e) {
            // a file system without hard links: rename, which may replace a racing publisher's equal object
            if (dir.attributes(target) != null) {
                return false;
            }
            try {
                dir.rename(temp, target);
            } catch (AtomicMoveNotSupportedException m) {
                throw new IOException("cannot rename atomically in " + dir.path(), m);
            }
            return true;
        }
    }
}

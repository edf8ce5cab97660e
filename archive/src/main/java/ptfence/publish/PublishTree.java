package ptfence.publish;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;
import ptfence.cli.BadInputException;
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
 */
public final class PublishTree {
    /** Subdirectory of the objects, as debuginfod's URL names it. */
    public static final String OBJECTS = "buildid";
    /** File name of an object inside its key's directory. */
    public static final String OBJECT_FILE = "executable";
    /** Subdirectory of the recording manifests. */
    public static final String RECORDINGS = "recordings";
    static final String TEMP_SUFFIX = ".tmp";

    private final Path root;
    private final boolean sync;

    private PublishTree(Path root, boolean sync) {
        this.root = root;
        this.sync = sync;
    }

    /**
     * A tree to publish into: created if absent, its top directory 0750 (kernel text reveals kernel addresses: the
     * owner and a group the server runs in may read it; widen it deliberately). {@code sync} forces each file to disk
     * before it appears.
     */
    public static PublishTree create(Path dir, boolean sync) {
        Path root = dir.toAbsolutePath().normalize();
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
            Files.createDirectories(root.resolve(OBJECTS));
            Files.createDirectories(root.resolve(RECORDINGS));
        } catch (FileAlreadyExistsException e) {
            throw new BadInputException("publish tree " + root + ": " + e.getFile() + " exists and is not a directory");
        } catch (IOException e) {
            throw new BadInputException("publish tree " + root + ": cannot create it (" + e + ")");
        }
        return new PublishTree(root, sync);
    }

    /** An existing tree (gc): a path that is not one is a one-line error. */
    public static PublishTree open(Path dir) {
        Path root = dir.toAbsolutePath().normalize();
        if (!Files.isDirectory(root.resolve(OBJECTS)) || !Files.isDirectory(root.resolve(RECORDINGS))) {
            throw new BadInputException("publish tree " + root + ": not a publish tree (no " + OBJECTS + "/ and "
                    + RECORDINGS + "/ directories; 'ptarchive publish' makes one)");
        }
        return new PublishTree(root, true);
    }

    public Path root() {
        return root;
    }

    /** Where the object of this image is (whether or not it exists). */
    public Path objectPath(ContentKey key) {
        return root.resolve(OBJECTS).resolve(key.hex()).resolve(OBJECT_FILE);
    }

    /** Where the manifest of this recording is (whether or not it exists). */
    public Path manifestPath(String recordingId) {
        return root.resolve(RECORDINGS).resolve(HexFormat.of().formatHex(
                ContentKey.sha256(recordingId.getBytes(StandardCharsets.UTF_8))) + ".json");
    }

    /**
     * Writes an object unless one is there. Returns true if this call put it there; false if it was there already or
     * another publisher linked its own first (both are the same image, so either is right).
     */
    public boolean putObject(ContentKey key, byte[] object) {
        Path target = objectPath(key);
        for (int attempt = 0; ; attempt++) {
            try {
                Files.createDirectories(target.getParent());
                Path temp = writeTemp(target, object);
                try {
                    return link(temp, target);
                } finally {
                    Files.deleteIfExists(temp);
                }
            } catch (NoSuchFileException | FileAlreadyExistsException e) {
                // gc removed the key's empty directory between our mkdir and our write (or, inside the JDK's
                // createDirectories, between its "exists" and its "is a directory"): make it again
                if (attempt > 3) {
                    throw new UncheckedIOException("publish tree " + root + ": writing " + target + ": " + e, e);
                }
            } catch (IOException e) {
                throw new UncheckedIOException("publish tree " + root + ": writing " + target + ": " + e, e);
            }
        }
    }

    /** Writes (or replaces) a manifest whole. */
    public void putManifest(String recordingId, byte[] content) {
        Path target = manifestPath(recordingId);
        try {
            Path temp = writeTemp(target, content);
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } finally {
                Files.deleteIfExists(temp);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("publish tree " + root + ": writing " + target, e);
        }
    }

    /**
     * Marks a file as published now (its modification time), so a {@code gc --published} that began earlier keeps
     * it. False if the file is not there (a gc took it: publish it again).
     */
    public boolean touch(Path file) {
        try {
            long now = System.currentTimeMillis();
            Files.setLastModifiedTime(file, FileTime.fromMillis(now));
            // The JDK opens the file, then sets the time through the descriptor: a gc may have renamed it aside (and
            // be about to delete it) in between. So look again by name: only a file there now, marked, counts.
            return Files.getLastModifiedTime(file).toMillis() >= now;
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException("publish tree " + root + ": touching " + file, e);
        }
    }

    private Path writeTemp(Path target, byte[] content) throws IOException {
        Path temp = target.resolveSibling("." + target.getFileName() + "."
                + Long.toHexString(ThreadLocalRandom.current().nextLong()) + TEMP_SUFFIX);
        try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(content);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            if (sync) {
                ch.force(true);
            }
        } catch (IOException e) {
            Files.deleteIfExists(temp);
            throw e;
        }
        return temp;
    }

    /** Links {@code temp} at {@code target} unless something is there; false if something was. */
    private static boolean link(Path temp, Path target) throws IOException {
        try {
            Files.createLink(target, temp);
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        } catch (NoSuchFileException e) {
            throw e;
        } catch (UnsupportedOperationException | FileSystemException e) {
            // a file system without hard links: rename, which may replace a racing publisher's equal object
            if (Files.exists(target)) {
                return false;
            }
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException m) {
                throw new IOException("cannot rename atomically in " + target.getParent(), m);
            }
            return true;
        }
    }
}

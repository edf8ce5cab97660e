package ptfence.cli;

import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A file a command writes with {@code -o}: the bytes go to a temporary file beside the target and
 * replace it only on {@link #commit()}, so a command that fails (or is killed) leaves an existing
 * file as it was. Writing over one of the command's own inputs is refused before anything is
 * opened for writing: {@code ptdecode -o rec.data rec.data} would otherwise empty the recording
 * it is about to read.
 */
public final class OutputFile implements Closeable {
    private final Path target;
    private final Path temp;
    private final FileChannel channel;
    private final OutputStream stream;
    private boolean committed;
    private boolean closed;

    private OutputFile(Path target, Path temp, FileChannel channel) {
        this.target = target;
        this.temp = temp;
        this.channel = channel;
        this.stream = new BufferedOutputStream(Channels.newOutputStream(channel), 1 << 16);
    }

    /** A device or pipe (-o /dev/null, a FIFO): written in place, as there is no file to replace. */
    private OutputFile(Path target, OutputStream special) {
        this.target = target;
        this.temp = null;
        this.channel = null;
        this.stream = new BufferedOutputStream(special, 1 << 16);
    }

    /**
     * Opens a temporary file beside {@code target}, after checking that the target is not a
     * directory and is none of {@code inputs} (the same file by inode, whatever the path says).
     */
    public static OutputFile create(Path target, Collection<Path> inputs) throws IOException {
        Objects.requireNonNull(target, "target");
        refuseInputs(target, inputs);
        if (Files.isDirectory(target)) {
            throw new BadInputException(target + ": is a directory, not a file to write");
        }
        if (Files.exists(target) && !Files.isRegularFile(target)) {
            return new OutputFile(target, Files.newOutputStream(target));
        }
        Path abs = target.toAbsolutePath();
        Path dir = abs.getParent();
        if (dir == null || !Files.isDirectory(dir)) {
            throw new BadInputException(target + ": no such directory " + (dir == null ? "/" : dir));
        }
        for (int attempt = 0; ; attempt++) {
            Path temp = dir.resolve("." + abs.getFileName() + ".ptfence-" + ProcessHandle.current().pid()
                    + (attempt == 0 ? "" : "-" + attempt) + ".tmp");
            try {
                FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                copyPermissions(abs, temp);
                return new OutputFile(target, temp, ch);
            } catch (FileAlreadyExistsException e) {
                if (attempt > 100) {
                    throw e;
                }
            }
        }
    }

    public static OutputFile create(Path target, Path... inputs) throws IOException {
        return create(target, List.of(inputs));
    }

    /** One line, exit 2, if {@code target} is the same file as any of {@code inputs}. */
    public static void refuseInputs(Path target, Collection<Path> inputs) {
        if (target == null || inputs == null) {
            return;
        }
        for (Path in : inputs) {
            if (in != null && sameFile(target, in)) {
                throw new BadInputException(target + ": is also an input (" + in + "); refusing to write over it");
            }
        }
    }

    /** Same inode (following links), or the same absolute path when one of them does not exist yet. */
    public static boolean sameFile(Path a, Path b) {
        try {
            if (Files.exists(a) && Files.exists(b)) {
                return Files.isSameFile(a, b);
            }
        } catch (IOException e) {
            // fall back to comparing paths
        }
        return a.toAbsolutePath().normalize().equals(b.toAbsolutePath().normalize());
    }

    public Path target() {
        return target;
    }

    /** The temporary file's stream; closing it does not commit. */
    public OutputStream stream() {
        return stream;
    }

    /** Flushes, syncs and renames the temporary file over the target. */
    public void commit() throws IOException {
        if (closed) {
            throw new IllegalStateException("closed");
        }
        stream.flush();
        if (temp == null) {
            stream.close();
            committed = true;
            closed = true;
            return;
        }
        channel.force(true);
        channel.close();
        try {
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
        }
        committed = true;
        closed = true;
    }

    /** Without a commit, removes the temporary file and leaves the target untouched. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (temp == null) {
            try {
                stream.close();
            } catch (IOException e) {
                // nothing to keep
            }
            return;
        }
        try {
            channel.close();
        } catch (IOException e) {
            // the file goes anyway
        }
        try {
            Files.deleteIfExists(temp);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public boolean committed() {
        return committed;
    }

    private static void copyPermissions(Path from, Path to) {
        try {
            if (Files.exists(from, LinkOption.NOFOLLOW_LINKS)) {
                Set<PosixFilePermission> p = Files.getPosixFilePermissions(from);
                Files.setPosixFilePermissions(to, p);
            }
        } catch (NoSuchFileException | UnsupportedOperationException e) {
            // a new file keeps the umask's permissions
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

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
import java.util.Optional;
import java.util.Set;

/**
 * A file a command writes with {@code -o}: the bytes go to a temporary file beside the target and
 * replace it only on {@link #commit()}, so a command that fails (or is killed) leaves an existing
 * file as it was; a SIGINT or SIGTERM (the JVM's shutdown) removes the temporary file on the way out.
 * Writing over one of the command's own inputs is refused: those named on the command line before
 * anything is opened for writing ({@code ptdecode -o rec.data rec.data} would otherwise empty the
 * recording it is about to read), those found while running ({@link Inputs}) at the commit. Errors name
 * the target, never the temporary file.
 */
public final class OutputFile implements Closeable {
    /** Temporary files not yet committed or removed: the shutdown hook removes them. */
    private static final Set<Path> PENDING = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private static final Thread CLEANUP = new Thread(() -> PENDING.forEach(OutputFile::deleteQuietly),
            "output-file-cleanup");

    static {
        try {
            Runtime.getRuntime().addShutdownHook(CLEANUP);
        } catch (IllegalStateException e) {
            // already shutting down
        }
    }

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
        this.stream = new BufferedOutputStream(new MappedErrors(Channels.newOutputStream(channel),
                e -> named(e, target, true)), 1 << 16);
    }

    /** A device or pipe (-o /dev/null, a FIFO): written in place, as there is no file to replace. */
    private OutputFile(Path target, OutputStream special) {
        this.target = target;
        this.temp = null;
        this.channel = null;
        this.stream = new BufferedOutputStream(new MappedErrors(special, e -> named(e, target, false)), 1 << 16);
    }

    /**
     * Opens a temporary file beside {@code target}, after checking that the target is not a
     * directory and is none of {@code inputs} (the same file by inode, whatever the path says).
     */
    public static OutputFile create(Path target, Collection<Path> inputs) throws IOException {
        Objects.requireNonNull(target, "target");
        checkTarget(target, inputs);
        if (Files.exists(target) && !Files.isRegularFile(target)) {
            try {
                return new OutputFile(target, Files.newOutputStream(target));
            } catch (java.nio.file.FileSystemException e) {
                throw new BadInputException(target + ": cannot write (" + reason(e) + ")");
            }
        }
        Path abs = target.toAbsolutePath();
        Path dir = abs.getParent();
        for (int attempt = 0; ; attempt++) {
            Path temp = dir.resolve("." + abs.getFileName() + ".ptfence-" + ProcessHandle.current().pid()
                    + (attempt == 0 ? "" : "-" + attempt) + ".tmp");
            try {
                FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                PENDING.add(temp);
                copyPermissions(abs, temp);
                return new OutputFile(target, temp, ch);
            } catch (FileAlreadyExistsException e) {
                if (attempt > 100) {
                    throw e;
                }
            } catch (java.nio.file.FileSystemException e) {
                // the temporary file is ours, not the user's: say what it means for the file they named
                throw new BadInputException(target + ": cannot create it in " + dir + " (" + reason(e) + ")");
            }
        }
    }

    /**
     * What every command checks of an output path before writing to it: a name, not a directory, in a directory
     * that exists (naming the one missing), and none of {@code inputs} nor of the {@link Inputs} read so far.
     */
    public static void checkTarget(Path target, Collection<Path> inputs) {
        if (target.toString().isEmpty()) {
            throw new BadInputException("output file name is empty");
        }
        refuseInputs(target, inputs);
        Inputs.sameAs(target).ifPresent(in -> refuseInputs(target, List.of(in)));
        if (Files.isDirectory(target)) {
            throw new BadInputException(target + ": is a directory, not a file to write");
        }
        Path dir = target.toAbsolutePath().getParent();
        if (dir == null || !Files.isDirectory(dir)) {
            Path missing = dir == null ? Path.of("/") : dir;
            while (missing.getParent() != null && !Files.isDirectory(missing.getParent())) {
                missing = missing.getParent();
            }
            throw new BadInputException(target + ": no such directory " + missing
                    + (Files.exists(missing) ? " (not a directory)" : ""));
        }
    }

    private static String reason(java.nio.file.FileSystemException e) {
        if (e.getReason() != null) {
            return e.getReason();
        }
        if (e instanceof java.nio.file.AccessDeniedException) {
            return "permission denied";
        }
        return e instanceof NoSuchFileException ? "no such file or directory" : e.getClass().getSimpleName();
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

    /**
     * Flushes, syncs and renames the temporary file over the target, unless the target is a file the command has
     * read meanwhile ({@link Inputs}): then the target stays as it was, and this is a one-line error.
     */
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
        Optional<Path> input = Inputs.sameAs(target);
        if (input.isPresent()) {
            close();
            throw new BadInputException(target + ": is also an input (" + input.get() + " was read); refusing to "
                    + "write over it, the file was left as it was");
        }
        try {
            channel.force(true);
            channel.close();
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (java.nio.file.FileSystemException e) {
            close();
            throw new BadInputException(target + ": cannot put the output in place (" + reason(e) + "); the file "
                    + "was left as it was");
        } catch (IOException e) {
            close();
            throw new BadInputException(target + ": writing failed (" + e.getMessage() + "); the file was left as "
                    + "it was");
        }
        PENDING.remove(temp);
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
            PENDING.remove(temp);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            // leaving: nothing else to do
        }
    }

    /**
     * A write error naming the file the user gave (a {@link java.nio.file.FileSystemException}, which every tool
     * reports as one line, exit 2), not the temporary file: {@code -o /dev/full} is "no space left", not an internal
     * error.
     */
    private static IOException named(IOException e, Path target, boolean replaces) {
        if (e instanceof java.nio.file.FileSystemException) {
            return e;
        }
        String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return new java.nio.file.FileSystemException(target.toString(), null, "writing failed: " + why
                + (replaces ? " (the file was left as it was)" : ""));
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

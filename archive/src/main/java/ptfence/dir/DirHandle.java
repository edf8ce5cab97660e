package ptfence.dir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;

/**
 * An open directory, and the file operations the tools do inside one, each relative to the handle and never through
 * a symbolic link: a directory or file swapped for a symlink between a check and a use (a hostile or careless user
 * of a shared tree) cannot lead a write or a delete outside the tree.
 *
 * <p>The handle is a descriptor opened with {@code O_DIRECTORY|O_NOFOLLOW} relative to its parent's (openat(2)); the
 * operations name a file as {@code /proc/self/fd/N/NAME}, which the kernel resolves inside exactly that directory, and
 * NAME is one plain component whose own symlink is not followed either (open with {@code O_NOFOLLOW}; link, rename and
 * unlink never follow their last component). Only the top directory a user names is opened by its path, links and all.
 */
public final class DirHandle implements AutoCloseable {
    private static final DirLibC LIBC = LibraryLoader.create(DirLibC.class).load("c");
    private static final Runtime RUNTIME = Runtime.getRuntime(LIBC);
    private static final int O_RDONLY = 0, O_DIRECTORY = 0x10000, O_NOFOLLOW = 0x20000, O_CLOEXEC = 0x80000;
    private static final int ENOENT = 2, EACCES = 13, EEXIST = 17, ENOTDIR = 20, ELOOP = 40, ENOSPC = 28;
    private static final int EROFS = 30, EDQUOT = 122;

    private final int fd;
    private final Path shown;
    private boolean closed;

    private DirHandle(int fd, Path shown) {
        this.fd = fd;
        this.shown = shown;
    }

    /** The directory a user named (links in its path followed, as for any path a user gives). */
    public static DirHandle open(Path dir) throws IOException {
        Path abs = dir.toAbsolutePath().normalize();
        int fd = LIBC.open(abs.toString(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (fd < 0) {
            throw error(abs, RUNTIME.getLastError());
        }
        return new DirHandle(fd, abs);
    }

    /** The path this handle was reached by, for messages only (never opened again by it). */
    public Path path() {
        return shown;
    }

    /** Where {@code name} is, for messages only. */
    public Path shown(String name) {
        return shown.resolve(name);
    }

    /** A subdirectory, made (mode {@code mode}) if absent and {@code create}; a symlink is refused, not followed. */
    public DirHandle child(String name, boolean create, int mode) throws IOException {
        checkName(name);
        if (create && LIBC.mkdirat(fd, name, mode) < 0) {
            int e = RUNTIME.getLastError();
            if (e != EEXIST) {
                throw error(shown(name), e);
            }
        }
        int child = LIBC.openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
        if (child < 0) {
            int e = RUNTIME.getLastError();
            BasicFileAttributes a = e == ENOTDIR ? attributes(name) : null;
            throw error(shown(name), a != null && a.isSymbolicLink() ? ELOOP : e);
        }
        return new DirHandle(child, shown(name));
    }

    /** Creates {@code name} for writing; fails if anything (a symlink included) is there. */
    public FileChannel createNew(String name) throws IOException {
        return FileChannel.open(at(name), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS);
    }

    /** Opens (creating) {@code name} to hold a lock on; a symlink is refused. */
    public FileChannel openForLock(String name) throws IOException {
        return FileChannel.open(at(name), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS);
    }

    /** Opens {@code name} for reading; a symlink is refused. */
    public FileChannel read(String name) throws IOException {
        return FileChannel.open(at(name), StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
    }

    /** The whole content of {@code name} (a symlink refused). */
    public byte[] readAll(String name) throws IOException {
        try (FileChannel ch = read(name)) {
            long size = ch.size();
            if (size > Integer.MAX_VALUE - 16) {
                throw new FileSystemException(shown(name).toString(), null, "too large to read whole");
            }
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate((int) size);
            while (b.hasRemaining() && ch.read(b) >= 0) {
                // until full or the end
            }
            b.flip();
            byte[] out = new byte[b.remaining()];
            b.get(out);
            return out;
        }
    }

    /** Links {@code from} at {@code to}; false if something is there already. Neither name is followed. */
    public boolean link(String from, String to) throws IOException {
        checkName(to);
        try {
            Files.createLink(at(to), at(from));
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        }
    }

    /** Links {@code from} here at {@code to} in directory {@code there}; false if something is there already. */
    public boolean linkTo(String from, DirHandle there, String to) throws IOException {
        try {
            Files.createLink(there.at(to), at(from));
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        }
    }

    /** Renames {@code from} to {@code to} within this directory, atomically (replacing {@code to}). */
    public void rename(String from, String to) throws IOException {
        checkName(to);
        Files.move(at(from), at(to), StandardCopyOption.ATOMIC_MOVE);
    }

    /** Removes the file (or empty directory) {@code name}; false if it was not there. A symlink is removed itself. */
    public boolean delete(String name) throws IOException {
        return Files.deleteIfExists(at(name));
    }

    /** Its attributes (of a symlink itself, not what it points at), or null if nothing is there. */
    public BasicFileAttributes attributes(String name) throws IOException {
        try {
            return Files.readAttributes(at(name), BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    /** Sets its modification time (a symlink's own, never its target's). */
    public void setModified(String name, FileTime t) throws IOException {
        Files.getFileAttributeView(at(name), BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                .setTimes(t, null, null);
    }

    /** The names in this directory, sorted. */
    public List<String> list() throws IOException {
        List<String> out = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(self())) {
            for (Path p : s) {
                out.add(p.getFileName().toString());
            }
        }
        out.sort(null);
        return out;
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            LIBC.close(fd);
        }
    }

    private Path self() {
        if (closed) {
            throw new IllegalStateException(shown + ": handle closed");
        }
        return Path.of("/proc/self/fd/" + fd);
    }

    private Path at(String name) throws IOException {
        checkName(name);
        return self().resolve(name);
    }

    /** One plain component: no '/', not '.' or '..', not empty, no NUL. */
    public static boolean plainName(String name) {
        return !name.isEmpty() && !name.equals(".") && !name.equals("..") && name.indexOf('/') < 0
                && name.indexOf('\0') < 0;
    }

    private void checkName(String name) throws IOException {
        if (!plainName(name)) {
            throw new FileSystemException(shown.toString(), null, "'" + name.replace("\0", "\\0")
                    + "' is not a plain file name");
        }
    }

    /** An errno as the NIO exception the tools already report in one line. */
    private static IOException error(Path p, int errno) {
        String f = p.toString();
        return switch (errno) {
            case ENOENT -> new NoSuchFileException(f);
            case EACCES -> new AccessDeniedException(f);
            case ENOTDIR -> new FileSystemException(f, null, "not a directory (symbolic links are not followed)");
            case ELOOP -> new FileSystemException(f, null, "is a symbolic link (not followed: the tree's "
                    + "directories must be real ones)");
            case ENOSPC, EDQUOT -> new FileSystemException(f, null, "no space left on device");
            case EROFS -> new FileSystemException(f, null, "read-only file system");
            default -> new FileSystemException(f, null, "error " + errno);
        };
    }
}

package ptfence.ptdecode;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import ptfence.cli.BadInputException;

/**
 * What kind of file a path given on the command line is, so that an input that is not a regular file is named for
 * what it is (a character device, a FIFO, a directory; no such file only when there is none), and a FIFO is read as
 * a stream, as stdin is.
 */
final class InputKind {
    private static final int S_IFMT = 0170000;
    private static final int S_IFIFO = 0010000;
    private static final int S_IFCHR = 0020000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFBLK = 0060000;
    private static final int S_IFREG = 0100000;
    private static final int S_IFSOCK = 0140000;

    private InputKind() {}

    /** The file type bits of {@code p} (following links); -1 when there is no such file. */
    static int type(Path p) {
        try {
            return (Integer) Files.getAttribute(p, "unix:mode") & S_IFMT;
        } catch (NoSuchFileException e) {
            return -1;
        } catch (AccessDeniedException e) {
            throw new BadInputException(p + ": permission denied (cannot look into its directory as user "
                    + System.getProperty("user.name") + ")");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return Files.isRegularFile(p) ? S_IFREG : Files.isDirectory(p) ? S_IFDIR : Files.exists(p) ? 0 : -1;
        }
    }

    /** Whether {@code p} is a FIFO (a named pipe): read as a stream, like stdin. */
    static boolean isFifo(Path p) {
        return type(p) == S_IFIFO;
    }

    /** {@code p} in words when it is not a regular file, e.g. "a character device"; null for a regular file. */
    static String notRegular(Path p) {
        return switch (type(p)) {
            case -1 -> Files.isSymbolicLink(p) ? "a dangling symbolic link" : "no such file";
            case S_IFREG -> null;
            case S_IFDIR -> "a directory";
            case S_IFCHR -> "a character device";
            case S_IFBLK -> "a block device";
            case S_IFIFO -> "a FIFO";
            case S_IFSOCK -> "a socket";
            default -> "not a regular file";
        };
    }

    /** A directory option's value ({@code --sysroot}, {@code --symfs}): one line when it is not a directory. */
    static void requireDirectory(Path dir, String option) {
        int t = type(dir);
        if (t != S_IFDIR) {
            throw new BadInputException(option + " " + dir + ": " + (t == -1 ? "no such directory" : "not a directory ("
                    + notRegularOrFile(dir) + ")"));
        }
    }

    private static String notRegularOrFile(Path p) {
        String s = notRegular(p);
        return s == null ? "a file" : s;
    }
}

package ptfence.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import ptfence.cli.BadInputException;

/**
 * Opening an LMDB environment takes a shared POSIX lock on the first byte of {@code lock.mdb} with F_SETLKW, which
 * waits for ever while another process holds a write lock there (LMDB itself holds one only for the instant it
 * sets the lock file up). Before opening, this waits a bounded time for such a lock to go, reading the holders
 * from {@code /proc/locks} by the inode of {@code lock.mdb}, and then refuses with the holder's pid.
 */
final class LockWait {
    /** Environment variable: seconds to wait for another process's lock on lock.mdb (default 5). */
    static final String ENV = "PTFENCE_LOCK_TIMEOUT";
    static final Duration DEFAULT = Duration.ofSeconds(5);
    private static final Path PROC_LOCKS = Path.of("/proc/locks");

    private LockWait() {}

    /** The configured wait: system property ptfence.lockTimeout or $PTFENCE_LOCK_TIMEOUT (seconds), else 5 s. */
    static Duration timeout() {
        String s = System.getProperty("ptfence.lockTimeout", System.getenv(ENV));
        if (s == null || s.isBlank()) {
            return DEFAULT;
        }
        try {
            double secs = Double.parseDouble(s.trim());
            if (secs >= 0 && secs < 1e6) {
                return Duration.ofMillis((long) (secs * 1000));
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        throw new BadInputException(ENV + "=" + s + ": not a number of seconds");
    }

    /** Waits until no other process holds a write lock on byte 0 of this lock file, or refuses after the timeout. */
    static void await(Path archiveDir, Path lockFile, Duration timeout) {
        if (!Files.exists(lockFile) || !Files.isReadable(PROC_LOCKS)) {
            return;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            OptionalLong holder = holder(lockFile);
            if (holder.isEmpty()) {
                return;
            }
            if (System.nanoTime() - deadline >= 0) {
                long pid = holder.getAsLong();
                String who = pid > 0 ? "process " + pid + name(pid) : "another process (an open file description lock)";
                throw new BadInputException("archive " + archiveDir + ": " + lockFile.getFileName() + " is locked by "
                        + who + "; gave up after " + timeout.toMillis() / 1000.0 + " s (LMDB would wait for ever; "
                        + "wait longer with " + ENV + "=SECONDS)");
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new BadInputException("archive " + archiveDir + ": interrupted waiting for the lock on lock.mdb");
            }
        }
    }

    /** The pid (or -1 for an OFD lock) of another process holding a write lock covering byte 0, if any. */
    static OptionalLong holder(Path lockFile) {
        long ino;
        long dev;
        List<String> lines;
        try {
            ino = ((Number) Files.getAttribute(lockFile, "unix:ino")).longValue();
            dev = ((Number) Files.getAttribute(lockFile, "unix:dev")).longValue();
            lines = Files.readAllLines(PROC_LOCKS);
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return OptionalLong.empty();
        }
        long major = ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
        long minor = (dev & 0xff) | ((dev >>> 12) & ~0xffL);
        String file = String.format("%02x:%02x:%d", major, minor, ino);
        long self = ProcessHandle.current().pid();
        for (String line : lines) {
            // "1: POSIX  ADVISORY  WRITE 1234 00:2f:5678 0 EOF"; waiters are "1: -> POSIX ..."
            String[] f = line.trim().split("\\s+");
            if (f.length < 8 || f[1].equals("->") || !f[5].equals(file) || !f[3].equals("WRITE")
                    || !(f[1].equals("POSIX") || f[1].equals("OFDLCK"))) {
                continue;
            }
            try {
                long pid = Long.parseLong(f[4]);
                long start = Long.parseLong(f[6]);
                if (start == 0 && pid != self) {
                    return OptionalLong.of(pid);
                }
            } catch (NumberFormatException e) {
                // not a line we understand
            }
        }
        return OptionalLong.empty();
    }

    private static String name(long pid) {
        try {
            return " (" + Files.readString(Path.of("/proc", Long.toString(pid), "comm")).trim() + ")";
        } catch (IOException e) {
            return "";
        }
    }
}

package ptfence.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import ptfence.cli.BadInputException;

/**
 * The two places LMDB waits for another process without a limit, each bounded here by {@code PTFENCE_LOCK_TIMEOUT}
 * and refused with one line naming the holder's pid:
 * <ul>
 * <li>Opening an environment takes a shared POSIX lock on the first byte of {@code lock.mdb} with F_SETLKW, which
 * waits for ever while another process holds a write lock there (LMDB itself holds one only for the instant it
 * sets the lock file up). Before opening, {@link #await} waits for such a lock to go, reading the holders from
 * {@code /proc/locks} by the inode of {@code lock.mdb}.
 * <li>A write transaction locks LMDB's writer mutex in {@code lock.mdb} (a process-shared robust pthread mutex), and
 * a process that begins a write transaction and stops (a debugger, a hung program) makes every other writer wait
 * for ever. Before each write transaction {@link WriterLock#await} reads that mutex's word from the file and waits,
 * while another live process that maps {@code lock.mdb} owns it.
 * </ul>
 * Both look before LMDB's call: a lock taken in the instant between the look and the call is still waited for.
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
    static void await(Path archiveDir, Path lockFile, Duration timeout, java.util.function.BooleanSupplier stop) {
        if (!Files.exists(lockFile) || !Files.isReadable(PROC_LOCKS)) {
            return;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            OptionalLong holder = holder(lockFile);
            if (holder.isEmpty()) {
                return;
            }
            boolean stopped = stop.getAsBoolean();
            if (stopped || System.nanoTime() - deadline >= 0) {
                long pid = holder.getAsLong();
                String who = pid > 0 ? "process " + pid + name(pid) : "another process (an open file description lock)";
                throw new BadInputException("archive " + archiveDir + ": " + lockFile.getFileName() + " is locked by "
                        + who + "; " + (stopped ? "stopped waiting for it" : "gave up after " + timeout.toMillis()
                        / 1000.0 + " s (LMDB would wait for ever; wait longer with " + ENV + "=SECONDS)"));
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

    /**
     * LMDB's writer mutex as stored in {@code lock.mdb} (LMDB 0.9, x86-64 glibc): the lock file starts with the
     * MDB_txninfo header (u32 magic 0xBEEFC0DE, u32 format, the readers' mutex, the last txn id and reader count,
     * padded to a 64-byte cache line), then the writer mutex. A glibc robust mutex's first word is the owner's
     * thread id (with the FUTEX_WAITERS and FUTEX_OWNER_DIED bits), 0 when free. The mapping is shared, so plain
     * reads of the file see the word as LMDB sets it.
     */
    static final class WriterLock implements AutoCloseable {
        static final int MAGIC = 0xBEEFC0DE;
        static final long WRITER_MUTEX = 64;
        static final int TID_MASK = 0x3fffffff;

        private final Path archiveDir;
        private final Path lockFile;
        private final java.nio.channels.FileChannel ch;
        private final long inode;
        /** Thread ids found owning the mutex, with their process (one that maps this lock file). */
        private final java.util.Map<Integer, Long> holders = new java.util.concurrent.ConcurrentHashMap<>();

        private WriterLock(Path archiveDir, Path lockFile, java.nio.channels.FileChannel ch, long inode) {
            this.archiveDir = archiveDir;
            this.lockFile = lockFile;
            this.ch = ch;
            this.inode = inode;
        }

        /** The writer mutex of this lock file, or null where it cannot be watched (no lock file, another layout). */
        static WriterLock open(Path archiveDir, Path lockFile) {
            try {
                java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(lockFile,
                        java.nio.file.StandardOpenOption.READ);
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                if (ch.read(b, 0) == 4 && b.getInt(0) == MAGIC && ch.size() >= WRITER_MUTEX + 40) {
                    long ino = ((Number) Files.getAttribute(lockFile, "unix:ino")).longValue();
                    return new WriterLock(archiveDir, lockFile, ch, ino);
                }
                ch.close();
            } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
                // not watched: LMDB's own wait applies
            }
            return null;
        }

        /**
         * Waits while another live process holds LMDB's writer mutex, at most {@code timeout}, and gives up at once
         * when {@code stop} says so; then refuses with one line naming the holder.
         */
        void await(Duration timeout, java.util.function.BooleanSupplier stop) {
            long deadline = System.nanoTime() + timeout.toNanos();
            long sleepMs = 1;
            while (true) {
                long pid = holder();
                if (pid <= 0) {
                    return;
                }
                boolean stopped = stop.getAsBoolean();
                if (stopped || System.nanoTime() - deadline >= 0) {
                    throw new BadInputException("archive " + archiveDir + ": process " + pid + name(pid) + " holds "
                            + "the archive's write transaction; " + (stopped ? "stopped waiting for it" : "gave up after "
                            + timeout.toMillis() / 1000.0 + " s (LMDB would wait for ever; wait longer with " + ENV
                            + "=SECONDS)"));
                }
                try {
                    Thread.sleep(sleepMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new BadInputException("archive " + archiveDir + ": interrupted waiting for process " + pid
                            + name(pid) + ", which holds the archive's write transaction");
                }
                sleepMs = Math.min(20, sleepMs * 2);
            }
        }

        /**
         * The pid of another live process owning the writer mutex, else 0 (free, owned by this process, or by a
         * thread that is gone: LMDB recovers a dead owner's mutex itself).
         */
        long holder() {
            int word;
            try {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                if (ch.read(b, WRITER_MUTEX) != 4) {
                    return 0;
                }
                word = b.getInt(0);
            } catch (IOException e) {
                return 0;
            }
            int tid = word & TID_MASK;
            if (tid == 0) {
                return 0;
            }
            Long known = holders.get(tid);
            long pid = known != null ? known : lmdbProcess(tid);
            if (pid <= 0) {
                return 0;
            }
            if (known == null) {
                holders.put(tid, pid);
            } else if (!Files.exists(Path.of("/proc", Integer.toString(tid)))) {
                holders.remove(tid);
                return 0;
            }
            return pid == ProcessHandle.current().pid() ? 0 : pid;
        }

        /**
         * The process of thread {@code tid} if it maps this lock file (so the tid is LMDB's, not a stale or foreign
         * one), else 0.
         */
        private long lmdbProcess(int tid) {
            try {
                long pid = 0;
                for (String line : Files.readAllLines(Path.of("/proc", Integer.toString(tid), "status"))) {
                    if (line.startsWith("Tgid:")) {
                        pid = Long.parseLong(line.substring(5).trim());
                    }
                }
                if (pid <= 0) {
                    return 0;
                }
                if (pid == ProcessHandle.current().pid()) {
                    return pid;
                }
                String ino = " " + inode + " ";
                List<String> maps;
                try {
                    maps = Files.readAllLines(Path.of("/proc", Long.toString(pid), "maps"));
                } catch (java.nio.file.AccessDeniedException e) {
                    return pid;  // another user's process: its thread id is the best we know
                }
                for (String line : maps) {
                    if (line.contains(ino) && line.endsWith(lockFile.getFileName().toString())) {
                        return pid;
                    }
                }
                return 0;
            } catch (IOException | NumberFormatException | SecurityException e) {
                return 0;  // gone, or not ours to read: nothing to wait for that LMDB would not wait for anyway
            }
        }

        @Override
        public void close() {
            try {
                ch.close();
            } catch (IOException e) {
                // read-only channel
            }
        }
    }
}

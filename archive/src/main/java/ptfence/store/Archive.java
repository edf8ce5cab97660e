package ptfence.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.LmdbException;
import org.lmdbjava.LmdbNativeException;
import org.lmdbjava.Txn;
import ptfence.cli.BadInputException;

/**
 * The archive: an LMDB environment in one directory holding content-addressed images, the region index,
 * recordings, pins and leases. Many processes may have it open at once (one writer at a time, readers
 * never blocked); one {@code Archive} is safe to share between threads.
 *
 * <pre>{@code
 * try (Archive archive = Archive.open(ArchiveLocation.resolve(null))) {
 *     ContentKey key = archive.put(bytes);                 // deduplicated, durable on return
 *     byte[] same = archive.get(key).orElseThrow();        // verified against the key
 *     archive.write(batch -> { batch.put(a); batch.put(b); return null; });  // one commit for many
 * }
 * }</pre>
 *
 * <p>The directory is created 0700 and the files 0600: kernel text reveals kernel addresses. The LMDB
 * map grows on demand (doubling); a full disk is an {@link ArchiveFullException} and loses nothing committed.
 */
public final class Archive implements AutoCloseable {
    /** Version of the on-disk layout (docs/archive.md); newer archives are refused, not misread. */
    public static final int FORMAT_VERSION = 1;
    static final byte[] META_FORMAT = "format".getBytes(StandardCharsets.UTF_8);
    static final byte[] META_GENERATION = "generation".getBytes(StandardCharsets.UTF_8);
    static {
        NativeLmdb.locate(); // before lmdbjava loads its library: no copy left in /tmp by a killed JVM
    }

    private static final long INITIAL_MAP_SIZE = 64L << 20;
    private static final int EPERM = 1;
    private static final int EIO = 5;
    private static final int EACCES = 13;
    private static final int EROFS = 30;
    private static final int MDB_NOTFOUND = -30798;
    private static final int ENOSPC = 28;
    /** Below this much free space an EIO from a write is taken as the disk filling up (LMDB turns short writes into EIO). */
    private static final long LOW_SPACE = 16L << 20;
    private static final int EDQUOT = 122;
    private static final int MDB_MAP_RESIZED = -30785;

    private final Path directory;
    private final Env<byte[]> env;
    private final boolean readOnly;
    private final Map<Table, Dbi<byte[]>> dbis = new EnumMap<>(Table.class);
    /** Readers/writers hold it shared; growing the map holds it exclusively (LMDB wants no live txn then). */
    private final ReentrantReadWriteLock mapLock = new ReentrantReadWriteLock();

    /** LMDB's writer mutex, watched so a write waits a bounded time for another process's transaction. */
    private LockWait.WriterLock writerLock;
    private final Duration lockTimeout;
    private final BooleanSupplier stopWaiting;

    private Archive(Path directory, Env<byte[]> env, boolean readOnly, Duration lockTimeout,
            BooleanSupplier stopWaiting) {
        this.directory = directory;
        this.env = env;
        this.readOnly = readOnly;
        this.lockTimeout = lockTimeout;
        this.stopWaiting = stopWaiting;
    }

    private void awaitWriter() {
        if (writerLock != null) {
            writerLock.await(lockTimeout, stopWaiting);
        }
    }

    private void closeWriterLock() {
        if (writerLock != null) {
            writerLock.close();
        }
    }

    /**
     * Opens the archive in this directory for reading and writing, creating it if there is none: for the commands
     * that fill an archive (ptrec, import).
     */
    public static Archive open(Path directory) {
        return open(directory, false, true, () -> false);
    }

    /**
     * {@link #open(Path)}, with every wait for another process's lock (at the open and before each write) given up
     * as soon as {@code stopWaiting} says so (ptrec: a SIGINT or SIGTERM), not only after {@code PTFENCE_LOCK_TIMEOUT}.
     */
    public static Archive open(Path directory, BooleanSupplier stopWaiting) {
        return open(directory, false, true, stopWaiting);
    }

    /**
     * Opens an existing archive for reading and writing; a path that holds no archive is a one-line error and
     * nothing is created (gc, pin, unpin: an archive they would create would only be empty).
     */
    public static Archive openExisting(Path directory) {
        return open(directory, false, false, () -> false);
    }

    /**
     * Opens an existing archive for reading only: never creates anything (a path that holds no archive is a
     * one-line error), works on a read-only file system or with a lock file it cannot write.
     */
    public static Archive openReadOnly(Path directory) {
        return open(directory, true, false, () -> false);
    }

    /**
     * Checks, with plain reads and without LMDB, that an archive exists and that its data file holds the pages LMDB
     * would walk ({@link LmdbFile}); {@code deep} also checks overflow page headers, key order and entry counts.
     * Damage is a one-line {@link BadInputException} naming the page and its offset.
     */
    public static LmdbFile.Report inspect(Path directory, boolean deep) {
        Path dir = directory.toAbsolutePath();
        requireExisting(dir);
        return LmdbFile.check(dir.resolve("data.mdb"), deep);
    }

    private static void requireExisting(Path dir) {
        if (!exists(dir)) {
            throw new BadInputException("archive " + dir + ": no ptfence archive there ("
                    + (Files.isDirectory(dir) ? "no data.mdb" : Files.exists(dir) ? "not a directory"
                    : "no such directory") + ")");
        }
    }

    /**
     * Whether {@code directory} holds an archive (a data.mdb). One this user may not look into or read is not
     * "absent": that is a one-line error saying permission denied, with the path and the user.
     */
    public static boolean exists(Path directory) {
        Path dir = directory.toAbsolutePath();
        Path data = dir.resolve("data.mdb");
        try {
            if (!Files.readAttributes(dir, java.nio.file.attribute.BasicFileAttributes.class).isDirectory()) {
                return false;
            }
            Files.readAttributes(data, java.nio.file.attribute.BasicFileAttributes.class);
        } catch (java.nio.file.NoSuchFileException e) {
            return false;
        } catch (java.nio.file.AccessDeniedException e) {
            throw denied(dir, "cannot look into " + (e.getFile() != null && e.getFile().equals(dir.toString())
                    ? dir.getParent() : dir));
        } catch (IOException e) {
            throw new BadInputException("archive " + dir + ": cannot be read (" + (e.getMessage() == null
                    ? "I/O error" : e.getMessage()) + ")");
        }
        if (!Files.isReadable(data)) {
            throw denied(dir, "cannot read " + data);
        }
        return true;
    }

    private static BadInputException denied(Path dir, String what) {
        return new BadInputException("archive " + dir + ": permission denied (" + what + " as user "
                + System.getProperty("user.name") + ")");
    }

    private static Archive open(Path directory, boolean readOnly, boolean create, BooleanSupplier stopWaiting) {
        Path dir = directory.toAbsolutePath();
        Path data = dir.resolve("data.mdb");
        if (!create) {
            requireExisting(dir);
        } else {
            createPrivateDirectory(dir);
        }
        long fileSize = 0;
        if (Files.exists(data)) {
            // LMDB trusts its file: what it would walk is checked here first, with plain reads (see LmdbFile); a
            // writer checks as deeply as verify does (key order, entry counts, overflow headers, the free-page lists
            // its commits reuse): it must not rewrite, or delete by, pages that are damaged
            fileSize = LmdbFile.check(data, !readOnly).fileSize();
        }
        Duration lockTimeout = LockWait.timeout();
        LockWait.await(dir, dir.resolve("lock.mdb"), lockTimeout, stopWaiting);
        Env<byte[]> env;
        try {
            env = openEnv(dir, fileSize, readOnly, false);
        } catch (LmdbNativeException e) {
            if (readOnly && e.getResultCode() == EACCES) {
                // a lock file we may not write (another user's archive): read without LMDB's reader table
                env = openEnv(dir, fileSize, true, true);
            } else {
                throw e;
            }
        }
        Archive archive = new Archive(dir, env, readOnly, lockTimeout, stopWaiting);
        try {
            if (!readOnly) {
                restrict(data);
                restrict(dir.resolve("lock.mdb"));
                archive.writerLock = LockWait.WriterLock.open(dir, dir.resolve("lock.mdb"));
            }
            env.readerCheck();  // clear reader slots of processes that died
            archive.openTables();
        } catch (LmdbNativeException e) {
            archive.closeWriterLock();
            env.close();
            throw archive.translate(e);
        } catch (RuntimeException e) {
            archive.closeWriterLock();
            env.close();
            throw e;
        }
        return archive;
    }

    private static Env<byte[]> openEnv(Path dir, long fileSize, boolean readOnly, boolean noLock) {
        List<EnvFlags> flags = new ArrayList<>(List.of(EnvFlags.MDB_NOTLS));
        if (readOnly) {
            flags.add(EnvFlags.MDB_RDONLY_ENV);
        }
        if (noLock) {
            flags.add(EnvFlags.MDB_NOLOCK);
        }
        try {
            return Env.create(PinnedByteArrayProxy.PROXY)
                    .setMapSize(Math.max(INITIAL_MAP_SIZE, roundUp(fileSize * 2)))
                    .setMaxDbs(Table.values().length + 2)
                    .setMaxReaders(512)
                    .open(dir.toFile(), 0600, flags.toArray(new EnvFlags[0]));
        } catch (LmdbNativeException e) {
            int rc = e.getResultCode();
            if (rc == EACCES && readOnly && !noLock) {
                throw e; // the caller retries without the lock file
            }
            if (rc == EACCES || rc == EROFS || rc == EPERM) {
                throw new BadInputException("archive " + dir + ": " + (rc == EROFS ? "read-only file system" : "permission "
                        + "denied") + (readOnly ? "" : "; this command writes to the archive (ls, show, stats, verify "
                        + "and export only read)"), e);
            }
            throw new BadInputException("archive " + dir + ": cannot open the database (" + e.getMessage()
                    + "); it is damaged or not a ptfence archive", e);
        } catch (LmdbException e) {
            throw new BadInputException("archive " + dir + ": cannot open the database (" + e.getMessage()
                    + "); it is damaged or not a ptfence archive", e);
        }
    }

    private void openTables() {
        if (!readOnly) {
            awaitWriter();
        }
        try (Txn<byte[]> txn = readOnly ? env.txnRead() : env.txnWrite()) {
            for (Table t : Table.values()) {
                try {
                    dbis.put(t, readOnly ? env.openDbi(txn, t.dbName().getBytes(StandardCharsets.UTF_8), null, false)
                            : env.openDbi(txn, t.dbName().getBytes(StandardCharsets.UTF_8), null, false,
                                    DbiFlags.MDB_CREATE));
                } catch (LmdbNativeException e) {
                    if (readOnly && e.getResultCode() == MDB_NOTFOUND) {
                        throw new BadInputException("archive " + directory + ": not a ptfence archive (no table '"
                                + t.dbName() + "')");
                    }
                    throw e;
                }
            }
            Dbi<byte[]> meta = dbis.get(Table.META);
            byte[] format = meta.get(txn, META_FORMAT);
            if (format == null && !readOnly) {
                meta.put(txn, META_FORMAT, ByteBuffer.allocate(4).putInt(FORMAT_VERSION).array());
            } else if (format == null || format.length != 4 || ByteBuffer.wrap(format).getInt() != FORMAT_VERSION) {
                int v = format != null && format.length == 4 ? ByteBuffer.wrap(format).getInt() : -1;
                throw new BadInputException("archive " + directory + ": format version " + v
                        + " is not the one this ptarchive knows (" + FORMAT_VERSION + ")");
            }
            txn.commit(); // a read transaction's commit keeps the database handles for the environment
        } catch (Env.MapFullException e) {
            throw new ArchiveFullException("archive " + directory + ": map full while opening", e);
        }
    }

    /** Whether this archive was opened with {@link #openReadOnly}. */
    public boolean readOnly() {
        return readOnly;
    }

    /** The directory holding data.mdb and lock.mdb. */
    public Path directory() {
        return directory;
    }

    /** Runs a function over a consistent read-only snapshot. */
    public <R> R read(Function<Snapshot, R> fn) {
        for (int attempt = 0; ; attempt++) {
            boolean resized = false;
            mapLock.readLock().lock();
            try (Txn<byte[]> txn = env.txnRead()) {
                return fn.apply(new Snapshot(this, txn));
            } catch (LmdbNativeException e) {
                if (e.getResultCode() != MDB_MAP_RESIZED || attempt > 3) {
                    throw translate(e);
                }
                resized = true;
            } finally {
                mapLock.readLock().unlock();
            }
            if (resized) {
                if (mapLock.getReadHoldCount() > 0) {
                    throw new IllegalStateException("archive " + directory + ": another process grew the map; "
                            + "adopting it cannot happen inside an open transaction of this thread");
                }
                adoptMapSize();
            }
        }
    }

    /**
     * Runs a function in one write transaction and commits. If the map is full it is grown and the
     * function run again from the start, so the function must act only through the batch.
     */
    public <R> R write(Function<Batch, R> fn) {
        if (readOnly) {
            throw new IllegalStateException("archive " + directory + " was opened read-only");
        }
        for (int attempt = 0; ; attempt++) {
            boolean full = false;
            boolean resized = false;
            awaitWriter();
            mapLock.readLock().lock();
            try (Txn<byte[]> txn = env.txnWrite()) {
                R result = fn.apply(new Batch(this, txn));
                txn.commit();
                return result;
            } catch (Env.MapFullException e) {
                full = true;
            } catch (LmdbNativeException e) {
                if (e.getResultCode() != MDB_MAP_RESIZED || attempt > 3) {
                    throw translate(e);
                }
                resized = true;
            } finally {
                mapLock.readLock().unlock();
            }
            if (mapLock.getReadHoldCount() > 0 && (full || resized)) {
                // Growing needs every transaction of this process closed, the caller's own included.
                throw new IllegalStateException("archive " + directory + ": the map must grow, which cannot happen "
                        + "inside read() or write(); do not nest write() in another transaction");
            }
            if (full) {
                grow();
            } else if (resized) {
                adoptMapSize();
            }
        }
    }

    /** Stores one image (one commit) and returns its key. */
    public ContentKey put(byte[] content) {
        return write(b -> b.put(content));
    }

    /** Stores many images in one commit; returns their keys in order. */
    public List<ContentKey> putAll(Collection<byte[]> contents) {
        return write(b -> {
            List<ContentKey> keys = new ArrayList<>(contents.size());
            for (byte[] c : contents) {
                keys.add(b.put(c));
            }
            return keys;
        });
    }

    /** The verified bytes of an image, or empty if absent; damaged bytes throw {@link DamagedImageException}. */
    public Optional<byte[]> get(ContentKey key) {
        return read(s -> s.image(key));
    }

    /** Whether the image is present. */
    public boolean contains(ContentKey key) {
        return read(s -> s.hasImage(key));
    }

    /** Size of the LMDB map (address space reserved, not disk used). */
    public long mapSize() {
        return env.info().mapSize;
    }

    /** Bytes the data file takes on disk. */
    public long fileSize() {
        try {
            return Files.size(directory.resolve("data.mdb"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        mapLock.writeLock().lock();
        try {
            env.close();
            closeWriterLock();
        } finally {
            mapLock.writeLock().unlock();
        }
    }

    Dbi<byte[]> dbi(Table t) {
        return dbis.get(t);
    }

    private void grow() {
        mapLock.writeLock().lock();
        try {
            long current = env.info().mapSize;
            env.setMapSize(current * 2);
        } catch (LmdbNativeException e) {
            throw translate(e);
        } finally {
            mapLock.writeLock().unlock();
        }
    }

    /** Another process grew the map: take its size (LMDB's documented answer to MDB_MAP_RESIZED). */
    private void adoptMapSize() {
        mapLock.writeLock().lock();
        try {
            env.setMapSize(0);
        } finally {
            mapLock.writeLock().unlock();
        }
    }

    private RuntimeException translate(LmdbNativeException e) {
        int rc = e.getResultCode();
        if (rc == ENOSPC || rc == EDQUOT || (rc == EIO && usableSpace() < LOW_SPACE)) {
            return new ArchiveFullException("archive " + directory + ": no space left on the device; the write "
                    + "was rolled back and everything committed before is intact (free space and retry)", e);
        }
        if (rc == EACCES || rc == EPERM || rc == EROFS) {
            return new BadInputException("archive " + directory + ": " + (rc == EROFS ? "read-only file system"
                    : "permission denied") + " (" + e.getMessage() + ")", e);
        }
        // LMDB's own codes other than the ones about sizes and limits say the file is not what LMDB wrote
        boolean limit = rc == MDB_MAP_RESIZED || rc == -30792 || rc == -30790 || rc == -30788 || rc == -30791;
        if (rc <= -30780 && rc >= -30800 && !limit
                || e instanceof LmdbNativeException.PageCorruptedException
                || e instanceof LmdbNativeException.PageNotFoundException
                || e instanceof LmdbNativeException.PanicException
                || e instanceof Env.FileInvalidException
                || e instanceof Dbi.BadValueSizeException) {
            return new BadInputException("archive " + directory + ": the database is damaged (" + e.getMessage()
                    + "); run 'ptarchive verify'", e);
        }
        return e;
    }

    private long usableSpace() {
        try {
            return Files.getFileStore(directory).getUsableSpace();
        } catch (IOException e) {
            return Long.MAX_VALUE;
        }
    }

    private static long roundUp(long n) {
        long mb = 1L << 20;
        return (n + mb - 1) / mb * mb;
    }

    private static void createPrivateDirectory(Path dir) {
        try {
            if (!Files.isDirectory(dir)) {
                Files.createDirectories(dir.getParent());
                Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rwx------")));
            }
        } catch (java.nio.file.FileAlreadyExistsException e) {
            // created by a concurrent process: fine
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create archive directory " + dir, e);
        }
    }

    private static void restrict(Path file) {
        try {
            if (Files.exists(file)) {
                Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
            }
        } catch (IOException | UnsupportedOperationException e) {
            // not our file (another user's archive we may read): leave its mode alone
        }
    }
}

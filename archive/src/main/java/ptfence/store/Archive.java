package ptfence.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;
import org.lmdbjava.ByteArrayProxy;
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
    private static final long INITIAL_MAP_SIZE = 64L << 20;
    private static final int EIO = 5;
    private static final int ENOSPC = 28;
    /** Below this much free space an EIO from a write is taken as the disk filling up (LMDB turns short writes into EIO). */
    private static final long LOW_SPACE = 16L << 20;
    private static final int EDQUOT = 122;
    private static final int MDB_MAP_RESIZED = -30785;

    private final Path directory;
    private final Env<byte[]> env;
    private final Map<Table, Dbi<byte[]>> dbis = new EnumMap<>(Table.class);
    /** Readers/writers hold it shared; growing the map holds it exclusively (LMDB wants no live txn then). */
    private final ReentrantReadWriteLock mapLock = new ReentrantReadWriteLock();

    private Archive(Path directory, Env<byte[]> env) {
        this.directory = directory;
        this.env = env;
    }

    /** Opens (creating if needed) the archive in this directory. */
    public static Archive open(Path directory) {
        Path dir = directory.toAbsolutePath();
        createPrivateDirectory(dir);
        Path data = dir.resolve("data.mdb");
        long fileSize = 0;
        try {
            if (Files.exists(data)) {
                fileSize = Files.size(data);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Env<byte[]> env;
        try {
            env = Env.create(ByteArrayProxy.PROXY_BA)
                    .setMapSize(Math.max(INITIAL_MAP_SIZE, roundUp(fileSize * 2)))
                    .setMaxDbs(Table.values().length + 2)
                    .setMaxReaders(512)
                    .open(dir.toFile(), 0600, EnvFlags.MDB_NOTLS);
        } catch (LmdbException e) {
            throw new BadInputException("archive " + dir + ": cannot open the database (" + e.getMessage()
                    + "); it is damaged or not a ptfence archive");
        }
        Archive archive = new Archive(dir, env);
        try {
            restrict(data);
            restrict(dir.resolve("lock.mdb"));
            env.readerCheck();  // clear reader slots of processes that died
            archive.openTables();
        } catch (RuntimeException e) {
            env.close();
            throw e;
        }
        return archive;
    }

    private void openTables() {
        try (Txn<byte[]> txn = env.txnWrite()) {
            for (Table t : Table.values()) {
                dbis.put(t, env.openDbi(txn, t.dbName().getBytes(StandardCharsets.UTF_8), null, false,
                        DbiFlags.MDB_CREATE));
            }
            Dbi<byte[]> meta = dbis.get(Table.META);
            byte[] format = meta.get(txn, META_FORMAT);
            if (format == null) {
                meta.put(txn, META_FORMAT, ByteBuffer.allocate(4).putInt(FORMAT_VERSION).array());
            } else if (format.length != 4 || ByteBuffer.wrap(format).getInt() != FORMAT_VERSION) {
                int v = format.length == 4 ? ByteBuffer.wrap(format).getInt() : -1;
                throw new BadInputException("archive " + directory + ": format version " + v
                        + " is not the one this ptarchive knows (" + FORMAT_VERSION + ")");
            }
            txn.commit();
        } catch (Env.MapFullException e) {
            throw new ArchiveFullException("archive " + directory + ": map full while opening", e);
        } catch (LmdbNativeException e) {
            throw translate(e);
        }
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
        for (int attempt = 0; ; attempt++) {
            boolean full = false;
            boolean resized = false;
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
        if (e instanceof LmdbNativeException.PageCorruptedException
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

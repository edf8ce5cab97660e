package ptfence.store;

import java.nio.ByteBuffer;
import org.lmdbjava.Txn;

/**
 * One write transaction: everything done through it becomes visible at once, or (on a crash, a kill,
 * a full disk or an exception) not at all. Commits cost about 0.35 ms each, so put many images per
 * batch; but keep a batch short in time, because LMDB has a single writer and a live capture waits for it.
 *
 * <p>A batch may be run more than once when the map must grow; the code in it must only act through it.
 */
public final class Batch extends Snapshot {
    private long generation = -1;

    Batch(Archive archive, Txn<byte[]> txn) {
        super(archive, txn);
    }

    /**
     * Stores an image and returns its key. An image already present is not written again, only touched
     * (so a concurrent gc keeps it).
     */
    public ContentKey put(byte[] content) {
        ContentKey key = ContentKey.of(content);
        byte[] k = key.toBytes();
        byte[] info = archive.dbi(Table.IMAGE_INFO).get(txn, k);
        long gen = currentGeneration();
        if (info != null) {
            ImageInfo old = ImageInfo.decode(info);
            if (old.touchGeneration() < gen) {
                putRaw(Table.IMAGE_INFO, k, new ImageInfo(old.length(), old.firstPutMillis(), gen).encode());
            }
            return key;
        }
        putRaw(Table.IMAGES, k, content);
        putRaw(Table.IMAGE_INFO, k, new ImageInfo(content.length, System.currentTimeMillis(), gen).encode());
        return key;
    }

    /** Marks an image as referenced now, so a gc that started earlier does not sweep it. */
    public boolean touch(ContentKey key) {
        byte[] k = key.toBytes();
        byte[] info = archive.dbi(Table.IMAGE_INFO).get(txn, k);
        if (info == null) {
            return false;
        }
        ImageInfo old = ImageInfo.decode(info);
        long gen = currentGeneration();
        if (old.touchGeneration() < gen) {
            putRaw(Table.IMAGE_INFO, k, new ImageInfo(old.length(), old.firstPutMillis(), gen).encode());
        }
        return true;
    }

    /** Removes an image (gc only). */
    public boolean deleteImage(ContentKey key) {
        byte[] k = key.toBytes();
        boolean had = deleteRaw(Table.IMAGE_INFO, k);
        return deleteRaw(Table.IMAGES, k) || had;
    }

    /** The generation writes in this batch are stamped with. */
    public long currentGeneration() {
        if (generation < 0) {
            generation = generation();
        }
        return generation;
    }

    /**
     * Starts a new generation and returns it: everything touched from now on carries it. Used by gc
     * (to know what appeared while it ran) and by leases (to know what a capture wrote).
     */
    public long advanceGeneration() {
        long next = generation() + 1;
        putRaw(Table.META, Archive.META_GENERATION, ByteBuffer.allocate(8).putLong(next).array());
        generation = next;
        return next;
    }

    /** Writes a raw entry. For the packages that own a table's layout. */
    public void putRaw(Table table, byte[] key, byte[] value) {
        archive.dbi(table).put(txn, key, value);
    }

    /** Deletes a raw entry; false if there was none. */
    public boolean deleteRaw(Table table, byte[] key) {
        return archive.dbi(table).delete(txn, key);
    }
}

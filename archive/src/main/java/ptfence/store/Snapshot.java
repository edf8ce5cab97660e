package ptfence.store;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Optional;
import org.lmdbjava.Cursor;
import org.lmdbjava.GetOp;
import org.lmdbjava.Txn;

/**
 * A consistent view of the archive (one LMDB read transaction, or the write transaction of a
 * {@link Batch}). Everything found through one snapshot stays readable through it: if a region is
 * found, its image is there too, even while gc runs in another process. Readers that look up a region
 * and then its bytes must do both through the same snapshot.
 */
public class Snapshot {
    final Archive archive;
    final Txn<byte[]> txn;

    Snapshot(Archive archive, Txn<byte[]> txn) {
        this.archive = archive;
        this.txn = txn;
    }

    /** The archive this snapshot reads. */
    public Archive archive() {
        return archive;
    }

    /** The verified bytes of an image, or empty if the archive does not hold it. */
    public Optional<byte[]> image(ContentKey key) {
        byte[] v = archive.dbi(Table.IMAGES).get(txn, key.toBytes());
        if (v == null) {
            return Optional.empty();
        }
        if (!key.matches(v)) {
            throw new DamagedImageException(key, "archive " + archive.directory() + ": image " + key.hex()
                    + " is damaged (its " + v.length + " bytes do not hash to its key); run 'ptarchive verify'");
        }
        return Optional.of(v);
    }

    /** The verified bytes of an image; a missing image is an error naming the key. */
    public byte[] requireImage(ContentKey key) {
        return image(key).orElseThrow(() -> new DamagedImageException(key, "archive " + archive.directory()
                + ": image " + key.hex() + " is not in the archive"));
    }

    /** Whether the archive holds an image with this key (without reading or verifying it). */
    public boolean hasImage(ContentKey key) {
        return archive.dbi(Table.IMAGE_INFO).get(txn, key.toBytes()) != null;
    }

    /** Length, first put and touch generation of an image. */
    public Optional<ImageInfo> imageInfo(ContentKey key) {
        byte[] v = archive.dbi(Table.IMAGE_INFO).get(txn, key.toBytes());
        return v == null ? Optional.empty() : Optional.of(ImageInfo.decode(v));
    }

    /** Every image key with its info, in key order; the visitor returns false to stop. */
    public void forEachImage(ImageVisitor visitor) {
        forEachPrefix(Table.IMAGE_INFO, new byte[0],
                (k, v) -> visitor.visit(ContentKey.fromBytes(k), ImageInfo.decode(v)));
    }

    /** Visitor of {@link #forEachImage}. */
    @FunctionalInterface
    public interface ImageVisitor {
        boolean visit(ContentKey key, ImageInfo info);
    }

    /** Visitor of raw table entries; returns false to stop. */
    @FunctionalInterface
    public interface EntryVisitor {
        boolean visit(byte[] key, byte[] value);
    }

    /** The archive generation as of this snapshot (see {@link ImageInfo#touchGeneration()}). */
    public long generation() {
        byte[] v = raw(Table.META, Archive.META_GENERATION);
        return v == null ? 0 : ByteBuffer.wrap(v).getLong();
    }

    /** Number of entries in a table. */
    public long count(Table table) {
        return archive.dbi(table).stat(txn).entries;
    }

    /** The raw value under a key, or null. For the packages that own a table's layout. */
    public byte[] raw(Table table, byte[] key) {
        return archive.dbi(table).get(txn, key);
    }

    /** Visits entries whose key starts with the prefix, in key order. */
    public void forEachPrefix(Table table, byte[] prefix, EntryVisitor visitor) {
        try (Cursor<byte[]> c = archive.dbi(table).openCursor(txn)) {
            boolean ok = prefix.length == 0 ? c.first() : c.get(prefix, GetOp.MDB_SET_RANGE);
            while (ok) {
                byte[] k = c.key();
                if (!startsWith(k, prefix) || !visitor.visit(k, c.val())) {
                    return;
                }
                ok = c.next();
            }
        }
    }

    /**
     * Visits entries with keys strictly below {@code before}, in descending key order, while their keys
     * start with {@code prefix}.
     */
    public void forEachDescending(Table table, byte[] prefix, byte[] before, EntryVisitor visitor) {
        try (Cursor<byte[]> c = archive.dbi(table).openCursor(txn)) {
            boolean ok;
            if (c.get(before, GetOp.MDB_SET_RANGE)) {
                ok = c.prev();
            } else {
                ok = c.last();
            }
            while (ok) {
                byte[] k = c.key();
                if (!startsWith(k, prefix) || !visitor.visit(k, c.val())) {
                    return;
                }
                ok = c.prev();
            }
        }
    }

    static boolean startsWith(byte[] k, byte[] prefix) {
        return k.length >= prefix.length && Arrays.equals(k, 0, prefix.length, prefix, 0, prefix.length);
    }
}

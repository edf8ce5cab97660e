package ptfence.store;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The checksum stored records end with (region and recording records): a CRC-32C of every byte before it. Image
 * bytes are covered by their content key; this covers what no key does (a program's source text and line info, a
 * recording's perf.data path), so damage on disk is found by verify and refused by readers instead of shown.
 */
public final class RecordChecksum {
    /** Bytes the checksum adds. */
    public static final int LENGTH = 4;

    private RecordChecksum() {}

    /** The record with its checksum appended. */
    public static byte[] append(byte[] record) {
        byte[] out = java.util.Arrays.copyOf(record, record.length + LENGTH);
        ByteBuffer.wrap(out, record.length, LENGTH).putInt(crc(record, record.length));
        return out;
    }

    /** The record without its checksum, or null when the checksum does not match (or the record is too short). */
    public static byte[] strip(byte[] v) {
        int n = v.length - LENGTH;
        if (n < 1 || ByteBuffer.wrap(v, n, LENGTH).getInt() != crc(v, n)) {
            return null;
        }
        return java.util.Arrays.copyOf(v, n);
    }

    private static int crc(byte[] b, int length) {
        CRC32C c = new CRC32C();
        c.update(b, 0, length);
        return (int) c.getValue();
    }
}

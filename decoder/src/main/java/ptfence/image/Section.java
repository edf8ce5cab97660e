package ptfence.image;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Code bytes loaded at an address, optionally valid only for a time range (a module loaded at one time
 * and unloaded at another). The content id is a digest of the bytes, so decoded-instruction caches can be
 * shared by every section (in any image, at any address) that holds the same code.
 *
 * @param name       where the bytes came from, for messages ("file.bin", "vmlinux[0x1000]")
 * @param address    virtual address of {@code bytes[0]}
 * @param bytes      the code; never modified after construction
 * @param contentId  digest of {@code bytes}
 * @param validFrom  first time (trace time units) the section is mapped; {@link Long#MIN_VALUE} for always
 * @param validTo    first time it is no longer mapped (exclusive); {@link Long#MAX_VALUE} for always
 */
public record Section(String name, long address, byte[] bytes, String contentId, long validFrom, long validTo) {

    public static Section of(String name, long address, byte[] bytes) {
        return new Section(name, address, bytes, digest(bytes), Long.MIN_VALUE, Long.MAX_VALUE);
    }

    public Section during(long from, long to) {
        return new Section(name, address, bytes, contentId, from, to);
    }

    public int size() {
        return bytes.length;
    }

    /** Exclusive end address. */
    public long end() {
        return address + bytes.length;
    }

    public boolean covers(long addr, long time) {
        return Long.compareUnsigned(addr - address, bytes.length) < 0 && time >= validFrom && time < validTo;
    }

    public static String digest(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}

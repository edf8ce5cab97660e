package ptfence.store;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import ptfence.cli.BadInputException;

/**
 * The name of an image in the archive: the SHA-256 of its bytes. Equal bytes have equal keys, so an
 * image is stored once however many regions, recordings or machines refer to it; and a reader can
 * always check that the bytes it got are the bytes that were named.
 */
public final class ContentKey implements Comparable<ContentKey> {
    /** Length of a key in bytes. */
    public static final int LENGTH = 32;
    private static final HexFormat HEX = HexFormat.of();
    private static final ThreadLocal<MessageDigest> SHA256 = ThreadLocal.withInitial(ContentKey::newDigest);

    private final byte[] bytes;

    private ContentKey(byte[] bytes) {
        this.bytes = bytes;
    }

    /** The key of these bytes (hashes them). */
    public static ContentKey of(byte[] content) {
        return new ContentKey(sha256(content));
    }

    /** A key from its 32 raw bytes (as stored in the archive). */
    public static ContentKey fromBytes(byte[] raw) {
        if (raw.length != LENGTH) {
            throw new IllegalArgumentException("content key must be 32 bytes, got " + raw.length);
        }
        return new ContentKey(raw.clone());
    }

    /** A key from its 64 hex digits; anything else is bad input. */
    public static ContentKey parse(String hex) {
        if (hex.length() != 2 * LENGTH || !isHex(hex)) {
            throw new BadInputException("not a content key (64 hex digits): " + hex);
        }
        return new ContentKey(HEX.parseHex(hex));
    }

    /** True if the string is non-empty and made only of hex digits (a key or a key prefix). */
    public static boolean isHex(String s) {
        if (s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            if (Character.digit(s.charAt(i), 16) < 0) {
                return false;
            }
        }
        return true;
    }

    /** SHA-256 of the bytes, with a per-thread digest (no allocation of a digest per call). */
    public static byte[] sha256(byte[] content) {
        MessageDigest md = SHA256.get();
        md.reset();
        return md.digest(content);
    }

    /** True if these are the bytes this key names. */
    public boolean matches(byte[] content) {
        return MessageDigest.isEqual(bytes, sha256(content));
    }

    /** A copy of the 32 raw bytes. */
    public byte[] toBytes() {
        return bytes.clone();
    }

    /** 64 lower-case hex digits. */
    public String hex() {
        return HEX.formatHex(bytes);
    }

    /** The first 12 hex digits, enough to tell keys apart in listings. */
    public String shortHex() {
        return hex().substring(0, 12);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ContentKey k && Arrays.equals(bytes, k.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    @Override
    public int compareTo(ContentKey o) {
        return Arrays.compareUnsigned(bytes, o.bytes);
    }

    @Override
    public String toString() {
        return hex();
    }

    private static MessageDigest newDigest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java 17 runtime has SHA-256", e);
        }
    }
}

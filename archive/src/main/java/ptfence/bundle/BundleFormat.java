package ptfence.bundle;

import java.nio.charset.StandardCharsets;

/**
 * Layout of a bundle file (docs/archive.md, "Bundle format"): everything one recording needs, in one
 * file, so it decodes on another machine.
 *
 * <pre>
 * magic   "PTFBUNDL"                        8 bytes
 * version u32 (big-endian)                  = 2 (version 1, without files, is still read)
 * entry*  type u8, length u32, payload      RECORDING first, then IMAGEs, then REGIONs, then FILEs, each FILE
 *                                           followed by FILE_DATA entries holding its bytes in order
 * END     type 0xFF, length 40: u64 number of entries before it, SHA-256 of every byte before the END payload
 * </pre>
 */
public final class BundleFormat {
    static final byte[] MAGIC = "PTFBUNDL".getBytes(StandardCharsets.US_ASCII);
    /** The bundle version this build writes; it reads this one and version 1. */
    public static final int VERSION = 2;
    static final int RECORDING = 1;
    static final int IMAGE = 2;
    static final int REGION = 3;
    /** A carried file: u8 role, utf recorded path, u32 n + n bytes build id, u64 size; its bytes follow in FILE_DATA. */
    static final int FILE = 4;
    static final int FILE_DATA = 5;
    /** Bytes per FILE_DATA entry (a perf.data can be gigabytes: it is streamed, never held whole). */
    static final int FILE_CHUNK = 16 << 20;
    static final int END = 0xFF;
    static final int END_LENGTH = 8 + 32;
    /** Upper bound of one entry (an image or a region with its BPF metadata). */
    static final int MAX_ENTRY = 1 << 30;

    private BundleFormat() {}
}

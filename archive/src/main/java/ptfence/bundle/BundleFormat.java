package ptfence.bundle;

import java.nio.charset.StandardCharsets;

/**
 * Layout of a bundle file (docs/archive.md, "Bundle format"): everything one recording needs, in one
 * file, so it decodes on another machine.
 *
 * <pre>
 * magic   "PTFBUNDL"                        8 bytes
 * version u32 (big-endian)                  = 1
 * entry*  type u8, length u32, payload      RECORDING first, then IMAGEs, then REGIONs
 * END     type 0xFF, length 40: u64 number of entries before it, SHA-256 of every byte before the END payload
 * </pre>
 */
public final class BundleFormat {
    static final byte[] MAGIC = "PTFBUNDL".getBytes(StandardCharsets.US_ASCII);
    /** The bundle version this build writes and reads. */
    public static final int VERSION = 1;
    static final int RECORDING = 1;
    static final int IMAGE = 2;
    static final int REGION = 3;
    static final int END = 0xFF;
    static final int END_LENGTH = 8 + 32;
    /** Upper bound of one entry (an image or a region with its BPF metadata). */
    static final int MAX_ENTRY = 1 << 30;

    private BundleFormat() {}
}

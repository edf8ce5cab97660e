package ptfence.region;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Objects;
import ptfence.store.ContentKey;

/**
 * Which bytes were at which address of which boot, and when.
 *
 * @param bootId    the host's boot id (/proc/sys/kernel/random/boot_id); kernel addresses mean nothing across boots
 * @param address   first byte's address
 * @param length    number of bytes (the image's length)
 * @param validFrom first instant the bytes were there, in the recording's perf time (ns; CLOCK_MONOTONIC for a
 *                  sideband-only ptrec recording, perf's own clock with PT)
 * @param validTo   first instant they were no longer there (exclusive), or {@link #OPEN} while loaded
 * @param kind      what kind of code
 * @param name      symbol-like name (bpf_prog_6deef7357e7b4530_foo, module name, file path...)
 * @param key       content key of the bytes
 * @param metadata  what else is known (BPF program info, file origin, or nothing)
 */
public record Region(String bootId, long address, long length, long validFrom, long validTo, RegionKind kind,
        String name, ContentKey key, RegionMetadata metadata) {
    /** validTo of a region that is still loaded. */
    public static final long OPEN = Long.MAX_VALUE;

    public Region {
        Objects.requireNonNull(bootId, "bootId");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(key, "key");
        metadata = metadata == null ? RegionMetadata.None.INSTANCE : metadata;
        if (bootId.isEmpty() || bootId.getBytes(StandardCharsets.UTF_8).length > 64) {
            throw new IllegalArgumentException("boot id must be 1..64 bytes: '" + bootId + "'");
        }
        if (length <= 0) {
            throw new IllegalArgumentException("region length must be positive: " + length);
        }
        if (validTo < validFrom) {
            throw new IllegalArgumentException("validTo " + validTo + " must not be before validFrom " + validFrom);
        }
    }

    /**
     * The region's identity: the first 8 bytes of SHA-256 over boot, address, length, validFrom, kind and
     * key. validTo is not part of it (a region keeps its id when it is closed), and the same region
     * recorded twice, or imported twice, is one region.
     */
    public long id() {
        byte[] boot = bootId.getBytes(StandardCharsets.UTF_8);
        byte[] kindName = kind.name().getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(boot.length + 1 + 24 + kindName.length + 1 + ContentKey.LENGTH);
        b.put(boot).put((byte) 0).putLong(address).putLong(length).putLong(validFrom).put(kindName)
                .put((byte) 0).put(key.toBytes());
        return ByteBuffer.wrap(ContentKey.sha256(b.array())).getLong();
    }

    /** The id as 16 hex digits (how the CLI shows and accepts it). */
    public String idHex() {
        return idHex(id());
    }

    /** A region id as 16 hex digits. */
    public static String idHex(long id) {
        return HexFormat.of().toHexDigits(id);
    }

    /** Whether the region is still loaded. */
    public boolean isOpen() {
        return validTo == OPEN;
    }

    /** Address just past the last byte. */
    public long end() {
        return address + length;
    }

    /** Whether the address falls inside (unsigned, as kernel addresses are). */
    public boolean contains(long addr) {
        return Long.compareUnsigned(addr, address) >= 0 && Long.compareUnsigned(addr - address, length) < 0;
    }

    /** Whether the bytes were there at this time. */
    public boolean validAt(long time) {
        return validFrom <= time && time < validTo;
    }

    /** The same region, closed at this time. */
    public Region closedAt(long time) {
        return new Region(bootId, address, length, validFrom, time, kind, name, key, metadata);
    }

    /**
     * Every content-store entry the region needs: its image, and its program's BTF or its kernel's kallsyms (each
     * stored once by content). gc keeps
     * them, bundles carry them, verify checks them.
     */
    public java.util.List<ContentKey> contentKeys() {
        ContentKey more = metadata instanceof BpfMetadata m ? m.btfKey()
                : metadata instanceof KernelMetadata k ? k.kallsymsKey() : null;
        return more == null || more.equals(key) ? java.util.List.of(key) : java.util.List.of(key, more);
    }

    /** The BPF tag, or "" if this is not a BPF region with a tag. */
    public String tag() {
        return metadata instanceof BpfMetadata m ? m.tag() : "";
    }
}

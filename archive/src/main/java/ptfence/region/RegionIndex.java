package ptfence.region;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import ptfence.store.Batch;
import ptfence.store.ContentKey;
import ptfence.store.Snapshot;
import ptfence.store.Table;

/**
 * The time-aware region index: adding and closing regions, and the queries the decoder and the CLI ask.
 * Every method works inside a {@link Snapshot} (read) or {@link Batch} (write), so a lookup of a region
 * and of its bytes is one consistent view.
 *
 * <pre>{@code
 * archive.write(b -> RegionIndex.add(b, new Region(boot, addr, code.length, t0, Region.OPEN,
 *         RegionKind.BPF_PROG, name, b.put(code), meta)));
 * archive.write(b -> RegionIndex.closeOpenAt(b, boot, addr, t1));          // at unload
 * Optional<ImageAt> at = archive.read(s -> RegionIndex.bytesAt(s, boot, ip, time));
 * }</pre>
 */
public final class RegionIndex {
    private static final int MAX_NAME_KEY_BYTES = 400;
    private static final byte[] EMPTY = new byte[0];

    private RegionIndex() {}

    /**
     * Adds a region whose image is already in the archive (put it in the same batch); the region's length
     * must be the image's. Idempotent: adding
     * a region that exists touches it and, if the new one is closed and the stored one open, closes it.
     *
     * @return the region id
     */
    public static long add(Batch b, Region r) {
        long imageLength = b.imageInfo(r.key()).map(i -> i.length()).orElseThrow(() -> new IllegalArgumentException(
                "image " + r.key().hex() + " of region " + r.name()
                        + " is not in the archive: put it (in the same batch) before adding the region"));
        if (imageLength != r.length()) {
            throw new IllegalArgumentException("region " + r.name() + " is " + r.length() + " bytes long but its image "
                    + r.key().hex() + " has " + imageLength + " bytes");
        }
        if (r.metadata() instanceof BpfMetadata m && m.btfElsewhere() && b.imageInfo(m.btfKey()).isEmpty()
                || r.metadata() instanceof KernelMetadata k && k.kallsymsElsewhere()
                && b.imageInfo(k.kallsymsKey()).isEmpty()) {
            throw new IllegalArgumentException("content " + r.contentKeys().get(1).hex() + " of region " + r.name()
                    + " is not in the archive: put it (in the same batch) before adding the region");
        }
        b.touch(r.key());
        long id = r.id();
        byte[] idKey = idKey(id);
        byte[] old = b.raw(Table.REGIONS, idKey);
        if (old != null) {
            Region stored = RegionCodec.decode(old, "region " + Region.idHex(id));
            if (stored.isOpen() && !r.isOpen()) {
                b.putRaw(Table.REGIONS, idKey, encodeStoring(b, stored.closedAt(r.validTo())));
            }
            touch(b, id);
            return id;
        }
        b.putRaw(Table.REGIONS, idKey, encodeStoring(b, r));
        b.putRaw(Table.REGION_BY_ADDR, addrKey(r.bootId(), r.address(), id), EMPTY);
        b.putRaw(Table.REGION_BY_NAME, nameKey(r.name(), id), EMPTY);
        if (!r.tag().isEmpty()) {
            b.putRaw(Table.REGION_BY_TAG, tagKey(r.tag(), id), EMPTY);
        }
        byte[] maxKey = maxLenKey(r.bootId());
        byte[] max = b.raw(Table.META, maxKey);
        if (max == null || ByteBuffer.wrap(max).getLong() < r.length()) {
            b.putRaw(Table.META, maxKey, longBytes(r.length()));
        }
        touch(b, id);
        return id;
    }

    /** Marks a region as referenced now (and its image), so a gc already running keeps both. */
    public static boolean touch(Batch b, long id) {
        byte[] v = b.raw(Table.REGIONS, idKey(id));
        if (v == null) {
            return false;
        }
        b.putRaw(Table.REGION_TOUCH, idKey(id), longBytes(b.currentGeneration()));
        for (ContentKey k : RegionCodec.decode(v, "region " + Region.idHex(id)).contentKeys()) {
            b.touch(k);
        }
        return true;
    }

    /**
     * A region's stored record; a program's BTF (a kernel's kallsyms) goes into the content store (once, however many regions and
     * programs share it) and the record keeps its key.
     */
    private static byte[] encodeStoring(Batch b, Region r) {
        if (r.metadata() instanceof BpfMetadata m && m.btf().length > 0) {
            b.put(m.btf());
        } else if (r.metadata() instanceof KernelMetadata k && k.kallsyms().length > 0) {
            b.put(k.kallsyms());
        }
        return RegionCodec.encode(r);
    }

    /**
     * The region with the content its metadata refers to put back from the content store — a program's BTF, a
     * kernel's kallsyms (a region record holds their keys only); unchanged when it has none or the bytes are not in
     * this snapshot.
     */
    public static Region withContent(Snapshot s, Region r) {
        RegionMetadata full = r.metadata();
        if (r.metadata() instanceof BpfMetadata m && m.btfElsewhere()) {
            full = s.image(m.btfKey()).map(m::withBtf).orElse(m);
        } else if (r.metadata() instanceof KernelMetadata k && k.kallsymsElsewhere()) {
            full = s.image(k.kallsymsKey()).map(k::withKallsyms).orElse(k);
        }
        return full == r.metadata() ? r : new Region(r.bootId(), r.address(), r.length(), r.validFrom(), r.validTo(),
                r.kind(), r.name(), r.key(), full);
    }

    /** The generation a region was last touched in (0 if never). */
    public static long touchGeneration(Snapshot s, long id) {
        byte[] v = s.raw(Table.REGION_TOUCH, idKey(id));
        return v == null ? 0 : ByteBuffer.wrap(v).getLong();
    }

    /**
     * Gives a stored region another end, open or closed, even where it was closed already (a closed region keeps its
     * end otherwise, {@link #close}): the capture learnt late that a text's versions from some time were wrong (a
     * BPF trampoline's exact in-kernel copy came after the versions its late read gave), and redraws them, a wrong
     * one to no width. False if unknown.
     */
    public static boolean redraw(Batch b, long id, long validTo) {
        Optional<Region> r = get(b, id);
        if (r.isEmpty()) {
            return false;
        }
        b.putRaw(Table.REGIONS, idKey(id), encodeStoring(b, r.get().closedAt(Math.max(validTo, r.get().validFrom()))));
        return true;
    }

    /** Closes a region: its bytes stopped being there at {@code validTo}. False if unknown or already closed. */
    public static boolean close(Batch b, long id, long validTo) {
        Optional<Region> r = get(b, id);
        if (r.isEmpty() || !r.get().isOpen()) {
            return false;
        }
        b.putRaw(Table.REGIONS, idKey(id), encodeStoring(b, r.get().closedAt(validTo)));
        return true;
    }

    /**
     * Gives a stored region the metadata of {@code r} (same id; its validity stays as stored): what was learnt of a
     * program after its region was written, such as its source found later. False if the region is unknown.
     */
    public static boolean enrich(Batch b, Region r) {
        Optional<Region> stored = get(b, r.id());
        if (stored.isEmpty()) {
            return false;
        }
        Region s = stored.get();
        if (!s.metadata().equals(r.metadata())) {
            b.putRaw(Table.REGIONS, idKey(r.id()), encodeStoring(b, new Region(s.bootId(), s.address(), s.length(),
                    s.validFrom(), s.validTo(), s.kind(), s.name(), s.key(), r.metadata())));
            touch(b, r.id());
        }
        return true;
    }

    /** Closes every open region of this boot starting at this address (what an unload event knows). */
    public static int closeOpenAt(Batch b, String bootId, long address, long validTo) {
        List<Long> ids = new ArrayList<>();
        b.forEachPrefix(Table.REGION_BY_ADDR, addrPrefix(bootId, address), (k, v) -> ids.add(idOf(k)));
        int closed = 0;
        for (long id : ids) {
            if (close(b, id, validTo)) {
                closed++;
            }
        }
        return closed;
    }

    /** The region with this id. */
    public static Optional<Region> get(Snapshot s, long id) {
        byte[] v = s.raw(Table.REGIONS, idKey(id));
        return v == null ? Optional.empty() : Optional.of(RegionCodec.decode(v, "region " + Region.idHex(id)));
    }

    /**
     * The region holding this address at this time (perf time, ns), if any. When regions overlap in both
     * address and time (which a correct capture never records), the one loaded last wins.
     */
    public static Optional<Region> at(Snapshot s, String bootId, long address, long time) {
        return containing(s, bootId, address).stream().filter(r -> r.validAt(time))
                .max(Comparator.comparingLong(Region::validFrom));
    }

    /** The bytes at this address at this time: the region and its verified image. */
    public static Optional<ImageAt> bytesAt(Snapshot s, String bootId, long address, long time) {
        return at(s, bootId, address, time).map(r -> new ImageAt(r, s.requireImage(r.key())));
    }

    /** Every region of this boot that ever held this address, oldest first. */
    public static List<Region> containing(Snapshot s, String bootId, long address) {
        byte[] max = s.raw(Table.META, maxLenKey(bootId));
        if (max == null) {
            return List.of();
        }
        long maxLen = ByteBuffer.wrap(max).getLong();
        byte[] prefix = bootPrefix(bootId);
        // Entries sort by start address; walk down from the address while a region could still reach it.
        byte[] before = address == -1L ? afterPrefix(prefix) : addrPrefix(bootId, address + 1);
        List<Region> found = new ArrayList<>();
        s.forEachDescending(Table.REGION_BY_ADDR, prefix, before, (k, v) -> {
            long start = ByteBuffer.wrap(k, prefix.length, 8).getLong();
            if (Long.compareUnsigned(address - start, maxLen) >= 0) {
                return false;
            }
            get(s, idOf(k)).filter(r -> r.contains(address)).ifPresent(found::add);
            return true;
        });
        found.sort(Comparator.comparingLong(Region::validFrom));
        return found;
    }

    /** All regions with exactly this name, oldest first. */
    public static List<Region> byName(Snapshot s, String name) {
        byte[] prefix = namePrefix(name);
        List<Region> found = new ArrayList<>();
        s.forEachPrefix(Table.REGION_BY_NAME, prefix, (k, v) -> {
            if (k.length == prefix.length + 8) {
                get(s, idOf(k)).filter(r -> r.name().equals(name)).ifPresent(found::add);
            }
            return true;
        });
        found.sort(Comparator.comparingLong(Region::validFrom));
        return found;
    }

    /** All BPF regions whose tag starts with these hex digits, oldest first. */
    public static List<Region> byTagPrefix(Snapshot s, String hexPrefix) {
        String p = hexPrefix.toLowerCase(java.util.Locale.ROOT);
        if (p.length() > 16 || (!p.isEmpty() && !ContentKey.isHex(p))) {
            return List.of();
        }
        byte[] bytePrefix = HexFormat.of().parseHex(p.substring(0, p.length() & ~1));
        List<Region> found = new ArrayList<>();
        s.forEachPrefix(Table.REGION_BY_TAG, bytePrefix, (k, v) -> {
            get(s, idOf(k)).filter(r -> r.tag().startsWith(p)).ifPresent(found::add);
            return true;
        });
        found.sort(Comparator.comparingLong(Region::validFrom));
        return found;
    }

    /** Every region, in id order; the filter is applied as they stream by. */
    public static List<Region> all(Snapshot s, Predicate<Region> filter) {
        List<Region> found = new ArrayList<>();
        s.forEachPrefix(Table.REGIONS, EMPTY, (k, v) -> {
            Region r = RegionCodec.decode(v, "region " + Region.idHex(ByteBuffer.wrap(k).getLong()));
            if (filter.test(r)) {
                found.add(r);
            }
            return true;
        });
        return found;
    }

    /** Removes a region and its index entries (gc and nothing else). Its image is left to the caller. */
    public static boolean delete(Batch b, long id) {
        Optional<Region> r = get(b, id);
        if (r.isEmpty()) {
            return false;
        }
        Region region = r.get();
        b.deleteRaw(Table.REGION_BY_ADDR, addrKey(region.bootId(), region.address(), id));
        b.deleteRaw(Table.REGION_BY_NAME, nameKey(region.name(), id));
        if (!region.tag().isEmpty()) {
            b.deleteRaw(Table.REGION_BY_TAG, tagKey(region.tag(), id));
        }
        b.deleteRaw(Table.REGION_TOUCH, idKey(id));
        return b.deleteRaw(Table.REGIONS, idKey(id));
    }

    /**
     * Checks every region: it decodes, its image is present, and each index entry points at a region
     * that has it. Problems go to the sink, one line each; returns the number of regions.
     */
    public static long check(Snapshot s, java.util.function.Consumer<String> problems) {
        long[] n = {0};
        s.forEachPrefix(Table.REGIONS, EMPTY, (k, v) -> {
            n[0]++;
            String where = "region " + (k.length == 8 ? Region.idHex(ByteBuffer.wrap(k).getLong()) : "?");
            Region r;
            try {
                r = RegionCodec.decode(v, where);
            } catch (RuntimeException e) {
                problems.accept(e.getMessage());
                return true;
            }
            if (r.id() != ByteBuffer.wrap(k).getLong()) {
                problems.accept(where + " is stored under the wrong id (its fields give " + r.idHex() + ")");
            }
            for (ContentKey key : r.contentKeys()) {
                if (!s.hasImage(key)) {
                    problems.accept(where + " (" + r.name() + ") needs " + (key.equals(r.key()) ? "image " : "BTF ")
                            + key.hex() + " which is missing");
                }
            }
            if (s.raw(Table.REGION_BY_ADDR, addrKey(r.bootId(), r.address(), r.id())) == null
                    || s.raw(Table.REGION_BY_NAME, nameKey(r.name(), r.id())) == null
                    || (!r.tag().isEmpty() && s.raw(Table.REGION_BY_TAG, tagKey(r.tag(), r.id())) == null)) {
                problems.accept(where + " (" + r.name() + ") is missing from an index");
            }
            return true;
        });
        for (Table index : new Table[] {Table.REGION_BY_ADDR, Table.REGION_BY_NAME, Table.REGION_BY_TAG,
                Table.REGION_TOUCH}) {
            s.forEachPrefix(index, EMPTY, (k, v) -> {
                if (k.length < 8 || s.raw(Table.REGIONS, idKey(idOf(k))) == null) {
                    problems.accept(index.dbName() + " entry points at missing region "
                            + (k.length < 8 ? "?" : Region.idHex(idOf(k))));
                }
                return true;
            });
        }
        return n[0];
    }

    /**
     * Region records written before records carried a checksum (format versions 1 and 2): read as they are, their
     * metadata unchecked; a record is written anew, checked, when its region closes or gains metadata.
     */
    public static long unchecked(Snapshot s) {
        long[] n = {0};
        s.forEachPrefix(Table.REGIONS, EMPTY, (k, v) -> {
            if (!RegionCodec.checked(v)) {
                n[0]++;
            }
            return true;
        });
        return n[0];
    }

    /** Key of a region in REGIONS: its id, 8 bytes big-endian. */
    public static byte[] idKey(long id) {
        return longBytes(id);
    }

    /** The region id in the last 8 bytes of an index key. */
    public static long idOf(byte[] indexKey) {
        return ByteBuffer.wrap(indexKey, indexKey.length - 8, 8).getLong();
    }

    private static byte[] bootPrefix(String bootId) {
        byte[] boot = bootId.getBytes(StandardCharsets.UTF_8);
        byte[] p = new byte[1 + boot.length];
        p[0] = (byte) boot.length;
        System.arraycopy(boot, 0, p, 1, boot.length);
        return p;
    }

    private static byte[] addrPrefix(String bootId, long address) {
        byte[] boot = bootPrefix(bootId);
        return ByteBuffer.allocate(boot.length + 8).put(boot).putLong(address).array();
    }

    private static byte[] addrKey(String bootId, long address, long id) {
        byte[] p = addrPrefix(bootId, address);
        return ByteBuffer.allocate(p.length + 8).put(p).putLong(id).array();
    }

    /** Smallest key greater than every key with this prefix. */
    private static byte[] afterPrefix(byte[] prefix) {
        byte[] k = Arrays.copyOf(prefix, prefix.length + 17);
        Arrays.fill(k, prefix.length, k.length, (byte) 0xFF);
        return k;
    }

    private static byte[] namePrefix(String name) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        int len = Math.min(n.length, MAX_NAME_KEY_BYTES);
        byte[] p = Arrays.copyOf(n, len + 1);
        p[len] = 0;
        return p;
    }

    private static byte[] nameKey(String name, long id) {
        byte[] p = namePrefix(name);
        return ByteBuffer.allocate(p.length + 8).put(p).putLong(id).array();
    }

    private static byte[] tagKey(String tag, long id) {
        return ByteBuffer.allocate(16).put(HexFormat.of().parseHex(tag)).putLong(id).array();
    }

    private static byte[] maxLenKey(String bootId) {
        return ("maxlen:" + bootId).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] longBytes(long v) {
        return ByteBuffer.allocate(8).putLong(v).array();
    }
}

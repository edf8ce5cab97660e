package ptfence.publish;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;
import ptfence.region.Region;
import ptfence.region.RegionCodec;
import ptfence.store.ContentKey;

/**
 * The one writer of a published image (docs/fleet.md, "The object"): a small ELF64 x86-64 executable that debuginfod
 * indexes and serves as {@code /buildid/KEY/executable}, and gdb, perf or objdump can open as any binary.
 *
 * <ul>
 *   <li>{@code .note.gnu.build-id} (NT_GNU_BUILD_ID, also behind a PT_NOTE): the image's content key, all 32 bytes
 *       of its SHA-256; debuginfod, its client library and {@code debuginfod-find} take build ids of any length up to
 *       64 bytes, so no prefix is needed and a key names one object;</li>
 *   <li>{@code .text} (PROGBITS, ALLOC|EXECINSTR, behind an R+X PT_LOAD): the image's bytes at the address of its
 *       first region;</li>
 *   <li>{@code .ptfence.regions}: u32 format version (1), u32 count, then per region a u32 length and the archive's
 *       own region record ({@link RegionCodec}: boot, address, length, valid-from/to, kind, name, key, and whatever
 *       metadata the archive keeps, with the BTF and kallsyms it refers to inline:
 *       {@link RegionCodec#encodeSelfContained}), so a field the archive learns to keep travels without a new
 *       format;</li>
 *   <li>{@code .symtab}: the regions' names at the {@code .text} address, for tools that show symbols.</li>
 * </ul>
 *
 * <p>The bytes depend only on the image and the regions given (sorted here), so publishing the same thing twice
 * writes the same object.
 */
public final class ImageObject {
    /** The side section holding the region records. */
    public static final String REGIONS_SECTION = ".ptfence.regions";
    /** Version of the {@link #REGIONS_SECTION} layout. */
    public static final int REGIONS_VERSION = 1;
    /** At most this many region records per object (the oldest): one image reloaded all day needs only a few. */
    public static final int MAX_REGIONS = 64;

    private static final int EHDR = 64;
    private static final int PHDR = 56;
    private static final int SHDR = 64;
    private static final int SYM = 24;
    private static final int NT_GNU_BUILD_ID = 3;
    private static final String[] SECTION_NAMES = {"", ".note.gnu.build-id", ".text", REGIONS_SECTION, ".symtab",
            ".strtab", ".shstrtab"};

    private ImageObject() {}

    /**
     * The object for an image and the regions that use it (at least one; each must name this image and be as long
     * as it).
     */
    public static byte[] write(ContentKey key, byte[] image, List<Region> regions) {
        if (regions.isEmpty()) {
            throw new IllegalArgumentException("image " + key.hex() + ": no region says where it was");
        }
        List<Region> sorted = new ArrayList<>(regions);
        sorted.sort(Comparator.comparingLong(Region::validFrom).thenComparingLong(Region::id));
        if (sorted.size() > MAX_REGIONS) {
            sorted = new ArrayList<>(sorted.subList(0, MAX_REGIONS));
        }
        for (Region r : sorted) {
            if (!r.key().equals(key) || r.length() != image.length) {
                throw new IllegalArgumentException("region " + r.name() + " does not hold image " + key.hex());
            }
        }
        long address = sorted.get(0).address();

        byte[] regionSection = regionSection(sorted);
        TreeSet<String> names = new TreeSet<>();
        sorted.stream().filter(r -> r.address() == address).forEach(r -> names.add(r.name()));
        ByteArrayOut strtab = new ByteArrayOut();
        strtab.u8(0);
        List<Integer> nameOffsets = new ArrayList<>();
        for (String n : names) {
            nameOffsets.add(strtab.size());
            strtab.bytes(n.getBytes(StandardCharsets.UTF_8)).u8(0);
        }
        ByteArrayOut shstrtab = new ByteArrayOut();
        int[] shName = new int[SECTION_NAMES.length];
        for (int i = 0; i < SECTION_NAMES.length; i++) {
            shName[i] = shstrtab.size();
            shstrtab.bytes(SECTION_NAMES[i].getBytes(StandardCharsets.US_ASCII)).u8(0);
        }

        int phoff = EHDR;
        int noteOff = phoff + 2 * PHDR;
        int noteLen = 12 + 4 + ContentKey.LENGTH;
        int textOff = align(noteOff + noteLen, 16) + (int) (address & 15);
        int regionsOff = align(textOff + image.length, 8);
        int symOff = align(regionsOff + regionSection.length, 8);
        int symLen = SYM * (1 + names.size());
        int strOff = symOff + symLen;
        int shstrOff = strOff + strtab.size();
        int shoff = align(shstrOff + shstrtab.size(), 8);
        int total = shoff + SHDR * SECTION_NAMES.length;

        ByteBuffer b = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        // ELF header: 64-bit, little-endian, current version, System V ABI, ET_EXEC for x86-64
        b.put(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1, 0});
        b.position(16);
        b.putShort((short) 2).putShort((short) 62).putInt(1).putLong(address).putLong(phoff).putLong(shoff)
                .putInt(0).putShort((short) EHDR).putShort((short) PHDR).putShort((short) 2)
                .putShort((short) SHDR).putShort((short) SECTION_NAMES.length)
                .putShort((short) (SECTION_NAMES.length - 1));
        // PT_LOAD (R+X) for the code, PT_NOTE for the build id
        b.position(phoff);
        b.putInt(1).putInt(5).putLong(textOff).putLong(address).putLong(address).putLong(image.length)
                .putLong(image.length).putLong(16);
        b.putInt(4).putInt(4).putLong(noteOff).putLong(0).putLong(0).putLong(noteLen).putLong(noteLen).putLong(4);
        b.position(noteOff);
        b.putInt(4).putInt(ContentKey.LENGTH).putInt(NT_GNU_BUILD_ID).put(new byte[] {'G', 'N', 'U', 0})
                .put(key.toBytes());
        b.position(textOff);
        b.put(image);
        b.position(regionsOff);
        b.put(regionSection);
        b.position(symOff + SYM); // symbol 0 is the null symbol
        for (int off : nameOffsets) {
            // st_name, st_info = GLOBAL FUNC, st_other, st_shndx = .text, st_value, st_size
            b.putInt(off).put((byte) 0x12).put((byte) 0).putShort((short) 2).putLong(address).putLong(image.length);
        }
        b.position(strOff);
        b.put(strtab.toArray());
        b.position(shstrOff);
        b.put(shstrtab.toArray());
        b.position(shoff + SHDR); // section 0 is the null section
        section(b, shName[1], 7 /* NOTE */, 0, 0, noteOff, noteLen, 0, 0, 4, 0);
        section(b, shName[2], 1 /* PROGBITS */, 0x6 /* ALLOC|EXECINSTR */, address, textOff, image.length, 0, 0, 16,
                0);
        section(b, shName[3], 1, 0, 0, regionsOff, regionSection.length, 0, 0, 8, 0);
        section(b, shName[4], 2 /* SYMTAB */, 0, 0, symOff, symLen, 5, 1, 8, SYM);
        section(b, shName[5], 3 /* STRTAB */, 0, 0, strOff, strtab.size(), 0, 0, 1, 0);
        section(b, shName[6], 3, 0, 0, shstrOff, shstrtab.size(), 0, 0, 1, 0);
        return b.array();
    }

    private static byte[] regionSection(List<Region> regions) {
        ByteArrayOut out = new ByteArrayOut();
        out.u32(REGIONS_VERSION).u32(regions.size());
        for (Region r : regions) {
            byte[] rec = RegionCodec.encodeSelfContained(r);
            out.u32(rec.length).bytes(rec);
        }
        return out.toArray();
    }

    private static void section(ByteBuffer b, int name, int type, long flags, long addr, long offset, long size,
            int link, int info, long align, long entsize) {
        b.putInt(name).putInt(type).putLong(flags).putLong(addr).putLong(offset).putLong(size).putInt(link)
                .putInt(info).putLong(align).putLong(entsize);
    }

    private static int align(int n, int a) {
        return (n + a - 1) / a * a;
    }

    /** A growable little-endian byte buffer for the string tables and the region section. */
    private static final class ByteArrayOut {
        private final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();

        ByteArrayOut u8(int v) {
            bytes.write(v);
            return this;
        }

        ByteArrayOut u32(int v) {
            for (int i = 0; i < 4; i++) {
                bytes.write(v >>> (8 * i));
            }
            return this;
        }

        ByteArrayOut bytes(byte[] b) {
            bytes.write(b, 0, b.length);
            return this;
        }

        int size() {
            return bytes.size();
        }

        byte[] toArray() {
            return bytes.toByteArray();
        }
    }
}

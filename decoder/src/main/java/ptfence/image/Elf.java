package ptfence.image;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * The parts of a 64-bit little-endian ELF file that symbols and source lines need: section headers by name (with
 * zlib-compressed debug sections inflated), the PT_LOAD segments (file offset to virtual address) and the GNU build
 * id. Code segments for decoding are {@link ElfSegments}' job.
 */
public final class Elf {
    /** A section header: name, type, flags, address, file offset, size, link. */
    public record SectionHeader(String name, int type, long flags, long addr, long offset, long size, int link) {
    }

    /** A PT_LOAD program header. */
    public record Load(long offset, long vaddr, long filesz, long memsz, int flags) {
    }

    public static final int SHT_SYMTAB = 2;
    public static final int SHT_DYNSYM = 11;
    public static final int ET_DYN = 3;
    private static final long SHF_COMPRESSED = 0x800;
    /** The most deflate can expand its input (zlib's technical note: 1032:1). */
    private static final long MAX_INFLATE_RATIO = 1032;

    private final Path file;
    private final byte[] all;
    private final ByteBuffer b;
    private final int type;
    private final List<SectionHeader> sections = new ArrayList<>();
    private final List<Load> loads = new ArrayList<>();

    private Elf(Path file, byte[] all) {
        this.file = file;
        this.all = all;
        this.b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        this.type = Short.toUnsignedInt(b.getShort(0x10));
        long phoff = b.getLong(0x20);
        int phentsize = Short.toUnsignedInt(b.getShort(0x36));
        int phnum = Short.toUnsignedInt(b.getShort(0x38));
        for (int i = 0; i < phnum; i++) {
            long p = phoff + (long) i * phentsize;
            if (p < 0 || p + 56 > all.length) {
                break;
            }
            if (b.getInt((int) p) == 1) {
                loads.add(new Load(b.getLong((int) p + 8), b.getLong((int) p + 16), b.getLong((int) p + 32),
                        b.getLong((int) p + 40), b.getInt((int) p + 4)));
            }
        }
        long shoff = b.getLong(0x28);
        int shentsize = Short.toUnsignedInt(b.getShort(0x3a));
        int shnum = Short.toUnsignedInt(b.getShort(0x3c));
        int shstrndx = Short.toUnsignedInt(b.getShort(0x3e));
        if (shoff <= 0 || shoff > all.length || (long) shnum * shentsize > all.length - shoff || shentsize < 64) {
            return;
        }
        long strOff = shstrndx < shnum ? b.getLong((int) (shoff + (long) shstrndx * shentsize) + 0x18) : -1;
        for (int i = 0; i < shnum; i++) {
            int sh = (int) (shoff + (long) i * shentsize);
            int nameOff = b.getInt(sh);
            String name = strOff < 0 ? "" : cString(strOff + Integer.toUnsignedLong(nameOff));
            sections.add(new SectionHeader(name, b.getInt(sh + 4), b.getLong(sh + 8), b.getLong(sh + 0x10),
                    b.getLong(sh + 0x18), b.getLong(sh + 0x20), b.getInt(sh + 0x28)));
        }
    }

    /** The file as an ELF, or null if it is not a 64-bit little-endian one (or cannot be read). */
    public static Elf read(Path file) {
        byte[] all;
        try {
            all = ptfence.cli.Inputs.readAllBytes(file);
        } catch (IOException e) {
            return null;
        }
        return of(file, all);
    }

    /**
     * Bytes that did not come from a file here (an object fetched from a server) as an ELF named {@code name}, or
     * null if they are not a 64-bit little-endian one or their headers point outside them.
     */
    public static Elf of(Path name, byte[] all) {
        if (all.length < 64 || ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN).getInt(0) != 0x464c457f
                || all[4] != 2 || all[5] != 1) {
            return null;
        }
        try {
            return new Elf(name, all);
        } catch (RuntimeException e) {
            return null; // a header field pointing outside the bytes
        }
    }

    public Path file() {
        return file;
    }

    /** ET_DYN: a shared object or PIE, whose addresses move with where it was mapped. */
    public boolean relocatable() {
        return type == ET_DYN;
    }

    public List<SectionHeader> sections() {
        return sections;
    }

    public List<Load> loads() {
        return loads;
    }

    /** The raw bytes of the file. */
    ByteBuffer bytes() {
        return b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The lowest PT_LOAD address (what ELF --elf FILE:BASE moves to BASE). */
    public long lowestLoad() {
        long min = -1;
        for (Load l : loads) {
            if (Long.compareUnsigned(l.vaddr(), min) < 0) {
                min = l.vaddr();
            }
        }
        return min;
    }

    /** The virtual address of a file offset, through the PT_LOAD holding it; -1 if none does. */
    public long vaddrOf(long fileOffset) {
        for (Load l : loads) {
            if (fileOffset >= l.offset() && fileOffset - l.offset() < Math.max(l.filesz(), 1)) {
                return l.vaddr() + (fileOffset - l.offset());
            }
        }
        return -1;
    }

    /** A section's contents by name (inflated when SHF_COMPRESSED with zlib), or null if absent or unreadable. */
    public ByteBuffer section(String name) {
        for (SectionHeader s : sections) {
            if (s.name().equals(name) && s.type() != 8 /* NOBITS */) {
                return contents(s);
            }
        }
        return null;
    }

    /** The contents of one section, or null. */
    public ByteBuffer contents(SectionHeader s) {
        if (s.offset() < 0 || s.size() < 0 || s.offset() > all.length || s.size() > all.length - s.offset()) {
            return null;
        }
        ByteBuffer raw = ByteBuffer.wrap(all, (int) s.offset(), (int) s.size()).slice()
                .order(ByteOrder.LITTLE_ENDIAN);
        if ((s.flags() & SHF_COMPRESSED) == 0) {
            return raw;
        }
        if (raw.remaining() < 24 || raw.getInt(0) != 1 /* ELFCOMPRESS_ZLIB */) {
            return null; // zstd and others: not read
        }
        long size = raw.getLong(8);
        // the claimed size is the header's word, not the data's: deflate cannot expand more than about 1032:1, so a
        // larger claim is a lie (a 1 KB section saying 2 GB), refused before anything is allocated for it
        if (size < 0 || size > Math.min(Integer.MAX_VALUE - 16, (s.size() - 24) * MAX_INFLATE_RATIO + 64)) {
            return null;
        }
        byte[] out = new byte[(int) size];
        Inflater inf = new Inflater();
        int n = 0;
        try {
            inf.setInput(all, (int) s.offset() + 24, (int) s.size() - 24);
            while (n < out.length && !inf.finished()) {
                int k = inf.inflate(out, n, out.length - n);
                if (k == 0 && (inf.needsInput() || inf.needsDictionary())) {
                    break;
                }
                n += k;
            }
        } catch (DataFormatException e) {
            return null;
        } finally {
            inf.end();
        }
        if (n != out.length) {
            return null; // the data ends before the size its header claims
        }
        return ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The GNU build id (from the .note.gnu.build-id note), or an empty array. */
    public byte[] buildId() {
        for (SectionHeader s : sections) {
            if (s.type() != 7 /* SHT_NOTE */) {
                continue;
            }
            ByteBuffer n = contents(s);
            while (n != null && n.remaining() >= 12) {
                // the sizes are unsigned 32-bit words from the file: each is checked against what is left of the
                // note section (in longs, so that 0x7ffffffd cannot wrap) before it moves anything
                long namesz = Integer.toUnsignedLong(n.getInt());
                long descsz = Integer.toUnsignedLong(n.getInt());
                int t = n.getInt();
                int nameAt = n.position();
                long descAt = nameAt + ((namesz + 3) & ~3L);
                long next = descAt + ((descsz + 3) & ~3L);
                if (descAt + descsz > n.limit()) {
                    break;
                }
                if (t == 3 && namesz == 4 && n.get(nameAt) == 'G' && n.get(nameAt + 1) == 'N') {
                    byte[] id = new byte[(int) descsz];
                    n.get((int) descAt, id);
                    return id;
                }
                if (next > n.limit()) {
                    break;
                }
                n.position((int) next);
            }
        }
        return new byte[0];
    }

    private String cString(long at) {
        if (at < 0 || at >= all.length) {
            return "";
        }
        int end = (int) at;
        while (end < all.length && all[end] != 0) {
            end++;
        }
        return new String(all, (int) at, end - (int) at, StandardCharsets.UTF_8);
    }

    /** A NUL-terminated string at {@code at} of {@code buf}. */
    public static String cString(ByteBuffer buf, int at) {
        if (at < 0 || at >= buf.limit()) {
            return "";
        }
        int end = at;
        while (end < buf.limit() && buf.get(end) != 0) {
            end++;
        }
        byte[] s = new byte[end - at];
        buf.get(at, s);
        return new String(s, StandardCharsets.UTF_8);
    }
}

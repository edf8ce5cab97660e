package ptfence.symbol;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import ptfence.image.Elf;

/**
 * An ELF file's DWARF line-number table (.debug_line, versions 2 to 5): which source file and line each code
 * address came from, as {@code addr2line} and {@code perf script -F +srcline} report it.
 *
 * <p>Only the line-number programs are read, not the rest of DWARF: no Java library on Maven Central reads DWARF
 * and is kept up (the candidates are abandoned or tied to a whole reverse-engineering suite), and the line program
 * is a small, fully specified state machine. Rows are kept in three primitive arrays sorted by address; as in
 * binutils, of several rows at one address in a sequence the last counts, and an address maps to the last row at or
 * below it unless a sequence ended in between.
 */
public final class LineTable {
    private static final int END = -1; // file index of a sequence's end marker

    private final long[] address;
    private final int[] file;
    private final int[] line;
    private final String[] files;
    private final String[] bases;
    private final SourceLine[] rows;

    private LineTable(long[] address, int[] file, int[] line, String[] files) {
        this.address = address;
        this.file = file;
        this.line = line;
        this.files = files;
        this.rows = new SourceLine[address.length];
        this.bases = new String[files.length];
        for (int i = 0; i < files.length; i++) {
            bases[i] = files[i].substring(files[i].lastIndexOf('/') + 1);
        }
    }

    /** The line table of {@code elf}, or null if it has no .debug_line. */
    public static LineTable of(Elf elf) {
        ByteBuffer dl = elf.section(".debug_line");
        if (dl == null) {
            return null;
        }
        Builder b = new Builder(elf.section(".debug_line_str"), elf.section(".debug_str"), CompDirs.of(elf));
        b.read(dl);
        return b.build();
    }

    /** Rows kept. */
    public int size() {
        return address.length;
    }

    /** "file:line" (the file's base name, as perf prints it) for the code at {@code vaddr}, or null if none. */
    public String at(long vaddr) {
        int i = rowAt(vaddr);
        return i < 0 ? null : bases[file[i]] + ":" + line[i];
    }

    /** The line of the code at {@code vaddr} with the addresses its row covers, or null. */
    public SourceLine line(long vaddr) {
        int i = rowAt(vaddr);
        if (i < 0) {
            return null;
        }
        SourceLine l = rows[i];
        if (l == null) { // made once per row run (threads racing make equal ones)
            l = new SourceLine(bases[file[i]] + ":" + line[i], address[i],
                    i + 1 < address.length ? address[i + 1] : address[i] + 1, files[file[i]] + ":" + line[i]);
            rows[i] = l;
        }
        return l;
    }

    /** The full file name recorded for the code at {@code vaddr}, or null. */
    public String fileAt(long vaddr) {
        int i = rowAt(vaddr);
        return i < 0 ? null : files[file[i]];
    }

    /** The index of the row holding {@code vaddr}, or -1. */
    int rowAt(long vaddr) {
        int lo = 0;
        int hi = address.length - 1;
        int found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(address[mid], vaddr) <= 0) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found < 0 || file[found] == END ? -1 : found;
    }

    static long uleb(ByteBuffer d) {
        return leb(d, false);
    }

    static long sleb(ByteBuffer d) {
        return leb(d, true);
    }

    /** A LEB128 number, sign-extended from its last byte's bit 6 when {@code signed}. */
    private static long leb(ByteBuffer d, boolean signed) {
        long v = 0;
        int shift = 0;
        byte b;
        do {
            b = d.get();
            if (shift < 64) {
                v |= (long) (b & 0x7f) << shift;
            }
            shift += 7;
        } while (b < 0);
        if (signed && shift < 64 && (b & 0x40) != 0) {
            v |= -1L << shift;
        }
        return v;
    }

    /** A DWARF section's unit: its offset in the section, its bytes after the length, and whether it is 64-bit. */
    interface Unit {
        void read(long offset, ByteBuffer unit, boolean dwarf64);
    }

    /** Each unit of a DWARF section (.debug_line, .debug_info) in order, up to the end or a damaged length. */
    static void units(ByteBuffer section, Unit each) {
        ByteBuffer d = section.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int at = 0;
        while (at + 4 <= d.limit()) {
            d.position(at);
            long len = Integer.toUnsignedLong(d.getInt());
            boolean dwarf64 = len == 0xffffffffL;
            if (dwarf64) {
                len = d.getLong();
            }
            long end = d.position() + len;
            if (len <= 0 || end > d.limit()) {
                return;
            }
            each.read(at, d.duplicate().order(ByteOrder.LITTLE_ENDIAN).limit((int) end).position(d.position()),
                    dwarf64);
            at = (int) end;
        }
    }

    /** Runs the line-number programs of every unit and keeps their rows. */
    private static final class Builder {
        private final ByteBuffer lineStr;
        private final ByteBuffer str;
        private final List<long[]> sequences = new ArrayList<>(); // per sequence: addr, file, line triples
        private final List<String> names = new ArrayList<>();
        private final java.util.Map<String, Integer> nameIds = new java.util.HashMap<>();
        private long[] seq = new long[48];
        private int seqLen;

        /** Each unit's comp_dir by its line program's offset (DWARF before 5 leaves it out of the program). */
        private final java.util.Map<Long, String> compDirs;

        Builder(ByteBuffer lineStr, ByteBuffer str, java.util.Map<Long, String> compDirs) {
            this.lineStr = lineStr;
            this.str = str;
            this.compDirs = compDirs;
        }

        void read(ByteBuffer all) {
            // a damaged unit ends the walk: the rows before it stand
            units(all, (at, unit, dwarf64) -> {
                try {
                    unit(unit, dwarf64, compDirs.getOrDefault(at, ""));
                } catch (RuntimeException e) {
                    seqLen = 0; // a unit we cannot read (unknown form, truncated): skip it
                }
            });
        }

        private void unit(ByteBuffer d, boolean dwarf64, String compDir) {
            int version = Short.toUnsignedInt(d.getShort());
            if (version < 2 || version > 5) {
                return;
            }
            int addressSize = 8;
            if (version >= 5) {
                addressSize = d.get() & 0xff;
                d.get(); // segment selector size
            }
            long headerLength = dwarf64 ? d.getLong() : Integer.toUnsignedLong(d.getInt());
            int program = (int) (d.position() + headerLength);
            int minInsn = d.get() & 0xff;
            if (version >= 4) {
                d.get(); // maximum operations per instruction: 1 on x86
            }
            boolean defaultIsStmt = d.get() != 0;
            int lineBase = d.get();
            int lineRange = d.get() & 0xff;
            int opcodeBase = d.get() & 0xff;
            int[] opLengths = new int[Math.max(opcodeBase, 1)];
            for (int i = 1; i < opcodeBase; i++) {
                opLengths[i] = d.get() & 0xff;
            }
            List<Integer> fileIds = new ArrayList<>();
            if (version >= 5) {
                List<String> dirs = new ArrayList<>();
                for (String[] e : entries(d, dwarf64)) {
                    dirs.add(e[0]);
                }
                for (String[] e : entries(d, dwarf64)) {
                    fileIds.add(id(join(dirs, e[0], e[1] == null ? 0 : Integer.parseInt(e[1]))));
                }
            } else {
                // directory 0 is the unit's comp_dir, and the others are relative to it unless absolute
                List<String> dirs = new ArrayList<>();
                dirs.add(compDir);
                for (String s = cstr(d); !s.isEmpty(); s = cstr(d)) {
                    dirs.add(s.startsWith("/") || compDir.isEmpty() ? s : join(dirs, s, 0));
                }
                fileIds.add(-1); // files count from 1 before DWARF 5
                for (String s = cstr(d); !s.isEmpty(); s = cstr(d)) {
                    int dir = (int) uleb(d);
                    uleb(d);
                    uleb(d);
                    fileIds.add(id(join(dirs, s, dir)));
                }
            }
            d.position(program);
            run(d, version, addressSize, minInsn, defaultIsStmt, lineBase, lineRange, opcodeBase, opLengths, fileIds);
        }

        /** A DWARF 5 directory or file table: per entry {path, directory index or null}. */
        private List<String[]> entries(ByteBuffer d, boolean dwarf64) {
            int formats = d.get() & 0xff;
            long[][] fmt = new long[formats][];
            for (int i = 0; i < formats; i++) {
                fmt[i] = new long[] {uleb(d), uleb(d)};
            }
            long count = uleb(d);
            List<String[]> out = new ArrayList<>();
            for (long n = 0; n < count; n++) {
                String[] e = new String[2];
                for (long[] f : fmt) {
                    Object v = form(d, (int) f[1], dwarf64);
                    if (f[0] == 1) { // DW_LNCT_path
                        e[0] = String.valueOf(v);
                    } else if (f[0] == 2) { // DW_LNCT_directory_index
                        e[1] = String.valueOf(v);
                    }
                }
                out.add(e);
            }
            return out;
        }

        private Object form(ByteBuffer d, int form, boolean dwarf64) {
            switch (form) {
                case 0x08: // string
                    return cstr(d);
                case 0x1f: // line_strp
                case 0x0e: { // strp
                    long off = dwarf64 ? d.getLong() : Integer.toUnsignedLong(d.getInt());
                    ByteBuffer s = form == 0x1f ? lineStr : str;
                    if (s == null) {
                        throw new IllegalStateException("string section missing");
                    }
                    return Elf.cString(s, (int) off);
                }
                case 0x0f: // udata
                    return uleb(d);
                case 0x0b:
                    return d.get() & 0xff;
                case 0x05:
                    return Short.toUnsignedInt(d.getShort());
                case 0x06:
                    return Integer.toUnsignedLong(d.getInt());
                case 0x07:
                    return d.getLong();
                case 0x1e: // data16 (MD5)
                    d.position(d.position() + 16);
                    return 0;
                case 0x09: { // block
                    long n = uleb(d);
                    d.position((int) (d.position() + n));
                    return 0;
                }
                default:
                    throw new IllegalStateException("form 0x" + Integer.toHexString(form));
            }
        }

        private static String join(List<String> dirs, String name, int dir) {
            if (name.startsWith("/") || dir < 0 || dir >= dirs.size() || dirs.get(dir).isEmpty()) {
                return name;
            }
            String d = dirs.get(dir);
            return d.endsWith("/") ? d + name : d + "/" + name;
        }

        private int id(String name) {
            return nameIds.computeIfAbsent(name, n -> {
                names.add(n);
                return names.size() - 1;
            });
        }

        private void run(ByteBuffer d, int version, int addressSize, int minInsn, boolean defaultIsStmt, int lineBase,
                int lineRange, int opcodeBase, int[] opLengths, List<Integer> fileIds) {
            long addr = 0;
            int fileNo = 1;
            long lineNo = 1;
            seqLen = 0;
            while (d.hasRemaining()) {
                int op = d.get() & 0xff;
                if (op >= opcodeBase) {
                    int adj = op - opcodeBase;
                    addr += (long) (adj / lineRange) * minInsn;
                    lineNo += lineBase + adj % lineRange;
                    row(addr, fileIds, fileNo, lineNo);
                    continue;
                }
                switch (op) {
                    case 0 -> {
                        long len = uleb(d);
                        int next = (int) (d.position() + len);
                        int sub = len == 0 ? -1 : d.get() & 0xff;
                        if (sub == 1) { // end_sequence
                            endSequence(addr);
                            addr = 0;
                            fileNo = 1;
                            lineNo = 1;
                        } else if (sub == 2) { // set_address
                            addr = addressSize == 4 || len - 1 == 4 ? Integer.toUnsignedLong(d.getInt()) : d.getLong();
                        }
                        d.position(next);
                    }
                    case 1 -> row(addr, fileIds, fileNo, lineNo); // copy
                    case 2 -> addr += uleb(d) * minInsn; // advance_pc
                    case 3 -> lineNo += sleb(d); // advance_line
                    case 4 -> fileNo = (int) uleb(d); // set_file
                    case 5 -> uleb(d); // set_column
                    case 6, 7, 10, 11 -> { } // negate_stmt, basic_block, prologue_end, epilogue_begin
                    case 8 -> addr += (long) ((255 - opcodeBase) / lineRange) * minInsn; // const_add_pc
                    case 9 -> addr += Short.toUnsignedInt(d.getShort()); // fixed_advance_pc
                    default -> {
                        for (int i = 0; i < opLengths[op]; i++) {
                            uleb(d);
                        }
                    }
                }
            }
        }

        private void row(long addr, List<Integer> fileIds, int fileNo, long lineNo) {
            int f = fileNo >= 0 && fileNo < fileIds.size() ? fileIds.get(fileNo) : -1;
            if (f < 0) {
                f = id("??");
            }
            if (seqLen >= 3 && seq[seqLen - 3] == addr) {
                seqLen -= 3; // binutils keeps the last row of several at one address
            }
            if (seqLen + 3 > seq.length) {
                seq = Arrays.copyOf(seq, seq.length * 2);
            }
            seq[seqLen++] = addr;
            seq[seqLen++] = f;
            seq[seqLen++] = lineNo;
        }

        private void endSequence(long addr) {
            if (seqLen > 0) {
                long[] s = Arrays.copyOf(seq, seqLen + 3);
                s[seqLen] = addr;
                s[seqLen + 1] = END;
                s[seqLen + 2] = 0;
                sequences.add(s);
            }
            seqLen = 0;
        }

        LineTable build() {
            sequences.sort((a, b) -> Long.compareUnsigned(a[0], b[0]));
            int n = 0;
            for (long[] s : sequences) {
                n += s.length / 3;
            }
            long[] address = new long[n];
            int[] file = new int[n];
            int[] line = new int[n];
            int i = 0;
            for (long[] s : sequences) {
                for (int k = 0; k < s.length; k += 3) {
                    address[i] = s[k];
                    file[i] = (int) s[k + 1];
                    line[i] = (int) s[k + 2];
                    i++;
                }
            }
            return new LineTable(address, file, line, names.toArray(String[]::new));
        }

        private static String cstr(ByteBuffer d) {
            int start = d.position();
            while (d.get() != 0) {
                // scan to the NUL
            }
            return Elf.cString(d, start);
        }


    }
}

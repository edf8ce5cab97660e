package ptfence.symbol;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;
import ptfence.image.Elf;

/**
 * Each compilation unit's directory (DW_AT_comp_dir), by the offset of its line program (DW_AT_stmt_list): before
 * DWARF 5 a line program names its files relative to it without saying it, and binutils and perf's
 * --full-source-path put it in front. Only the first entry of each unit in .debug_info is read (with .debug_abbrev
 * for its layout); a unit that cannot be read is left out (its files keep the names the line program gives).
 */
final class CompDirs {
    private CompDirs() {
    }

    /** comp_dir by line-program offset; empty where the file has no .debug_info. */
    static Map<Long, String> of(Elf elf) {
        Map<Long, String> out = new HashMap<>();
        ByteBuffer info = elf.section(".debug_info");
        ByteBuffer abbrev = elf.section(".debug_abbrev");
        if (info == null || abbrev == null) {
            return out;
        }
        Strings s = new Strings(elf.section(".debug_str"), elf.section(".debug_line_str"),
                elf.section(".debug_str_offsets"));
        LineTable.units(info, (at, unit, dwarf64) -> {
            try {
                unit(unit, dwarf64, abbrev, s, out);
            } catch (RuntimeException e) {
                // a unit we cannot read: its files keep their line program's names
            }
        });
        return out;
    }

    private record Strings(ByteBuffer str, ByteBuffer lineStr, ByteBuffer offsets) {
    }

    private static void unit(ByteBuffer d, boolean dwarf64, ByteBuffer abbrevs, Strings s, Map<Long, String> out) {
        int version = Short.toUnsignedInt(d.getShort());
        long abbrevOffset;
        int addressSize;
        if (version >= 5) {
            int unitType = d.get() & 0xff;
            addressSize = d.get() & 0xff;
            abbrevOffset = dwarf64 ? d.getLong() : Integer.toUnsignedLong(d.getInt());
            if (unitType == 2 || unitType == 6) { // type units: signature and type offset
                d.position(d.position() + 8 + (dwarf64 ? 8 : 4));
            } else if (unitType == 4 || unitType == 5) { // skeleton, split compile: dwo id
                d.position(d.position() + 8);
            }
        } else if (version >= 2) {
            abbrevOffset = dwarf64 ? d.getLong() : Integer.toUnsignedLong(d.getInt());
            addressSize = d.get() & 0xff;
        } else {
            return;
        }
        long code = uleb(d);
        ByteBuffer a = abbrevs.duplicate().order(ByteOrder.LITTLE_ENDIAN).position((int) abbrevOffset);
        // the abbreviation of the unit's first entry
        while (true) {
            long c = uleb(a);
            if (c == 0) {
                return;
            }
            uleb(a); // tag
            a.get(); // has children
            if (c == code) {
                break;
            }
            while (true) {
                long attr = uleb(a);
                long form = uleb(a);
                if (form == 0x21) {
                    sleb(a);
                }
                if (attr == 0 && form == 0) {
                    break;
                }
            }
        }
        long stmtList = -1;
        Object compDir = null;
        long strOffsetsBase = -1;
        while (true) {
            int attr = (int) uleb(a);
            int form = (int) uleb(a);
            if (form == 0x21) {
                sleb(a);
            }
            if (attr == 0 && form == 0) {
                break;
            }
            Object v = value(d, form, dwarf64, version, addressSize, s);
            if (attr == 0x10) { // DW_AT_stmt_list
                stmtList = ((Number) v).longValue();
            } else if (attr == 0x1b) { // DW_AT_comp_dir
                compDir = v;
            } else if (attr == 0x72) { // DW_AT_str_offsets_base
                strOffsetsBase = ((Number) v).longValue();
            }
        }
        if (compDir instanceof StrIndex x && s.offsets() != null) {
            long base = strOffsetsBase < 0 ? (dwarf64 ? 16 : 8) : strOffsetsBase;
            ByteBuffer o = s.offsets().duplicate().order(ByteOrder.LITTLE_ENDIAN);
            int p = (int) (base + x.index() * (dwarf64 ? 8 : 4));
            compDir = Elf.cString(s.str(), (int) (dwarf64 ? o.getLong(p) : Integer.toUnsignedLong(o.getInt(p))));
        }
        if (stmtList >= 0 && compDir instanceof String dir && !dir.isEmpty()) {
            out.put(stmtList, dir);
        }
    }

    /** An index into .debug_str_offsets (DW_FORM_strx*), resolved once the unit's base is known. */
    private record StrIndex(long index) {
    }

    /** An attribute's value: a String for the string forms, a Long for the numbers, else null (skipped). */
    private static Object value(ByteBuffer d, int form, boolean dwarf64, int version, int addressSize, Strings s) {
        int offsetSize = dwarf64 ? 8 : 4;
        switch (form) {
            case 0x01: // addr
                return fixed(d, addressSize);
            case 0x03: // block2
                return skip(d, Short.toUnsignedInt(d.getShort()));
            case 0x04: // block4
                return skip(d, d.getInt());
            case 0x05: case 0x12: case 0x26: case 0x2a: // data2, ref2, strx2, addrx2
                return strx(form, fixed(d, 2));
            case 0x06: case 0x13: case 0x1c: case 0x28: case 0x2c: // data4, ref4, ref_sup4, strx4, addrx4
                return strx(form, fixed(d, 4));
            case 0x07: case 0x14: case 0x20: // data8, ref8, ref_sig8
                return fixed(d, 8);
            case 0x08: { // string
                StringBuilder b = new StringBuilder();
                for (byte c = d.get(); c != 0; c = d.get()) {
                    b.append((char) (c & 0xff));
                }
                return new String(b.toString().getBytes(java.nio.charset.StandardCharsets.ISO_8859_1),
                        java.nio.charset.StandardCharsets.UTF_8);
            }
            case 0x09: case 0x18: // block, exprloc
                return skip(d, (int) uleb(d));
            case 0x0a: // block1
                return skip(d, d.get() & 0xff);
            case 0x0b: case 0x0c: case 0x11: case 0x25: case 0x29: // data1, flag, ref1, strx1, addrx1
                return strx(form, fixed(d, 1));
            case 0x27: case 0x2b: // strx3, addrx3
                return strx(form, fixed(d, 3));
            case 0x0d: // sdata
                return sleb(d);
            case 0x0f: case 0x15: case 0x1b: case 0x22: case 0x23: // udata, ref_udata, addrx, loclistx, rnglistx
                return uleb(d);
            case 0x1a: // strx
                return new StrIndex(uleb(d));
            case 0x0e: case 0x1f: { // strp, line_strp
                long off = fixed(d, offsetSize);
                ByteBuffer sec = form == 0x0e ? s.str() : s.lineStr();
                return sec == null ? null : Elf.cString(sec, (int) off);
            }
            case 0x10: // ref_addr: the address size in DWARF 2
                return fixed(d, version == 2 ? addressSize : offsetSize);
            case 0x17: case 0x1d: // sec_offset, strp_sup
                return fixed(d, offsetSize);
            case 0x19: case 0x21: // flag_present, implicit_const
                return null;
            case 0x1e: // data16
                return skip(d, 16);
            case 0x16: // indirect
                return value(d, (int) uleb(d), dwarf64, version, addressSize, s);
            default:
                throw new IllegalStateException("form 0x" + Integer.toHexString(form));
        }
    }

    private static Object strx(int form, long v) {
        return form >= 0x25 && form <= 0x28 ? new StrIndex(v) : (Object) v;
    }

    private static Object skip(ByteBuffer d, int n) {
        d.position(d.position() + n);
        return null;
    }

    private static long fixed(ByteBuffer d, int n) {
        long v = 0;
        for (int i = 0; i < n; i++) {
            v |= (long) (d.get() & 0xff) << (8 * i);
        }
        return v;
    }

    private static long uleb(ByteBuffer d) {
        return LineTable.uleb(d);
    }

    private static long sleb(ByteBuffer d) {
        return LineTable.sleb(d);
    }
}

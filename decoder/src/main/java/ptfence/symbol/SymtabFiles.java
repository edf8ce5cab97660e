package ptfence.symbol;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import ptfence.image.Elf;

/**
 * Where code that DWARF lines do not cover came from, by the symbol table alone: the nearest function symbol at or
 * below the address in its section and the FILE symbol before it, as binutils answers when the line table has
 * nothing (addr2line prints {@code file:?}, perf script {@code file:0}). A global symbol after a FILE symbol that
 * followed other symbols gets no file, since that FILE symbol need not be its own.
 */
final class SymtabFiles {
    private record Fn(int section, long value, long size, String file, int order) {
    }

    private final Elf elf;
    private final Fn[] fns;

    private SymtabFiles(Elf elf, Fn[] fns) {
        this.elf = elf;
        this.fns = fns;
    }

    static SymtabFiles of(Elf elf) {
        List<Fn> out = new ArrayList<>();
        for (Elf.SectionHeader sh : elf.sections()) {
            if (sh.type() != Elf.SHT_SYMTAB || sh.link() < 0 || sh.link() >= elf.sections().size()) {
                continue;
            }
            ByteBuffer tab = elf.contents(sh);
            ByteBuffer str = elf.contents(elf.sections().get(sh.link()));
            if (tab == null || str == null) {
                continue;
            }
            String file = null;
            int state = 0; // 0 nothing seen, 1 a symbol seen, 2 a FILE after a symbol
            for (int e = 24; e + 24 <= tab.limit(); e += 24) {
                int info = tab.get(e + 4) & 0xff;
                int type = info & 0xf;
                int bind = info >> 4;
                int shndx = Short.toUnsignedInt(tab.getShort(e + 6));
                if (type == 4) { // STT_FILE
                    file = Elf.cString(str, tab.getInt(e));
                    state = state == 1 ? 2 : state;
                    continue;
                }
                long size = tab.getLong(e + 16);
                boolean hiddenLocalLabel = size == 0 && bind == 0 && type == 0 && (tab.get(e + 5) & 3) == 2;
                if (type != 3 && type != 1 && type != 6 && shndx != 0 && shndx < 0xff00 && !hiddenLocalLabel) {
                    String f = file != null && (bind == 0 || state != 2) ? file : null;
                    out.add(new Fn(shndx, tab.getLong(e + 8), size == 0 ? 1 : size, f, out.size()));
                }
                state = state == 0 ? 1 : state;
            }
        }
        Fn[] fns = out.toArray(Fn[]::new);
        // per section by address; of several at one address the larger, then the first, wins (sorted last)
        Arrays.sort(fns, (a, b) -> a.section != b.section ? Integer.compare(a.section, b.section)
                : a.value != b.value ? Long.compareUnsigned(a.value, b.value)
                : a.size != b.size ? Long.compare(a.size, b.size) : Integer.compare(b.order, a.order));
        return new SymtabFiles(elf, fns);
    }

    /** The file name binutils gives {@code vaddr} from the symbol table, or null. */
    String fileAt(long vaddr) {
        int section = -1;
        List<Elf.SectionHeader> secs = elf.sections();
        for (int i = 1; i < secs.size(); i++) {
            Elf.SectionHeader s = secs.get(i);
            if ((s.flags() & 2) != 0 && Long.compareUnsigned(vaddr - s.addr(), s.size()) < 0) { // SHF_ALLOC
                section = i;
                break;
            }
        }
        int lo = 0;
        int hi = fns.length - 1;
        int found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            Fn f = fns[mid];
            if (f.section < section || f.section == section && Long.compareUnsigned(f.value, vaddr) <= 0) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found < 0 || fns[found].section != section ? null : fns[found].file;
    }
}

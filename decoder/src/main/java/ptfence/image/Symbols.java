package ptfence.image;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/** Function symbols for addresses ("name+0x12"), read from ELF symbol tables. */
public final class Symbols {
    /**
     * {@code bind}: ELF STB_* of the symbol, -1 when the source has none (kallsyms, added by hand). {@code tail}: for
     * a size-less ELF symbol, where perf ends it when it is the last function (0: unknown, see {@link #tailEnds}).
     */
    private record Sym(long start, long size, String name, int bind, long tail) {
        Sym(long start, long size, String name) {
            this(start, size, name, -1, 0);
        }
    }

    /**
     * Of two symbols at one address, the one perf shows (its choose_best_symbol) sorts last: one with a size, then
     * not weak, then global, then fewer leading underscores, then the longer name.
     */
    private static final Comparator<Sym> ORDER = Comparator.comparingLong(Sym::start)
            .thenComparingInt(x -> x.size() != 0 ? 1 : 0)
            .thenComparingInt(x -> x.bind() == 2 ? 0 : 1)
            .thenComparingInt(x -> x.bind() == 1 ? 1 : 0)
            .thenComparingInt(x -> -underscores(x.name()))
            .thenComparingInt(x -> x.name().length());

    private static int underscores(String name) {
        int n = 0;
        while (n < name.length() && name.charAt(n) == '_') {
            n++;
        }
        return n;
    }

    /**
     * The function holding an address: its name, start and end (the next symbol's start when its size is 0), and its
     * ELF binding (STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2; -1 where the source has none).
     */
    public record Entry(String name, long start, long end, int bind) {
        public Entry(String name, long start, long end) {
            this(name, start, end, -1);
        }

        public boolean covers(long addr) {
            return Long.compareUnsigned(addr - start, end - start) < 0;
        }
    }

    private final List<Sym> pending = new ArrayList<>();
    /** Published only once sorted: a parallel decode's printers look symbols up from several threads. */
    private volatile Sym[] sorted = new Sym[0];

    /** Adds the FUNC symbols of an ELF's .symtab (or .dynsym), moved like {@link ElfSegments} with BASE. */
    public Symbols addElf(ElfSegments elf) {
        Elf e = Elf.read(elf.file());
        if (e == null) {
            if (!java.nio.file.Files.isReadable(elf.file())) {
                throw new UncheckedIOException(new IOException(elf.file() + ": cannot read"));
            }
            return this; // 64-bit ELF only; no symbols otherwise
        }
        return addElf(e, elf.base() == 0 ? 0 : elf.base() - e.lowestLoad());
    }

    /**
     * Adds the function symbols of {@code elf}'s .symtab (or, without one, .dynsym), each moved by {@code shift}: FUNC
     * and IFUNC symbols, and labels (NOTYPE) in text sections, as perf reads them (a hand-written _start).
     */
    public Symbols addElf(Elf elf, long shift) {
        for (int want : new int[] {Elf.SHT_SYMTAB, Elf.SHT_DYNSYM}) {
            for (Elf.SectionHeader sh : elf.sections()) {
                if (sh.type() != want || sh.link() < 0 || sh.link() >= elf.sections().size()) {
                    continue;
                }
                ByteBuffer tab = elf.contents(sh);
                ByteBuffer str = elf.contents(elf.sections().get(sh.link()));
                if (tab == null || str == null) {
                    continue;
                }
                long[] keys = perfKeys(elf, tab);
                for (int e = 0; e + 24 <= tab.limit(); e += 24) {
                    int info = tab.get(e + 4) & 0xff;
                    int type = info & 0xf;
                    int shndx = Short.toUnsignedInt(tab.getShort(e + 6));
                    long value = tab.getLong(e + 8);
                    int name = tab.getInt(e);
                    // perf takes labels only in sections named like text (not _init in .init)
                    boolean label = type == 0 && name != 0 && shndx != 0 && shndx < 0xff00
                            && shndx < elf.sections().size() && elf.sections().get(shndx).name().contains("text");
                    if (!(type == 2 || type == 10 || label) || value == 0 || shndx == 0) { // FUNC, GNU_IFUNC
                        continue;
                    }
                    long size = tab.getLong(e + 16);
                    pending.add(new Sym(value + shift, size, Elf.cString(str, name), info >> 4,
                            size == 0 ? tailEnd(keys, perfKey(elf, shndx, value), value + shift) : 0));
                }
            }
            if (!pending.isEmpty()) {
                break;
            }
        }
        sorted = null;
        return this;
    }

    /**
     * Where a symbol perf loads sits in perf's own terms: file offsets for an ET_EXEC (perf moves each symbol by its
     * section's address minus its file offset), addresses otherwise; -1 for one perf does not load. perf loads
     * functions, objects and labels of any section, and ends a size-less last text symbol at the next of them.
     */
    private static long perfKey(Elf elf, int shndx, long value) {
        if (shndx == 0 || shndx >= 0xff00 || shndx >= elf.sections().size()) {
            return -1;
        }
        Elf.SectionHeader sec = elf.sections().get(shndx);
        return elf.relocatable() ? value : value - sec.addr() + sec.offset();
    }

    private static long[] perfKeys(Elf elf, ByteBuffer tab) {
        long[] keys = new long[tab.limit() / 24];
        int n = 0;
        for (int e = 0; e + 24 <= tab.limit(); e += 24) {
            int type = tab.get(e + 4) & 0xf;
            if ((type == 0 && tab.getInt(e) != 0) || type == 1 || type == 2 || type == 10) { // label, OBJECT, FUNC
                long k = perfKey(elf, Short.toUnsignedInt(tab.getShort(e + 6)), tab.getLong(e + 8));
                if (k >= 0) {
                    keys[n++] = k;
                }
            }
        }
        return Arrays.copyOf(keys, n);
    }

    /** The end perf gives a size-less symbol at KEY (address START here) were it the last: the next key's. */
    private static long tailEnd(long[] keys, long key, long start) {
        long next = -1;
        for (long k : keys) {
            if (key >= 0 && k > key && (next < 0 || k < next)) {
                next = k;
            }
        }
        return next < 0 ? 0 : start + (next - key);
    }

    /** One symbol; size 0 when unknown (it then reaches to the next symbol). */
    public Symbols add(long start, long size, String name) {
        pending.add(new Sym(start, size, name));
        sorted = null;
        return this;
    }

    /**
     * Text symbols of a /proc/kallsyms copy ("ADDR TYPE NAME [MODULE]" per line). A file with no such line at all
     * (a binary file, a wrong file) is one line naming it; a copy read without root (every address 0) gives none,
     * and so does an empty file (the way to say "no kernel symbols", as {@code --kallsyms=/dev/null}).
     */
    public Symbols addKallsyms(java.nio.file.Path file) {
        String text = new String(ptfence.cli.Inputs.read(file, "kallsyms"), java.nio.charset.StandardCharsets.ISO_8859_1);
        return addKallsyms(file.toString(), text.lines());
    }

    /**
     * Text symbols of kallsyms lines (an archived copy); {@code where} names their source in an error: lines none of
     * which reads "ADDRESS TYPE NAME" are not kallsyms.
     */
    public Symbols addKallsyms(String where, java.util.stream.Stream<String> text) {
        long lines = 0;
        long written = 0; // lines with anything on them: an empty file is no symbols, not a wrong file
        for (String l : (Iterable<String>) text::iterator) {
            if (!l.isBlank()) {
                written++;
            }
            String[] f = l.trim().split("\\s+");
            if (f.length < 3 || f[1].length() != 1 || f[0].isEmpty() || f[0].length() > 16
                    || !f[0].chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
                continue;
            }
            lines++;
            if (f[1].equals("t") || f[1].equals("T")) {
                long a = Long.parseUnsignedLong(f[0], 16);
                if (a != 0) {
                    pending.add(new Sym(a, 0, f[2]));
                }
            }
        }
        if (lines == 0 && written > 0) {
            throw new ptfence.cli.BadInputException(where + ": not a kallsyms file (no 'ADDRESS TYPE NAME' line, as "
                    + "/proc/kallsyms has)");
        }
        sorted = null;
        return this;
    }

    /** Every symbol with this exact name, as {start, size} (size up to the next symbol when unknown). */
    public List<long[]> named(String name) {
        sort();
        List<long[]> out = new java.util.ArrayList<>();
        for (int i = 0; i < sorted.length; i++) {
            if (sorted[i].name().equals(name)) {
                long size = sorted[i].size();
                if (size == 0) {
                    size = i + 1 < sorted.length ? sorted[i + 1].start() - sorted[i].start() : 1;
                }
                out.add(new long[] {sorted[i].start(), Math.max(1, size)});
            }
        }
        return out;
    }

    /** The distinct start addresses of all symbols, ascending. */
    public long[] starts() {
        sort();
        return Arrays.stream(sorted).mapToLong(Sym::start).distinct().toArray();
    }

    public boolean isEmpty() {
        return pending.isEmpty();
    }

    private Sym[] sort() {
        Sym[] s = sorted;
        if (s == null) {
            s = pending.toArray(Sym[]::new);
            Arrays.sort(s, ORDER);
            sorted = s;
        }
        return s;
    }

    /** "name" or "name+0xN" for the function containing {@code addr}, or null. */
    public String describe(long addr) {
        Entry e = at(addr);
        if (e == null) {
            return null;
        }
        long off = addr - e.start();
        return off == 0 ? e.name() : e.name() + "+0x" + Long.toHexString(off);
    }

    /** The function containing {@code addr}, or null. */
    public Entry at(long addr) {
        Sym[] sorted = sort();
        int lo = 0;
        int hi = sorted.length - 1;
        int found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (sorted[mid].start() <= addr) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        if (found < 0) {
            return null;
        }
        Sym s = sorted[found];
        long end;
        if (s.size() != 0) {
            end = s.start() + s.size();
        } else {
            // no size (kallsyms): up to the next symbol that starts after it
            int n = found + 1;
            while (n < sorted.length && sorted[n].start() == s.start()) {
                n++;
            }
            // the last one: an ELF symbol to the next symbol perf loaded from its file (a data label or object, in
            // perf's terms), else to the page after the one it starts in, as perf's symbols__fixup_end
            end = n < sorted.length ? sorted[n].start()
                    : s.tail() > s.start() ? s.tail() : (s.start() + 4095 & ~4095L) + 4096;
        }
        return addr - s.start() < end - s.start() ? new Entry(s.name(), s.start(), end, s.bind()) : null;
    }
}

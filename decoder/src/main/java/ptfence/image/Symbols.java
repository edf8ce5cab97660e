package ptfence.image;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/** Function symbols for addresses ("name+0x12"), read from ELF symbol tables. */
public final class Symbols {
    private record Sym(long start, long size, String name) {}

    private final List<Sym> pending = new ArrayList<>();
    private Sym[] sorted = new Sym[0];

    /** Adds the FUNC symbols of an ELF's .symtab (or .dynsym), moved like {@link ElfSegments} with BASE. */
    public Symbols addElf(ElfSegments elf) {
        byte[] all;
        try {
            all = Files.readAllBytes(elf.file());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        if (all.length < 64 || b.getInt(0) != 0x464c457f || all[4] != 2) {
            return this; // 64-bit ELF only; no symbols otherwise
        }
        long shoff = b.getLong(0x28);
        int shentsize = Short.toUnsignedInt(b.getShort(0x3a));
        int shnum = Short.toUnsignedInt(b.getShort(0x3c));
        long shift = elf.base() == 0 ? 0 : elf.base() - lowestLoad(b);
        for (int want : new int[] {2, 11}) { // SHT_SYMTAB, then SHT_DYNSYM
            for (int i = 0; i < shnum; i++) {
                int sh = (int) (shoff + (long) i * shentsize);
                if (sh + 64 > all.length || b.getInt(sh + 4) != want) {
                    continue;
                }
                long off = b.getLong(sh + 0x18);
                long size = b.getLong(sh + 0x20);
                int link = b.getInt(sh + 0x28);
                int strSh = (int) (shoff + (long) link * shentsize);
                long strOff = b.getLong(strSh + 0x18);
                for (long e = off; e + 24 <= off + size && e + 24 <= all.length; e += 24) {
                    int name = b.getInt((int) e);
                    int info = all[(int) e + 4] & 0xff;
                    long value = b.getLong((int) e + 8);
                    long sz = b.getLong((int) e + 16);
                    if ((info & 0xf) != 2 || value == 0) {
                        continue;
                    }
                    pending.add(new Sym(value + shift, sz, cString(all, (int) (strOff + name))));
                }
            }
            if (!pending.isEmpty()) {
                break;
            }
        }
        sorted = null;
        return this;
    }

    private static long lowestLoad(ByteBuffer b) {
        long phoff = b.getLong(0x20);
        int phentsize = Short.toUnsignedInt(b.getShort(0x36));
        int phnum = Short.toUnsignedInt(b.getShort(0x38));
        long min = -1;
        for (int i = 0; i < phnum; i++) {
            int p = (int) (phoff + (long) i * phentsize);
            if (b.getInt(p) == 1 && Long.compareUnsigned(b.getLong(p + 16), min) < 0) {
                min = b.getLong(p + 16);
            }
        }
        return min;
    }

    private static String cString(byte[] all, int at) {
        int end = at;
        while (end < all.length && all[end] != 0) {
            end++;
        }
        return new String(all, at, end - at, StandardCharsets.UTF_8);
    }

    /** One symbol; size 0 when unknown (it then reaches to the next symbol). */
    public Symbols add(long start, long size, String name) {
        pending.add(new Sym(start, size, name));
        sorted = null;
        return this;
    }

    /** Text symbols of a /proc/kallsyms copy ("ADDR TYPE NAME [MODULE]" per line). */
    public Symbols addKallsyms(java.nio.file.Path file) {
        try (var lines = java.nio.file.Files.lines(file)) {
            lines.forEach(l -> {
                String[] f = l.trim().split("\\s+");
                if (f.length >= 3 && (f[1].equals("t") || f[1].equals("T")) && f[0].length() <= 16) {
                    long a = Long.parseUnsignedLong(f[0], 16);
                    if (a != 0) {
                        pending.add(new Sym(a, 0, f[2]));
                    }
                }
            });
        } catch (IOException e) {
            throw new ptfence.cli.BadInputException(file + ": cannot read kallsyms: " + e.getMessage());
        } catch (NumberFormatException e) {
            throw new ptfence.cli.BadInputException(file + ": not a kallsyms file (" + e.getMessage() + ")");
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

    private void sort() {
        if (sorted == null) {
            sorted = pending.toArray(Sym[]::new);
            Arrays.sort(sorted, Comparator.comparingLong(Sym::start));
        }
    }

    /** "name" or "name+0xN" for the function containing {@code addr}, or null. */
    public String describe(long addr) {
        sort();
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
        long off = addr - s.start();
        if (s.size() != 0 && off >= s.size()) {
            return null;
        }
        return off == 0 ? s.name() : s.name() + "+0x" + Long.toHexString(off);
    }
}

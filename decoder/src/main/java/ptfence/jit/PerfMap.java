package ptfence.jit;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import ptfence.cli.BadInputException;

/**
 * A process's {@code perf-PID.map}: the symbols a JIT (a JVM with {@code DumpPerfMapAtExit}, V8's
 * {@code --perf-basic-prof}, perf-map-agent) names its anonymous code with, one {@code START SIZE name} line each,
 * START and SIZE in hex. The file carries no times: a name holds for as long as nothing newer says otherwise, so where
 * entries overlap the later line (written later) wins, as with perf.
 */
public final class PerfMap {
    /** Code at [start, start + size) named {@code name}. */
    public record Entry(long start, long size, String name) {
        public long end() {
            return start + size;
        }
    }

    /** An entry and its line's place in the file (the later wins an overlap). */
    private record Line(Entry entry, int index) {
    }

    private final String where;
    private final List<Entry> inOrder;
    private final ptfence.image.AddressRanges<Line> byStart;

    private PerfMap(String where, List<Entry> entries) {
        this.where = where;
        this.inOrder = List.copyOf(entries);
        List<Line> lines = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
            lines.add(new Line(entries.get(i), i));
        }
        byStart = new ptfence.image.AddressRanges<>(lines, l -> l.entry().start(), l -> l.entry().end(),
                new Line[0]);
    }

    /** The map file, read whole; a line that is not {@code START SIZE name} is one error naming file and offset. */
    public static PerfMap read(Path file) {
        return parse(file.toString(), ptfence.cli.Inputs.read(file, "perf map"));
    }

    /** Parses a map's text; {@code where} names it in errors. */
    public static PerfMap parse(String where, byte[] text) {
        List<Entry> out = new ArrayList<>();
        int off = 0;
        int lineNo = 1;
        while (off < text.length) {
            int end = off;
            while (end < text.length && text[end] != '\n') {
                end++;
            }
            String l = new String(text, off, end - off, StandardCharsets.UTF_8);
            if (!l.isBlank()) {
                out.add(entry(l, where, lineNo, off));
            }
            off = end + 1;
            lineNo++;
        }
        return new PerfMap(where, out);
    }

    private static Entry entry(String l, String where, int lineNo, int off) {
        int a = l.indexOf(' ');
        int b = a < 0 ? -1 : l.indexOf(' ', a + 1);
        try {
            if (b < 0) {
                throw new NumberFormatException();
            }
            long start = hex(l.substring(0, a));
            long size = hex(l.substring(a + 1, b));
            String name = l.substring(b + 1).stripTrailing();
            return new Entry(start, size, name);
        } catch (NumberFormatException e) {
            throw new BadInputException(where + ": line " + lineNo + " (offset " + off + "): expected 'START SIZE "
                    + "name' in hex, got '" + (l.length() > 60 ? l.substring(0, 60) + "..." : l) + "'");
        }
    }

    private static long hex(String s) {
        String h = s.startsWith("0x") || s.startsWith("0X") ? s.substring(2) : s;
        if (h.isEmpty() || h.length() > 16) {
            throw new NumberFormatException(s);
        }
        return Long.parseUnsignedLong(h, 16);
    }

    /** The file the map was read from, as given. */
    public String where() {
        return where;
    }

    public int size() {
        return inOrder.size();
    }

    /** Entries in file order. */
    public List<Entry> entries() {
        return inOrder;
    }

    /** The entry naming {@code address} (the latest line among overlapping ones), or null. */
    public Entry at(long address) {
        Line best = null;
        for (int i = byStart.lastAtOrBefore(address); i >= 0 && byStart.reaches(i, address); i--) {
            Line l = byStart.get(i);
            if (Long.compareUnsigned(address - l.entry().start(), l.entry().size()) < 0
                    && (best == null || l.index() > best.index())) {
                best = l;
            }
        }
        return best == null ? null : best.entry();
    }
}

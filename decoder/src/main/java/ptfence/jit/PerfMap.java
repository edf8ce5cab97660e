package ptfence.jit;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
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

    private final String where;
    private final Entry[] byStart;
    /** For each index of {@link #byStart}: the line it came from (the later wins an overlap). */
    private final int[] line;
    private final long[] maxEnd;

    private PerfMap(String where, List<Entry> entries) {
        this.where = where;
        Integer[] order = new Integer[entries.size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, Comparator.comparingLong(i -> entries.get(i).start() ^ Long.MIN_VALUE));
        byStart = new Entry[order.length];
        line = new int[order.length];
        maxEnd = new long[order.length];
        long m = Long.MIN_VALUE;
        for (int i = 0; i < order.length; i++) {
            byStart[i] = entries.get(order[i]);
            line[i] = order[i];
            m = Math.max(m, byStart[i].end() ^ Long.MIN_VALUE);
            maxEnd[i] = m;
        }
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
        return byStart.length;
    }

    /** Entries in file order. */
    public List<Entry> entries() {
        Entry[] out = new Entry[byStart.length];
        for (int i = 0; i < byStart.length; i++) {
            out[line[i]] = byStart[i];
        }
        return List.of(out);
    }

    /** The entry naming {@code address} (the latest line among overlapping ones), or null. */
    public Entry at(long address) {
        long key = address ^ Long.MIN_VALUE;
        int lo = 0;
        int hi = byStart.length - 1;
        int last = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if ((byStart[mid].start() ^ Long.MIN_VALUE) <= key) {
                last = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        int best = -1;
        for (int i = last; i >= 0 && maxEnd[i] > key; i--) {
            Entry e = byStart[i];
            if (Long.compareUnsigned(address - e.start(), e.size()) < 0 && (best < 0 || line[i] > line[best])) {
                best = i;
            }
        }
        return best < 0 ? null : byStart[best];
    }
}

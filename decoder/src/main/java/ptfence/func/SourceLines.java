package ptfence.func;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import ptfence.cli.BadInputException;
import ptfence.cli.Json;
import ptfence.perfdata.Feature;
import ptfence.region.BpfMetadata;

/**
 * JIT address → BPF source line, from what the kernel kept about a program: its line info (struct bpf_line_info
 * {insn_off, file_name_off, line_off, line_col}), the JIT address of each line info record, the JITed functions'
 * ranges and the program's BTF, whose string section holds the file names and the source line texts.
 *
 * <p>An address maps as {@code bpftool prog dump jited linum} and perf annotate map it: to the last line info record
 * whose JIT address is at or below it within the same JITed function. Several programs (a tail-call chain) can be
 * combined in one table.
 */
public final class SourceLines {

    /**
     * One line info record placed in the JIT image.
     *
     * @param address   JIT address where the code for this line starts
     * @param end       exclusive end of the range it covers (next record's address or the function's end)
     * @param program   name of the program
     * @param function  index of the JITed function (jited_ksyms order, main program 0)
     * @param insn      index of the first (translated) BPF instruction of the line
     * @param insnEnd   index just past its last instruction: the next record's first instruction (for the program's
     *                  last record, the program's instruction count; -1 when the translated program is not kept)
     * @param file      source file name
     * @param line      line number (1-based; 0 when unknown)
     * @param column    column (1-based; 0 when unknown)
     * @param text      the source line's text as the compiler stored it
     */
    public record Line(long address, long end, String program, int function, int insn, int insnEnd, String file,
            int line,
            int column, String text) {
        /** "file:line:column" (column left out when 0). */
        public String location() {
            return file + ":" + line + (column == 0 ? "" : ":" + column);
        }
    }

    /** bpf_line_info.line_col: line number in the upper 22 bits, column in the lower 10 (uapi BPF_LINE_INFO_LINE_*). */
    private static final int COLUMN_BITS = 10;
    private static final int LINE_INFO_MIN_SIZE = 16;
    private static final int BTF_MAGIC = 0xEB9F;

    private static final Comparator<Line> BY_ADDRESS =
            Comparator.comparing(Line::address, Long::compareUnsigned).thenComparingInt(Line::insn);

    /** Every line, by address. */
    private final Line[] lines;
    private final long[] starts;

    private SourceLines(List<Line> all) {
        lines = all.toArray(Line[]::new);
        Arrays.sort(lines, BY_ADDRESS);
        starts = new long[lines.length];
        for (int i = 0; i < lines.length; i++) starts[i] = lines[i].address;
    }

    /** The source lines of one program; empty when it has no line info, no JITed line info or no BTF. */
    public static SourceLines of(BpfMetadata program) {
        return of(List.of(program));
    }

    /** The source lines of several programs (the programs an invocation can run through). */
    public static SourceLines of(Collection<BpfMetadata> programs) {
        List<Line> all = new ArrayList<>();
        for (BpfMetadata m : programs) {
            all.addAll(linesOf(m, m.xlatedInsns().length == 0 ? -1 : m.xlatedInsns().length / 8));
        }
        return new SourceLines(all);
    }

    /**
     * The source lines of the programs perf recorded (HEADER_BPF_PROG_INFO, with each program's BTF from
     * HEADER_BPF_BTF matched by btf_id): what {@code perf record} leaves when there is no archive.
     */
    public static SourceLines ofPerf(List<Feature.BpfProgInfo> programs, List<Feature.BpfBtf> btfs) {
        List<Line> all = new ArrayList<>();
        for (Feature.BpfProgInfo p : programs) {
            // perf keeps no translated instructions, but the info still says how long they are.
            ByteBuffer info = p.info().order(ByteOrder.LITTLE_ENDIAN);
            int xlatedLen = info.limit() >= INFO_XLATED_PROG_LEN + 4 ? info.getInt(INFO_XLATED_PROG_LEN) : 0;
            all.addAll(linesOf(metadataOf(p, btfs), xlatedLen <= 0 ? -1 : xlatedLen / 8));
        }
        return new SourceLines(all);
    }

    // struct bpf_prog_info fields perf's BpfProgInfo does not name.
    private static final int INFO_XLATED_PROG_LEN = 20, INFO_LINE_INFO_REC_SIZE = 172,
            INFO_JITED_LINE_INFO_REC_SIZE = 176;

    /** A perf-recorded program as the archive's metadata (the fields line lookup needs). */
    static BpfMetadata metadataOf(Feature.BpfProgInfo p, List<Feature.BpfBtf> btfs) {
        ByteBuffer info = p.info().order(ByteOrder.LITTLE_ENDIAN);
        int btfId = p.btfId();
        int lineRec = info.limit() >= INFO_LINE_INFO_REC_SIZE + 4 ? info.getInt(INFO_LINE_INFO_REC_SIZE) : 0;
        int jitedRec = info.limit() >= INFO_JITED_LINE_INFO_REC_SIZE + 4
                ? info.getInt(INFO_JITED_LINE_INFO_REC_SIZE) : 0;
        byte[] btf = null;
        for (Feature.BpfBtf b : btfs) {
            if (btfId != 0 && b.btfId() == btfId) btf = bytes(b.data());
        }
        return new BpfMetadata(p.progId(), java.util.HexFormat.of().formatHex(p.tag()), p.name(), p.progType(),
                p.jitedKsyms(), p.jitedFuncLens(), bytes(p.array(Feature.BpfProgInfo.ARRAY_LINE_INFO)), lineRec,
                bytes(p.array(Feature.BpfProgInfo.ARRAY_JITED_LINE_INFO)), jitedRec,
                bytes(p.array(Feature.BpfProgInfo.ARRAY_FUNC_INFO)), 0, btfId, btf, null, p.loadTime(), 0);
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** Every line record, by JIT address. */
    public List<Line> lines() {
        return List.of(lines);
    }

    public boolean isEmpty() {
        return lines.length == 0;
    }

    /** The line whose code holds {@code address}, or empty when no program here has code there. */
    public Optional<Line> at(long address) {
        int i = indexAt(address);
        return i < 0 ? Optional.empty() : Optional.of(lines[i]);
    }

    /** Index into {@link #lines()} of the line holding {@code address}, or -1. No allocation. */
    public int indexAt(long address) {
        int found = SortedAddresses.lastAtOrBelow(starts, address);
        if (found < 0 || Long.compareUnsigned(address, lines[found].end) >= 0) return -1;
        return found;
    }

    /**
     * How often each line ran in {@code invocations}: the {@code --source} view.
     *
     * @param lines        every line, by address, with its counts (lines never run included, with zeros)
     * @param insns        instructions executed in each line's code, same order as {@code lines}
     * @param invocations  invocations that ran at least one instruction of the line, same order
     * @param unmapped     instructions of the paths that no line covers (code without line info)
     */
    public record Profile(List<Line> lines, long[] insns, long[] invocations, long unmapped) {

        /** The rows whose code starts at an address {@code shown} accepts ({@code unmapped} unchanged). */
        public Profile where(java.util.function.LongPredicate shown) {
            List<Line> kept = new ArrayList<>();
            long[] i = new long[lines.size()], r = new long[lines.size()];
            for (int k = 0; k < lines.size(); k++) {
                if (shown.test(lines.get(k).address())) {
                    i[kept.size()] = insns[k];
                    r[kept.size()] = invocations[k];
                    kept.add(lines.get(k));
                }
            }
            return new Profile(List.copyOf(kept), Arrays.copyOf(i, kept.size()), Arrays.copyOf(r, kept.size()),
                    unmapped);
        }

        /** One row per line: instructions, invocations, location, source text (perf annotate's layout). */
        public String text() {
            StringBuilder sb = new StringBuilder();
            sb.append(String.format("%12s %11s  %-28s %s%n", "insns", "invocations", "line", "source"));
            String program = null;
            int function = -1;
            for (int i = 0; i < lines.size(); i++) {
                Line l = lines.get(i);
                if (!l.program().equals(program) || l.function() != function) {
                    program = l.program();
                    function = l.function();
                    sb.append(String.format("%s function %d at 0x%x:%n", program, function, l.address()));
                }
                sb.append(String.format("%12d %11d  %-28s %s%n", insns[i], invocations[i], l.location(),
                        l.text().strip()));
            }
            if (unmapped > 0) sb.append(String.format("%12d %11s  (no line info)%n", unmapped, ""));
            return sb.toString();
        }

        /** One {@code "type":"source"} object per line, then none for unmapped code (it is in {@link #unmapped}). */
        public List<String> jsonLines() {
            List<String> out = new ArrayList<>(lines.size());
            for (int i = 0; i < lines.size(); i++) {
                Line l = lines.get(i);
                out.add(new Json().field("type", "source").field("program", l.program())
                        .field("function", l.function()).address("address", l.address())
                        .address("end", l.end()).field("insn", l.insn()).field("insn_end", l.insnEnd())
                        .field("file", l.file())
                        .field("line", l.line()).field("column", l.column()).field("text", l.text())
                        .field("insns", insns[i]).field("invocations", invocations[i]).toString());
            }
            return out;
        }
    }

    /** Counts, per line, the instructions of every path and the invocations that reached it. */
    public Profile profile(Collection<Invocation> invocations) {
        Profiler p = profiler();
        invocations.forEach(p::add);
        return p.profile();
    }

    /** A profile gathered one invocation at a time. */
    public Profiler profiler() {
        return new Profiler();
    }

    /** Counts instructions and invocations per line as invocations come. */
    public final class Profiler {
        private final long[] insns = new long[lines.length], runs = new long[lines.length];
        private final int[] lastSeen = new int[lines.length];
        private long unmapped;
        private int k;

        private Profiler() {
            Arrays.fill(lastSeen, -1);
        }

        public void add(Invocation inv) {
            for (long address : inv.path()) {
                int i = indexAt(address);
                if (i < 0) {
                    unmapped++;
                    continue;
                }
                insns[i]++;
                if (lastSeen[i] != k) {
                    lastSeen[i] = k;
                    runs[i]++;
                }
            }
            k++;
        }

        public Profile profile() {
            return new Profile(List.of(lines), insns.clone(), runs.clone(), unmapped);
        }
    }

    /**
     * The lines of one program. Records are grouped by JITed function: the kernel fills each function's
     * records with addresses inside that function, so a record belongs to the function whose range holds its
     * address; its range ends at the next record of the same function (or at the function's end).
     */
    static List<Line> linesOf(BpfMetadata m, int programInsns) {
        int rec = m.lineInfoRecSize(), jrec = m.jitedLineInfoRecSize();
        byte[] li = m.lineInfo(), jli = m.jitedLineInfo(), btf = m.btf();
        long[] ksyms = m.jitedKsyms();
        int[] lens = m.jitedFuncLens();
        if (rec == 0 || li.length == 0 || jrec == 0 || jli.length == 0 || btf.length == 0 || ksyms.length == 0) {
            return List.of();
        }
        String where = "BPF program " + m.name() + " (id " + m.progId() + ")";
        if (rec < LINE_INFO_MIN_SIZE || jrec < 8 || ksyms.length != lens.length) {
            throw new BadInputException(where + ": line info record size " + rec + ", JITed line info record size "
                    + jrec + ", " + ksyms.length + " functions with " + lens.length + " lengths");
        }
        int n = Math.min(li.length / rec, jli.length / jrec);
        Strings strings = Strings.of(btf, where);
        ByteBuffer l = ByteBuffer.wrap(li).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer j = ByteBuffer.wrap(jli).order(ByteOrder.LITTLE_ENDIAN);
        // Each record's instructions run to the next record's (subprograms are contiguous and each starts with one).
        int[] starts = new int[n];
        for (int i = 0; i < n; i++) starts[i] = l.getInt(i * rec);
        int[] sortedStarts = starts.clone();
        Arrays.sort(sortedStarts);
        Map<Integer, List<Line>> byFunction = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            long address = j.getLong(i * jrec);
            int f = functionOf(ksyms, lens, address);
            if (f < 0) continue; // not in any JITed function: the kernel left it unset
            int insn = l.getInt(i * rec), fileOff = l.getInt(i * rec + 4), lineOff = l.getInt(i * rec + 8);
            int lineCol = l.getInt(i * rec + 12);
            int next = Arrays.binarySearch(sortedStarts, insn + 1);
            next = next >= 0 ? next : -next - 1;
            int insnEnd = next < n ? sortedStarts[next] : programInsns;
            Line line = new Line(address, 0, m.name(), f, insn, insnEnd, strings.at(fileOff), lineCol >>> COLUMN_BITS,
                    lineCol & ((1 << COLUMN_BITS) - 1), strings.at(lineOff));
            byFunction.computeIfAbsent(f, k -> new ArrayList<>()).add(line);
        }
        List<Line> out = new ArrayList<>();
        byFunction.forEach((f, ls) -> {
            ls.sort(BY_ADDRESS);
            long functionEnd = ksyms[f] + Integer.toUnsignedLong(lens[f]);
            for (int i = 0; i < ls.size(); i++) {
                Line x = ls.get(i);
                long end = i + 1 < ls.size() ? ls.get(i + 1).address : functionEnd;
                out.add(new Line(x.address, end, x.program, x.function, x.insn, x.insnEnd, x.file, x.line, x.column,
                        x.text));
            }
        });
        // Records sharing one address: the last one is the line whose code is there (the earlier ones emitted none).
        out.removeIf(x -> x.address == x.end);
        return out;
    }

    private static int functionOf(long[] ksyms, int[] lens, long address) {
        for (int f = 0; f < ksyms.length; f++) {
            if (Long.compareUnsigned(address - ksyms[f], Integer.toUnsignedLong(lens[f])) < 0) return f;
        }
        return -1;
    }

    /** The string section of a raw BTF blob (header, types, strings): all line info needs of it. */
    private record Strings(byte[] btf, int start, int length, String where) {
        static Strings of(byte[] btf, String where) {
            ByteBuffer b = ByteBuffer.wrap(btf).order(ByteOrder.LITTLE_ENDIAN);
            if (btf.length < 24 || (b.getShort(0) & 0xffff) != BTF_MAGIC) {
                throw new BadInputException(where + ": BTF does not start with magic 0xeb9f");
            }
            long start = Integer.toUnsignedLong(b.getInt(4)) + Integer.toUnsignedLong(b.getInt(16));
            long length = Integer.toUnsignedLong(b.getInt(20));
            if (start + length > btf.length) {
                throw new BadInputException(where + ": BTF string section [" + start + ", +" + length
                        + ") runs past the blob's " + btf.length + " bytes");
            }
            return new Strings(btf, (int) start, (int) length, where);
        }

        String at(int offset) {
            if (offset < 0 || offset >= length) {
                throw new BadInputException(where + ": BTF string offset " + Integer.toUnsignedString(offset)
                        + " outside the " + length + "-byte string section");
            }
            int p = start + offset, end = start + length;
            while (p < end && btf[p] != 0) p++;
            return new String(btf, start + offset, p - start - offset, StandardCharsets.UTF_8);
        }
    }
}

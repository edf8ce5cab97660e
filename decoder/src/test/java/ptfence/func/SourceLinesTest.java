package ptfence.func;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import ptfence.cli.BadInputException;
import ptfence.region.BpfMetadata;

/** Line lookup over hand-laid kernel records (the live kernel check is capture's SourceLinesLiveTest). */
class SourceLinesTest {
    static final long F0 = 0xffffffffa0001000L, F1 = 0xffffffffa0002000L;

    /** A BTF blob with no types, only strings; offsets of each string returned through {@code offsets}. */
    static byte[] stringsOnlyBtf(List<String> strings, int[] offsets) {
        ByteArrayOutputStream s = new ByteArrayOutputStream();
        s.write(0);
        for (int i = 0; i < strings.size(); i++) {
            offsets[i] = s.size();
            s.writeBytes(strings.get(i).getBytes(StandardCharsets.UTF_8));
            s.write(0);
        }
        byte[] str = s.toByteArray();
        return ByteBuffer.allocate(24 + str.length).order(ByteOrder.LITTLE_ENDIAN).putShort((short) 0xEB9F)
                .put((byte) 1).put((byte) 0).putInt(24).putInt(0).putInt(0).putInt(0).putInt(str.length).put(str)
                .array();
    }

    /** {insn, file index, text index, line, column, jited address} per record. */
    static BpfMetadata program(String name, long[] ksyms, int[] lens, List<String> strings, long[][] records) {
        int[] off = new int[strings.size()];
        byte[] btf = stringsOnlyBtf(strings, off);
        ByteBuffer li = ByteBuffer.allocate(16 * records.length).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer jl = ByteBuffer.allocate(8 * records.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long[] r : records) {
            li.putInt((int) r[0]).putInt(off[(int) r[1]]).putInt(off[(int) r[2]]).putInt((int) (r[3] << 10 | r[4]));
            jl.putLong(r[5]);
        }
        return new BpfMetadata(7, "0123456789abcdef", name, 1, ksyms, lens, li.array(), 16, jl.array(), 8,
                null, 0, 3, btf, null, 0, 0);
    }

    static final List<String> STRINGS = List.of("prog.c", "\tint x = ctx->len;", "\tif (x > 10)",
            "\t\tx++;", "\treturn x;", "static int helper(int y)", "\treturn y * 3;");

    static BpfMetadata twoFunctions() {
        return program("twofunc", new long[] {F0, F1}, new int[] {0x40, 0x20}, STRINGS, new long[][] {
                {0, 0, 1, 10, 5, F0},
                {2, 0, 2, 11, 2, F0 + 0x10},
                {4, 0, 3, 12, 3, F0 + 0x10}, // same address as line 11: line 11 emitted no code of its own
                {5, 0, 4, 13, 2, F0 + 0x28},
                {8, 0, 5, 20, 0, F1},
                {10, 0, 6, 21, 9, F1 + 0x8}});
    }

    @Test
    void anAddressMapsToTheLastRecordAtOrBelowItInItsFunction() {
        SourceLines s = SourceLines.of(twoFunctions());
        long[][] expect = { // address, line (0 = none)
                {F0 - 1, 0}, {F0, 10}, {F0 + 0xf, 10}, {F0 + 0x10, 12}, {F0 + 0x27, 12}, {F0 + 0x28, 13},
                {F0 + 0x3f, 13}, {F0 + 0x40, 0}, {F1 - 1, 0}, {F1, 20}, {F1 + 7, 20}, {F1 + 8, 21}, {F1 + 0x1f, 21},
                {F1 + 0x20, 0}, {0, 0}, {-1L, 0}};
        for (long[] e : expect) {
            var line = s.at(e[0]);
            if (e[1] == 0) {
                assertTrue(line.isEmpty(), () -> "0x" + Long.toHexString(e[0]) + " -> " + line);
            } else {
                assertEquals(e[1], line.orElseThrow().line(), "line at 0x" + Long.toHexString(e[0]));
            }
        }
        SourceLines.Line l12 = s.at(F0 + 0x20).orElseThrow();
        assertEquals(new SourceLines.Line(F0 + 0x10, F0 + 0x28, "twofunc", 0, 4, "prog.c", 12, 3, "\t\tx++;"), l12);
        assertEquals("prog.c:12:3", l12.location());
        SourceLines.Line l20 = s.at(F1 + 1).orElseThrow();
        assertEquals(1, l20.function());
        assertEquals("static int helper(int y)", l20.text());
        assertEquals("prog.c:20", l20.location());
        assertEquals(5, s.lines().size(), "line 11 shares its address with line 12 and covers nothing");
    }

    @Test
    void severalProgramsCombineAndEachKeepsItsName() {
        long g = 0xffffffffa0010000L;
        BpfMetadata other = program("tailee", new long[] {g}, new int[] {0x18}, List.of("tail.c", "\treturn 0;"),
                new long[][] {{0, 0, 1, 3, 1, g}});
        SourceLines s = SourceLines.of(List.of(twoFunctions(), other));
        assertEquals("tailee", s.at(g + 0x17).orElseThrow().program());
        assertEquals("tail.c:3:1", s.at(g).orElseThrow().location());
        assertEquals("twofunc", s.at(F0).orElseThrow().program());
        assertTrue(s.at(g + 0x18).isEmpty());
    }

    @Test
    void perfsRecordOfTheProgramGivesTheSameLines() {
        BpfMetadata m = twoFunctions();
        // struct bpf_prog_info as the kernel fills it: counts and record sizes (uapi offsets), arrays laid out by perf.
        ByteBuffer info = ByteBuffer.allocate(232).order(ByteOrder.LITTLE_ENDIAN);
        info.putInt(0, 1).putInt(4, 7).put(8, java.util.HexFormat.of().parseHex("0123456789abcdef"))
                .putInt(104, 2).putInt(108, 2).putInt(128, 55).putInt(148, 6).putInt(168, 6).putInt(172, 16)
                .putInt(176, 8);
        info.put(64, "twofunc".getBytes(StandardCharsets.US_ASCII));
        ByteBuffer ks = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(F0).putLong(F1).flip();
        ByteBuffer lens = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(0x40).putInt(0x20).flip();
        var perf = ptfence.perfdata.Feature.BpfProgInfo.linear(info, Map.of(
                ptfence.perfdata.Feature.BpfProgInfo.ARRAY_JITED_KSYMS, ks,
                ptfence.perfdata.Feature.BpfProgInfo.ARRAY_JITED_FUNC_LENS, lens,
                ptfence.perfdata.Feature.BpfProgInfo.ARRAY_LINE_INFO, ByteBuffer.wrap(m.lineInfo()),
                ptfence.perfdata.Feature.BpfProgInfo.ARRAY_JITED_LINE_INFO, ByteBuffer.wrap(m.jitedLineInfo())));
        var otherBtf = new ptfence.perfdata.Feature.BpfBtf(54, ByteBuffer.wrap(new byte[] {1, 2, 3}));
        var btf = new ptfence.perfdata.Feature.BpfBtf(55, ByteBuffer.wrap(m.btf()));
        SourceLines fromPerf = SourceLines.ofPerf(List.of(perf), List.of(otherBtf, btf));
        assertEquals(SourceLines.of(m).lines(), fromPerf.lines());
        assertTrue(SourceLines.ofPerf(List.of(perf), List.of(otherBtf)).isEmpty(), "no BTF with the program's id");
    }

    @Test
    void withoutJitedLineInfoOrBtfThereIsNothingToMap() {
        assertTrue(SourceLines.of(BpfMetadata.of(1, "0123456789abcdef", "bare", 1)).isEmpty());
        BpfMetadata m = twoFunctions();
        BpfMetadata noJited = new BpfMetadata(m.progId(), m.tag(), m.name(), m.type(), m.jitedKsyms(),
                m.jitedFuncLens(), m.lineInfo(), 16, null, 0, null, 0, 0, m.btf(), null, 0, 0);
        assertTrue(SourceLines.of(noJited).isEmpty(), "unprivileged dumps zero jited_line_info");
    }

    @Test
    void aStringOffsetOutsideTheBtfIsBadInput() {
        BpfMetadata m = twoFunctions();
        byte[] li = m.lineInfo();
        ByteBuffer.wrap(li).order(ByteOrder.LITTLE_ENDIAN).putInt(8, 1 << 20);
        BpfMetadata bad = new BpfMetadata(m.progId(), m.tag(), m.name(), m.type(), m.jitedKsyms(),
                m.jitedFuncLens(), li, 16, m.jitedLineInfo(), 8, null, 0, 0, m.btf(), null, 0, 0);
        BadInputException e = assertThrows(BadInputException.class, () -> SourceLines.of(bad));
        assertTrue(e.getMessage().contains("twofunc") && e.getMessage().contains("1048576"), e.getMessage());
    }

    @Test
    void profileCountsInstructionsAndInvocationsPerLine() {
        SourceLines s = SourceLines.of(twoFunctions());
        // Invocation 1: two instructions in line 10, one in 12, one in helper line 21, one outside any line.
        Invocation a = invocation(F0, F0 + 3, F0 + 0x12, F1 + 0x8, 0xffffffff81000000L);
        // Invocation 2: line 10 once, line 13 twice.
        Invocation b = invocation(F0 + 1, F0 + 0x28, F0 + 0x30);
        SourceLines.Profile p = s.profile(List.of(a, b));
        long[] lineNumbers = p.lines().stream().mapToLong(SourceLines.Line::line).toArray();
        assertArrayEquals(new long[] {10, 12, 13, 20, 21}, lineNumbers);
        assertArrayEquals(new long[] {3, 1, 2, 0, 1}, p.insns());
        assertArrayEquals(new long[] {2, 1, 1, 0, 1}, p.invocations());
        assertEquals(1, p.unmapped());

        List<String> json = p.jsonLines();
        assertEquals(5, json.size());
        Map<String, Object> first = JsonReader.object(json.get(0));
        assertEquals("source", first.get("type"));
        assertEquals("0x" + Long.toHexString(F0), first.get("address"));
        assertEquals(3L, first.get("insns"));
        assertEquals("\tint x = ctx->len;", first.get("text"));
        String text = p.text();
        assertTrue(text.contains("prog.c:12:3") && text.contains("x++;") && text.contains("(no line info)"), text);
    }

    static Invocation invocation(long... path) {
        return new Invocation(0, 1, 1, "twofunc", -1, -1, Invocation.End.RETURN, path, new byte[path.length],
                List.of(), List.of("twofunc"));
    }
}

package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import ptfence.cli.JsonReader;

/**
 * Symbols, source lines and threads of a whole-recording decode against perf 6.1's own {@code perf script} on the
 * real HASE recordings: for every instruction, comm, pid, tid, address, symbol+offset, dso and srcline must be
 * perf's.
 */
class RecordingSymbolsTest {
    /** perf script -F comm,pid,tid,ip,sym,symoff,dso: "comm pid/tid ip sym+0xoff (dso)". */
    private static final Pattern PERF_INSN = Pattern.compile(
            "^\\s*(.+?)\\s+(\\d+)/(\\d+)\\s+([0-9a-f]+)\\s+(\\S+)\\s+\\((.*)\\)$");

    record Insn(String comm, int pid, int tid, long ip, String sym, String dso, String srcline) {
    }

    static Path recording(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".perf")
                    || p.getFileName().toString().equals("perf.data.1")).findFirst().orElseThrow();
        }
    }

    /** perf script's instructions, each with the srcline perf prints on the line after it (null if none). */
    static List<Insn> perf(Path rec, Path symfs) throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/perf")), "perf 6.1 not installed (bin/setup)");
        Process p = new ProcessBuilder("/usr/bin/perf", "script", "-i", rec.toString(), "--symfs=" + symfs,
                "--itrace=i1i", "-F", "comm,pid,tid,ip,sym,symoff,dso,srcline")
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "perf script failed");
        List<Insn> out = new ArrayList<>();
        for (String line : text.split("\n")) {
            Matcher m = PERF_INSN.matcher(line);
            if (m.matches()) {
                String sym = m.group(5).equals("[unknown]") ? null : m.group(5);
                out.add(new Insn(m.group(1), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)),
                        Long.parseUnsignedLong(m.group(4), 16), sym, sym == null ? null : m.group(6), null));
            } else if (!line.isBlank() && !out.isEmpty()) {
                Insn last = out.remove(out.size() - 1);
                out.add(new Insn(last.comm(), last.pid(), last.tid(), last.ip(), last.sym(), last.dso(),
                        line.trim()));
            }
        }
        return out;
    }

    /** ptdecode's instructions from its jsonl, symbols as perf prints them (+0x0 on a function's first byte). */
    static List<Insn> ptdecode(String out) {
        List<Insn> got = new ArrayList<>();
        for (String line : out.split("\n")) {
            if (!line.contains("\"insn\"")) {
                continue;
            }
            Map<String, Object> o = JsonReader.object(line);
            String sym = (String) o.get("sym");
            if (sym != null && !sym.contains("+0x")) {
                sym += "+0x0";
            }
            got.add(new Insn((String) o.get("comm"), ((Number) o.get("pid")).intValue(),
                    ((Number) o.get("tid")).intValue(), Long.parseUnsignedLong(((String) o.get("ip")).substring(2), 16),
                    sym, (String) o.get("dso"), (String) o.get("srcline")));
        }
        return got;
    }

    @ParameterizedTest
    @ValueSource(strings = {"loopy-20180404T162955", "loopy-20180514T145114", "control_flow-20180404T163033",
            "control_flow-20180515T180451"})
    void everyInstructionHasPerfsThreadSymbolAndSourceLine(String name) throws Exception {
        Path d = RecordingPacketsTest.hase(name);
        Path rec = recording(d);
        List<Insn> want = perf(rec, d.resolve("symfs"));
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode("--sysroot", d.resolve("symfs").toString(), "--srcline",
                "--dso", "--format", "jsonl", rec.toString());
        assertEquals(0, r.exit(), r.err());
        List<Insn> got = ptdecode(r.out());
        assertTrue(want.size() > 50, "perf printed too little");
        assertTrue(want.stream().filter(i -> i.srcline() != null).count() > 10 || name.startsWith("loopy"),
                "perf found no source lines");
        assertEquals(want.size(), got.size());
        for (int i = 0; i < want.size(); i++) {
            assertEquals(want.get(i), got.get(i), "instruction " + i);
        }
    }

    @Test
    void textShowsThreadSymbolAndSrclineOfTheBundledLoopy() throws Exception {
        Path d = RecordingPacketsTest.hase("loopy-20180404T162955");
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode("--sysroot", d.resolve("symfs").toString(), "--srcline",
                recording(d).toString());
        assertEquals(0, r.exit(), r.err());
        String first = r.out().lines().filter(l -> l.contains("4000e8  mov")).findFirst().orElseThrow();
        assertTrue(first.matches(".*\\bloopy\\s+19233/19233\\s+00000000004000e8  mov r8, qword ptr \\[rsp\\]\\s+"
                + "<_start>  loopy\\.S:11"), first);
        assertTrue(!r.out().contains("/loopy/loopy"), "the file only with --dso");
        RecordingFlowTest.Run dso = RecordingFlowTest.ptdecode("--sysroot", d.resolve("symfs").toString(), "--dso",
                recording(d).toString());
        assertTrue(dso.out().contains("<_start> (/home/joerg/git/angr/hase/tests/bin/loopy/loopy)"), dso.out());
    }

    @Test
    void funcNamesAUserSymbolOfAMappedFile() throws Exception {
        Path d = RecordingPacketsTest.hase("control_flow-20180404T163033");
        Path rec = recording(d);
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode("--sysroot", d.resolve("symfs").toString(), "--func",
                "main", "--format", "jsonl", rec.toString());
        assertEquals(0, r.exit(), r.err());
        // perf's own view of main: the instructions between its entry and the trace's end that lie inside main
        List<Insn> perf = perf(rec, d.resolve("symfs"));
        long inMain = perf.stream().filter(i -> i.sym() != null && i.sym().startsWith("main+")).count();
        Map<String, Object> inv = r.out().lines().filter(l -> l.contains("\"invocation\"")).map(JsonReader::object)
                .findFirst().orElseThrow();
        assertEquals("main", inv.get("function"));
        assertEquals(19731, ((Number) inv.get("pid")).intValue());
        assertEquals(inMain, ((List<?>) inv.get("path")).size());
    }

    @Test
    void threadFiltersKeepOnlyTheirThreads() throws Exception {
        Path d = RecordingPacketsTest.hase("control_flow-20180404T163033");
        String rec = recording(d).toString();
        String symfs = d.resolve("symfs").toString();
        long all = RecordingFlowTest.ptdecode("--sysroot", symfs, "--format", "jsonl", rec).out().lines()
                .filter(l -> l.contains("\"insn\"")).count();
        for (String[] f : new String[][] {{"--pid", "19731"}, {"--tid", "1,19731"}, {"--comm", "control_flow"}}) {
            long n = RecordingFlowTest.ptdecode("--sysroot", symfs, "--format", "jsonl", f[0], f[1], rec).out()
                    .lines().filter(l -> l.contains("\"insn\"")).count();
            assertEquals(all, n, f[0]);
        }
        for (String[] f : new String[][] {{"--pid", "1"}, {"--tid", "19730"}, {"--comm", ".perf-wrapped"}}) {
            assertEquals(0, RecordingFlowTest.ptdecode("--sysroot", symfs, "--format", "jsonl", f[0], f[1], rec)
                    .out().lines().filter(l -> l.contains("\"insn\"")).count(), f[0]);
        }
        RecordingFlowTest.Run bad = RecordingFlowTest.ptdecode("--pid", "x", rec);
        assertEquals(2, bad.exit());
        assertTrue(bad.err().contains("--pid"), bad.err());
    }
}

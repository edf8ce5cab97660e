package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Tool;

/**
 * {@code ptdecode RECORDING} on real perf.data files recorded on Intel CPUs: the flow it rebuilds from the recording
 * alone (sideband MMAP2s, the files under --sysroot) must be perf 6.1's, instruction for instruction.
 */
class RecordingFlowTest {
    private static final Pattern IP = Pattern.compile("\"ip\":\"0x([0-9a-f]+)\",\"insn\"");

    record Run(int exit, String out, String err) {
    }

    static Run ptdecode(String... args) {
        return ptdecode(Path.of(""), new byte[0], args);
    }

    /** Runs ptdecode in {@code dir} (where ./perf.data is looked for) with {@code stdin}. */
    static Run ptdecode(Path dir, byte[] stdin, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PtdecodeCommand cmd = new PtdecodeCommand();
        cmd.stdin = new java.io.ByteArrayInputStream(stdin);
        cmd.directory = dir;
        cmd.stdout = out;
        cmd.stderr = new PrintStream(err, true, StandardCharsets.UTF_8);
        StringWriter toolErr = new StringWriter();
        int rc = Tool.run("ptdecode", cmd, new PrintWriter(new StringWriter()), new PrintWriter(toolErr), args);
        return new Run(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8) + toolErr);
    }

    @ParameterizedTest
    @ValueSource(strings = {"loopy-20180404T162955", "loopy-20180514T145114", "control_flow-20180404T163033",
            "control_flow-20180515T180451"})
    void haseRecordingsDecodeToPerfsInstructions(String name) throws Exception {
        Path d = RecordingPacketsTest.hase(name);
        Path rec;
        try (Stream<Path> s = Files.list(d)) {
            rec = s.filter(p -> p.getFileName().toString().endsWith(".perf")
                    || p.getFileName().toString().equals("perf.data.1")).findFirst().orElseThrow();
        }
        Run r = ptdecode("--sysroot", d.resolve("symfs").toString(), "--format", "jsonl", rec.toString());
        assertEquals(0, r.exit(), r.err());
        List<Long> want = perfInstructions(d);
        assertTrue(want.size() > 50, "expected file too short");
        assertEquals(want, instructions(r.out()));
    }

    /** The instruction addresses of a recording decode's jsonl. */
    static List<Long> instructions(String jsonl) {
        List<Long> got = new ArrayList<>();
        Matcher m = IP.matcher(jsonl);
        while (m.find()) {
            got.add(Long.parseUnsignedLong(m.group(1), 16));
        }
        return got;
    }

    /** What perf 6.1's --itrace=i1i printed for a HASE recording: its instruction addresses. */
    static List<Long> perfInstructions(Path hase) throws java.io.IOException {
        return Files.readAllLines(hase.resolve("expected/perf61_insns_itrace_i1i.txt")).stream()
                .filter(l -> !l.isBlank()).map(l -> Long.parseUnsignedLong(l.trim(), 16)).toList();
    }

    @Test
    void withoutTheBinariesEachMissingMappingIsReportedOnceAndTheDecodeGoesOn(@TempDir Path tmp) throws Exception {
        Path d = RecordingPacketsTest.hase("loopy-20180514T145114");
        Path rec = tmp.resolve("perf.data");
        Files.copy(d.resolve("perf.data.1"), rec);
        Run r = ptdecode(rec.toString());
        assertEquals(0, r.exit());
        // one line per kind of missing code, not per place: the file the trace ran in is not there
        assertEquals(1, r.err().lines().filter(l -> l.startsWith("ptdecode: no code for 1 mapped file ")
                && l.contains("loopy")).count(), r.err());
        assertEquals(2, r.err().strip().lines().count(), r.err());
        // -v adds the place: the file, its errors and the first address that had no code
        Run v = ptdecode("-v", rec.toString());
        assertEquals(3, v.err().strip().lines().count(), v.err());
        assertTrue(v.err().lines().anyMatch(l -> l.matches("ptdecode:   /\\S+/loopy: 7 errors, lowest at 0x4000e8")),
                v.err());
        assertTrue(r.out().contains("error: no memory mapped at this address"), r.out());
    }

    @Test
    void badInputIsOneLineAndExit2(@TempDir Path tmp) throws Exception {
        Run missing = ptdecode(tmp.resolve("nope.data").toString());
        assertEquals(2, missing.exit());
        assertEquals(1, missing.err().strip().lines().count(), missing.err());
        Path sidebandOnly = tmp.resolve("sb.data");
        ptfence.perfdata.EventAttr dummy = ptfence.perfdata.EventAttr.builder().type(1).config(9).build();
        try (var w = ptfence.perfdata.PerfDataWriter.create(sidebandOnly,
                List.of(new ptfence.perfdata.AttrIds(dummy, List.of(1L))))) {
            w.write(new ptfence.perfdata.PerfRecord.Comm(0, 1, 1, "x", ptfence.perfdata.SampleId.NONE));
        }
        Run noPt = ptdecode(sidebandOnly.toString());
        assertEquals(2, noPt.exit());
        // issue 20: it said "record with 'ptrec'" of what ptrec --sideband-only wrote; it says what the file is now
        assertTrue(noPt.err().contains("a sideband-only recording") && noPt.err().contains("no --packets")
                && noPt.err().contains("perf script --show-task-events"), noPt.err());
        Run noPtPackets = ptdecode("--packets", sidebandOnly.toString());
        assertEquals(2, noPtPackets.exit(), "not a silent empty listing: " + noPtPackets.err());
        assertTrue(noPtPackets.err().contains("a sideband-only recording"), noPtPackets.err());
        Path d = RecordingPacketsTest.hase("loopy-20180514T145114");
        Run noArchive = ptdecode("--archive", tmp.resolve("none").toString(), d.resolve("perf.data.1").toString());
        assertEquals(2, noArchive.exit());
        assertTrue(noArchive.err().contains("no ptfence archive"), noArchive.err());
        Run badCpu = ptdecode("-C", "x", d.resolve("perf.data.1").toString());
        assertEquals(2, badCpu.exit());
        Run noFunc = ptdecode("--func", "no_such_function", d.resolve("perf.data.1").toString());
        assertEquals(2, noFunc.exit());
        assertTrue(noFunc.err().contains("--func no_such_function"), noFunc.err());
    }

    @Test
    void mutatedRecordingsExitWith0Or2(@TempDir Path tmp) throws Exception {
        Path d = RecordingPacketsTest.hase("control_flow-20180404T163033");
        byte[] orig = Files.readAllBytes(d.resolve("control_flow__control_flow-20180404T163033.perf"));
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(7);
        Path m = tmp.resolve("m.perf");
        for (int i = 0; i < 200; i++) {
            byte[] b = orig.clone();
            if (rnd.nextInt(4) == 0) {
                b = Arrays.copyOf(b, 8 + rnd.nextInt(b.length - 8));
            } else {
                for (int k = 0, flips = 1 + rnd.nextInt(8); k < flips; k++) {
                    b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
                }
            }
            Files.write(m, b);
            Run r = ptdecode("--sysroot", d.resolve("symfs").toString(), m.toString());
            assertTrue(r.exit() == 0 || r.exit() == 2, "mutant " + i + " exit " + r.exit() + ": " + r.err());
        }
    }
}

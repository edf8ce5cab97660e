package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * perf's recovery where the code is missing (issue 32), on HASE's real recordings copied alone (their binaries not
 * there): perf 6.1 begins the trace at each IP packet, fails at the packet that makes it walk and scans on past it.
 * The branch and error lines of ptdecode's perf views must be perf's own; and each failure is one error, at the
 * packet the decoder looks at after the one that needed the code (the merge reverted in 08971c6 replayed a PSB+ and
 * reported loopy's last failure twice, at 0x201, inside a PSBEND).
 */
class MissingCodeRecoveryTest {
    static Path alone(Path tmp, String name) throws IOException {
        Path d = RecordingPacketsTest.hase(name);
        Path rec;
        try (Stream<Path> s = Files.list(d)) {
            rec = s.filter(p -> p.getFileName().toString().endsWith(".perf")
                    || p.getFileName().toString().equals("perf.data.1")).findFirst().orElseThrow();
        }
        Path copy = tmp.resolve("perf.data");
        Files.copy(rec, copy);
        return copy;
    }

    static String perf(Path tmp, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("perf"));
        cmd.addAll(List.of(args));
        Path out = tmp.resolve("perf.out");
        Process p;
        try {
            p = new ProcessBuilder(cmd).directory(tmp.toFile()).redirectOutput(out.toFile())
                    .redirectError(tmp.resolve("perf.err").toFile()).start();
        } catch (IOException e) {
            Assumptions.abort("perf is not installed (" + e.getMessage() + ")");
            throw e;
        }
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "perf did not finish");
        assertEquals(0, p.exitValue(), Files.readString(tmp.resolve("perf.err")));
        return Files.readString(out, StandardCharsets.UTF_8);
    }

    @ParameterizedTest
    @ValueSource(strings = {"loopy-20180404T162955", "loopy-20180514T145114", "control_flow-20180404T163033",
            "control_flow-20180515T180451"})
    void withoutTheBinaryTheBranchAndErrorLinesArePerfs(String name, @TempDir Path tmp) throws Exception {
        Path rec = alone(tmp, name);
        for (String itrace : List.of("be", "b", "e", "cepwx")) {
            String want = perf(tmp, "script", "-i", rec.toString(), "--itrace=" + itrace);
            assertFalse(want.isBlank(), "perf printed nothing for --itrace=" + itrace);
            RecordingFlowTest.Run r = RecordingFlowTest.ptdecode("--itrace=" + itrace, rec.toString());
            assertEquals(0, r.exit(), r.err());
            assertEquals(want, r.out(), name + " --itrace=" + itrace);
        }
    }

    /**
     * The quipper recording (kernel and user, two CPUs, none of its code here): every branch, trace begin and end,
     * transaction, PSB and CBR line is perf's. Among them the trace begins where perf failed walking to a FUP and its
     * scan read the TIP that came with it ({@code 0 => ffffffffba001340}), those at a FUP after a MODE.TSX (perf's scan
     * reports no transaction nor abort there), and the IP 0 of a PSB the scan met; and so is every "Failed to get
     * instruction" line (which failures print, by perf's per-file data status, and their times).
     */
    @ParameterizedTest
    @ValueSource(strings = {"b", "c", "r", "cepwx", "bep"})
    void withoutItsCodeQuippersLinesArePerfs(String itrace, @TempDir Path tmp)
            throws Exception {
        Path rec = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14");
        String want = perf(tmp, "script", "-i", rec.toString(), "--itrace=" + itrace, "-F+flags");
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode("--itrace=" + itrace, "-F+flags", rec.toString());
        assertEquals(0, r.exit(), r.err());
        assertTrue(want.lines().count() > 10, want);
        assertEquals(want, r.out(), "--itrace=" + itrace + " -F+flags");
    }

    /** perf's raw dump: offset -> packet name, for the packets of the trace (pads folded into the packet before). */
    private static TreeMap<Long, String> packets(String dump) {
        TreeMap<Long, String> out = new TreeMap<>();
        Matcher m = Pattern.compile("(?m)^\\.  ([0-9a-f]{8}):  (?:[0-9a-f]{2} )+\\s*(\\S.*)$").matcher(dump);
        while (m.find()) {
            out.put(Long.parseLong(m.group(1), 16), m.group(2).trim());
        }
        return out;
    }

    @Test
    void eachFailureIsOneErrorAtThePacketAfterTheOneThatNeededTheCode(@TempDir Path tmp) throws Exception {
        Path rec = alone(tmp, "loopy-20180514T145114");
        TreeMap<Long, String> pkts = packets(perf(tmp, "report", "-D", "-i", rec.toString()));
        assertTrue(pkts.size() > 50, "perf -D listed " + pkts.size() + " packets");
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode(rec.toString());
        assertEquals(0, r.exit(), r.err());
        Matcher m = Pattern.compile("\\[([0-9a-f]+), ([0-9a-f]+): error: no memory mapped").matcher(r.out());
        Set<Long> seen = new HashSet<>();
        int errors = 0;
        while (m.find()) {
            long off = Long.parseLong(m.group(1), 16);
            errors++;
            assertTrue(seen.add(off), "error at 0x" + m.group(1) + " reported twice:\n" + r.out());
            assertTrue(pkts.containsKey(off), "0x" + m.group(1) + " is no packet's start in perf -D:\n" + r.out());
            String before = pkts.lowerEntry(off).getValue();
            assertTrue(before.startsWith("TNT") || before.startsWith("TIP"),
                    "the packet before 0x" + m.group(1) + " (" + before + ") makes no walk");
        }
        // one failure per PSB+ that enables tracing at an IP without code, the first one (0x28) excepted: its
        // TIP.PGD comes with a FUP at the same IP (an asynchronous disable needs no code)
        long enables = pkts.values().stream().filter(v -> v.startsWith("TIP.PGE")).count();
        assertEquals(enables - 1, errors, r.out());
        // the enable before each failure comes once: no PSB+ is read twice
        assertEquals(enables, r.out().lines().filter(l -> l.contains("[enabled, ip:")).count(), r.out());
    }
}

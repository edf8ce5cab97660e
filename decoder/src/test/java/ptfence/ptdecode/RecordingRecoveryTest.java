package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import ptfence.cli.Tool;
import ptfence.perfdata.RealRecordings;

/**
 * Decode errors in a recording, against perf 6.1 on the quipper recording (kernel 4.14, user and kernel traced, none
 * of its code here): perf reports 114 "instruction trace errors" and goes on after each at the next packet with a
 * full IP. So must we: every error perf reports is one of ours (same CPU, same address, at most 2 µs earlier, as
 * perf reports a failure when the next packet needs the walk, we when the address is reached; or the same instant,
 * where we saw an interrupt at perf's address and failed at the handler), no instruction is decoded (there is no code,
 * perf decodes none either), the summary on stderr counts the errors and --strict turns them into exit status 2.
 */
class RecordingRecoveryTest {
    private static final Pattern PERF_ERROR = Pattern.compile(
            "instruction trace error type 1 time (\\d+\\.\\d{9}) cpu (\\d+) .* ip 0x([0-9a-f]+) code 5");
    private static final Pattern PERF_COUNT = Pattern.compile("(\\d+) instruction trace errors");
    private static final Pattern OUR_ERROR = Pattern.compile(
            "^\\{\"cpu\":(\\d+),\"time\":(\\d+),\"error\":\"[^\"]*\",\"kind\":\"error\",\"offset\":\\d+,\"ip\":\"0x([0-9a-f]+)\"");

    record Point(int cpu, long time, long ip) {
    }

    static Path quipper() {
        String s = System.getProperty("ptfence.data", "../fixtures/data");
        Path q = s == null ? null : Path.of(s, "real", "quipper_perf_data_converter");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(q), "missing recording data");
        return q;
    }

    @Test
    void errorsAreThoseOfPerfAndTheDecodeGoesOnAtTheNextFullIp() throws Exception {
        Path q = quipper();
        List<Point> perf = new ArrayList<>();
        int perfCount = -1;
        for (String l : RealRecordings.lines(q.resolve("expected/perf61_script_itrace_be.file.txt.xz"))) {
            Matcher m = PERF_ERROR.matcher(l);
            Matcher c = PERF_COUNT.matcher(l);
            if (m.find()) {
                perf.add(new Point(Integer.parseInt(m.group(2)),
                        new java.math.BigDecimal(m.group(1)).movePointRight(9).longValueExact(),
                        Long.parseUnsignedLong(m.group(3), 16)));
            } else if (c.matches()) {
                perfCount = Integer.parseInt(c.group(1));
            }
        }
        assertEquals(114, perfCount, "perf's count of errors");
        // (in the stored output one of them is cut by perf's stderr warning, written into the same file)
        assertEquals(perfCount - 1, perf.size(), "perf's error points");
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode("--format", "jsonl",
                q.resolve("perf.data.intel_pt-4.14").toString());
        assertEquals(Tool.EXIT_OK, r.exit(), r.err());
        List<Point> ours = new ArrayList<>();
        long insns = 0;
        for (String l : r.out().split("\n")) {
            Matcher m = OUR_ERROR.matcher(l);
            if (m.find()) {
                ours.add(new Point(Integer.parseInt(m.group(1)), Long.parseLong(m.group(2)),
                        Long.parseUnsignedLong(m.group(3), 16)));
            } else if (l.contains("\"insn\":")) {
                insns++;
            }
        }
        assertEquals(0, insns, "no code: no instruction, as perf");
        int from = 0;
        for (Point p : perf) {
            int k = from;
            while (k < ours.size() && !matches(ours.get(k), p)) {
                k++;
            }
            assertTrue(k < ours.size(), "perf's error " + p + " is not among ours after " + ours.get(from));
            from = k + 1;
        }
        // perf stays silent after the first failure in an object it knows has no code; we report each stretch lost
        assertTrue(ours.size() >= perf.size());
        assertTrue(r.err().contains("ptdecode: " + ours.size() + " decode errors (cpu 0: "), r.err());
        assertEquals(Tool.EXIT_BAD_INPUT, RecordingFlowTest.ptdecode("--strict", "--format", "jsonl",
                q.resolve("perf.data.intel_pt-4.14").toString()).exit());
    }

    private static boolean matches(Point ours, Point perf) {
        if (ours.cpu() != perf.cpu()) {
            return false;
        }
        long before = perf.time() - ours.time();
        return ours.ip() == perf.ip() ? before >= 0 && before <= 2_000 : before == 0;
    }

    @Test
    void aCleanDecodeExitsZeroWithStrictAndPrintsNoErrorCount() {
        Path d = RecordingPacketsTest.hase("loopy-20180514T145114");
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode("--strict", "--sysroot", d.resolve("symfs").toString(),
                d.resolve("perf.data.1").toString());
        assertEquals(Tool.EXIT_OK, r.exit(), r.err());
        assertTrue(!r.err().contains("decode error"), r.err());
    }
}

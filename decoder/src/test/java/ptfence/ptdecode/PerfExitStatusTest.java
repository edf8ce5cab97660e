package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * perf 6.1's exit statuses for -C and --time lines it refuses, against the perf entry (PerfEntry) run in this JVM:
 * -C on a recording whose cycles event has no CPU in its samples (quipper: 255), a CPU at or past the recording's
 * available ones, libperf's CPU-list forms (0x2, 010 is 8, "2,", "0-", " 2"); every --time string perf refuses exits
 * 234 (cmd_script's -EINVAL as a status), a --time given twice takes the last. Where perf exits 0 the bytes are
 * perf's too.
 */
class PerfExitStatusTest {
    @TempDir
    Path tmp;

    record Outcome(int status, String out, String err) {
    }

    static Outcome perf(Path tmp, List<String> args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("perf"));
        cmd.addAll(args);
        Path out = tmp.resolve("perf.out");
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(tmp.resolve("perf.err").toFile())
                    .start();
        } catch (IOException e) {
            Assumptions.abort("perf is not installed (" + e.getMessage() + ")");
            throw e;
        }
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "perf did not finish");
        return new Outcome(p.exitValue(), Files.readString(out, StandardCharsets.ISO_8859_1),
                Files.readString(tmp.resolve("perf.err")));
    }

    static Outcome ours(List<String> args) {
        PtdecodeCommand c = new PtdecodeCommand();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        c.stdout = out;
        c.stderr = new PrintStream(err, true, StandardCharsets.UTF_8);
        StringWriter w = new StringWriter();
        int status = PerfEntry.run(c, new PrintWriter(w), new PrintWriter(w), args.toArray(String[]::new));
        return new Outcome(status, out.toString(StandardCharsets.ISO_8859_1), err + w.toString());
    }

    @Test
    void cpuAndTimeRefusalsArePerfs() throws Exception {
        String quipper = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14").toString();
        Path hase = RecordingPacketsTest.hase("loopy-20180404T162955");
        String loopy = hase.resolve("loopy-20180404T162955.perf").toString();
        String symfs = "--symfs=" + hase.resolve("symfs");
        List<List<String>> lines = new ArrayList<>();
        for (String c : List.of("0", "2", "0x2", "010", "2,", "0-", "2-", " 2", ",2", "2-1", "1-2", "3", "4", "abc",
                "4095", "2048")) {
            lines.add(List.of("script", "-i", loopy, symfs, "--itrace=be", "-C", c));
        }
        lines.add(List.of("script", "-i", quipper, "--itrace=e", "-C", "0"));
        lines.add(List.of("script", "-i", quipper, "--itrace=e", "-C", "1"));
        for (String t : List.of("10%/1", "0-10%", "641.2570", "abc", "", "641.2575,641.2570",
                "641.2570,641.2575,641.2580", "641.2570,641.2575,641.2580,641.2585", ",641.2575,641.2580,")) {
            lines.add(List.of("script", "-i", quipper, "--itrace=e", "--time", t));
        }
        lines.add(List.of("script", "-i", loopy, symfs, "--itrace=be", "--time", "969349.98,969349.99", "--time",
                "969349.987565,"));
        for (String t : List.of("10%/2", "0-10%", "969349.98757,969349.98756", "1,2,3")) {
            lines.add(List.of("script", "-i", loopy, symfs, "--itrace=be", "--time", t));
        }
        int refused = 0;
        for (List<String> line : lines) {
            Outcome want = perf(tmp, line);
            Outcome got = ours(line);
            assertEquals(want.status, got.status, "exit status of perf " + line + "\nperf: " + want.err + "\nours: "
                    + got.err);
            if (want.status == 0) {
                assertEquals(want.out, got.out, "perf " + line);
            } else {
                refused++;
            }
        }
        assertTrue(refused >= 15, "lines perf refuses: " + refused);
    }
}

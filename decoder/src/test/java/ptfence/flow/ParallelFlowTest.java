package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;
import ptfence.ptdecode.FlowCommand;

/**
 * PSB-segment decoding on several threads gives byte-for-byte the output of the sequential decoder, on the
 * bench generator's 1 MiB traces cut into segments of a few PSBs each (every seam exercised).
 */
class ParallelFlowTest {
    static String decode(Path dir, String trace, String... extra) {
        FlowCommand cmd = new FlowCommand();
        String[] base = {"--raw", dir.resolve("bench.bin") + ":0x400000", "--pt", dir.resolve(trace).toString()};
        String[] args = new String[base.length + extra.length];
        System.arraycopy(base, 0, args, 0, base.length);
        System.arraycopy(extra, 0, args, base.length, extra.length);
        new CommandLine(cmd).parseArgs(args);
        StringWriter sw = new StringWriter();
        try (PrintWriter pw = new PrintWriter(sw)) {
            cmd.decode(pw);
        }
        return sw.toString();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tnt", "mixed"})
    void segmentsStitchToTheSequentialOutput(String variant, @TempDir Path dir) throws Exception {
        String shared = System.getProperty("ptfence.shared");
        Assumptions.assumeTrue(shared != null, "ptfence.shared not set");
        Path bench = Path.of(shared, "bench");
        Assumptions.assumeTrue(Files.exists(bench.resolve("gen_bench.py")), "no bench generator");
        String trace = "bench-" + variant + "-1M.pt";
        Process p;
        try {
            p = new ProcessBuilder("python3", bench.resolve("gen_bench.py").toString(), variant, dir.resolve(trace).toString(),
                    "--segments", "64").redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.assumeTrue(false, "python3 is needed to generate the bench trace");
            return;
        }
        p.getInputStream().readAllBytes();
        assertEquals(0, p.waitFor());
        Files.copy(bench.resolve("bench.bin"), dir.resolve("bench.bin"));
        Matcher m = Pattern.compile("\"expected_instructions\":\\s*(\\d+)").matcher(Files.readString(dir.resolve(trace + ".json")));
        m.find();
        long expected = Long.parseLong(m.group(1));

        String sequential = decode(dir, trace, "--block-decoder");
        String parallel = decode(dir, trace, "--block-decoder", "--threads", "2", "--segment-bytes", "10000");
        assertEquals(expected + 2, sequential.lines().count(), "instructions plus [enabled] and [disabled]");
        assertEquals(sequential, parallel);
        String counted = decode(dir, trace, "--quiet", "--stat", "--threads", "2", "--segment-bytes", "10000");
        assertEquals("insn: " + expected + ".\n", counted);
    }
}

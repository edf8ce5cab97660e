package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Whole-output check on the 1 MiB bench traces: {@code ptdecode packets FILE} must produce exactly the bytes
 * libipt's ptdump produced (line count and sha256 recorded in fixtures/data/bench/REFERENCE.md). The traces are
 * regenerated with the bench's own generator (deterministic; its json gives the sha256 of the trace).
 */
class PtdumpBenchReferenceTest {
    @ParameterizedTest
    @ValueSource(strings = {"tnt", "mixed"})
    void ptdumpOutputIsByteIdentical(String variant, @TempDir Path dir) throws Exception {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path bench = Path.of(shared, "bench");
        org.junit.jupiter.api.Assertions.assertTrue(Files.exists(bench.resolve("gen_bench.py")), "no bench generator");
        String name = "bench-" + variant + "-1M.pt";
        Path trace = dir.resolve(name);
        Process gen;
        try {
            gen = new ProcessBuilder("python3", bench.resolve("gen_bench.py").toString(), variant, trace.toString(),
                    "--segments", "256").redirectErrorStream(true).redirectOutput(dir.resolve("gen.log").toFile())
                    .start();
        } catch (java.io.IOException e) {
            Assumptions.abort("python3 not available: " + e.getMessage());
            return;
        }
        assertEquals(0, gen.waitFor(), "gen_bench.py failed");
        String json = Files.readString(bench.resolve(name + ".json"));
        Matcher sha = Pattern.compile("\"sha256\": \"([0-9a-f]{64})\"").matcher(json);
        assertTrue(sha.find());
        assertEquals(sha.group(1), HexFormat.of().formatHex(
                MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(trace))), "regenerated trace differs");

        // The --quiet validation path (skipAll) must count exactly the generator's packets.
        Matcher total = Pattern.compile("\"packets_total\": (\\d+)").matcher(json);
        assertTrue(total.find());
        try (ptfence.packet.TraceSource src = ptfence.packet.TraceSource.open(trace)) {
            ptfence.packet.PacketCursor c = new ptfence.packet.PacketCursor(src);
            assertTrue(c.syncForward());
            assertEquals(Long.parseLong(total.group(1)), c.skipAll());
        }

        String reference = Files.readString(bench.resolve("REFERENCE.md"));
        Matcher row = Pattern.compile("\\| `ptdump " + Pattern.quote(name) + "` \\| (\\d+) \\| ([0-9a-f]{64}) \\|")
                .matcher(reference);
        assertTrue(row.find(), "no reference row for " + name);

        MessageDigest md = MessageDigest.getInstance("SHA-256");
        long[] lines = {0};
        PacketsCommand cmd = new PacketsCommand();
        cmd.stdout = new OutputStream() {
            @Override
            public void write(int b) {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                md.update(b, off, len);
                for (int i = off; i < off + len; i++) {
                    if (b[i] == '\n') {
                        lines[0]++;
                    }
                }
            }
        };
        int code = new picocli.CommandLine(cmd).execute(trace.toString());
        assertEquals(0, code);
        assertEquals(Long.parseLong(row.group(1)), lines[0], "line count");
        assertEquals(row.group(2), HexFormat.of().formatHex(md.digest()), "sha256 of the ptdump output");
    }
}

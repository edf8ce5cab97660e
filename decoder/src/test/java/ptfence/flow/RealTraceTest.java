package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;
import ptfence.ptdecode.FlowCommand;

/**
 * Real traces recorded on Intel hardware (DynamoRIO's drpt2trace tests, Skylake-SP): the instruction
 * address sequence must equal libipt's (expected/insns*.txt, made by tools/ptinsn over libipt 2.0.5).
 */
class RealTraceTest {
    static Path dir(String sub) {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path d = Path.of(shared, "real", "dynamorio_drpt2trace", sub);
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(d), "no real trace at " + d);
        return d;
    }

    /** The "I <ip> ..." lines of a ptinsn listing, as ptxed-style 16-digit addresses. */
    static List<String> expectedInsns(Path d) throws IOException, InterruptedException {
        List<String> lines;
        Path plain = d.resolve("expected/insns.txt");
        if (Files.exists(plain)) {
            lines = Files.readAllLines(plain);
        } else {
            Path xz = d.resolve("expected/insns.txt.xz");
            Process p;
            try {
                p = new ProcessBuilder("xz", "-dc", xz.toString()).redirectErrorStream(false).start();
            } catch (IOException e) {
                Assumptions.assumeTrue(false, "xz is needed to read " + xz);
                return List.of();
            }
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            assertEquals(0, p.waitFor(), "xz -dc " + xz);
            lines = text.lines().toList();
        }
        List<String> out = new ArrayList<>();
        for (String l : lines) {
            if (l.startsWith("I ")) {
                out.add(String.format("%016x", Long.parseUnsignedLong(l.split(" ")[1], 16)));
            }
        }
        return out;
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
        "test_simple.raw, --insn-decoder, 8",
        "test_simple.raw, --block-decoder, 8",
        "test_simple.tracedir_2022-07-06, --insn-decoder, 59234",
        "test_simple.tracedir_2022-07-06, --block-decoder, 59234",
    })
    void instructionSequenceEqualsLibipt(String sub, String decoder, int count) throws Exception {
        Path d = dir(sub);
        FlowCommand cmd = new FlowCommand();
        new CommandLine(cmd).parseArgs(decoder, "--elf", d.resolve("hello").toString(), "--cpu", "6/85/4",
                "--mtc-freq", "3", "--nom-freq", "37", "--cpuid-0x15.eax", "2", "--cpuid-0x15.ebx", "308",
                "--pt", d.resolve("pt.bin").toString());
        StringWriter sw = new StringWriter();
        try (PrintWriter pw = new PrintWriter(sw)) {
            cmd.decode(pw);
        }
        List<String> got = sw.toString().lines().filter(l -> l.matches("[0-9a-f]{16}")).toList();
        List<String> errors = sw.toString().lines().filter(l -> l.contains("error")).toList();
        assertEquals(List.of(), errors);
        assertEquals(count, got.size());
        assertEquals(expectedInsns(d), got);
    }
}

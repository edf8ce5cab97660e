package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Tool;

/**
 * Where a recording comes from, as with perf script: no argument reads ./perf.data (where ptrec and perf record write),
 * and "-" reads a pipe-mode recording from stdin ({@code perf record -o - ... | ptdecode -}).
 */
class RecordingInputTest {
    @Test
    void withoutARecordingItDecodesPerfDataInTheWorkingDirectory(@TempDir Path tmp) throws Exception {
        Path d = RecordingPacketsTest.hase("loopy-20180514T145114");
        Files.copy(d.resolve("perf.data.1"), tmp.resolve("perf.data"));
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode(tmp, new byte[0], "--sysroot",
                d.resolve("symfs").toString(), "--format", "jsonl");
        assertEquals(Tool.EXIT_OK, r.exit(), r.err());
        assertEquals(RecordingFlowTest.perfInstructions(d), RecordingFlowTest.instructions(r.out()),
                "perf script's instructions for the same perf.data");

        RecordingFlowTest.Run none = RecordingFlowTest.ptdecode(tmp.resolve("empty-dir-that-is-not-there"), new byte[0]);
        assertEquals(Tool.EXIT_BAD_INPUT, none.exit());
        assertTrue(none.err().contains("perf.data: no such file"), none.err());
    }

    /** perf's word before -i ('ptdecode script -i FILE', as a user of perf types it) is a one-line input error. */
    @Test
    void aPositionalBesideDashIIsNamedInOneLine() throws Exception {
        Path q = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14");
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode(Path.of(""), new byte[0], "script", "-i", q.toString(),
                "--itrace=e");
        assertEquals(Tool.EXIT_BAD_INPUT, r.exit(), r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().contains("unexpected argument 'script' (one RECORDING;"), r.err());
    }

    @Test
    void dashReadsAPipeModeRecordingFromStdinAsTheFileDecodes() throws Exception {
        Path q = RecordingRecoveryTest.quipper().resolve("perf.data.piped.intel_pt-4.14");
        RecordingFlowTest.Run file = RecordingFlowTest.ptdecode(Path.of(""), new byte[0], "--format", "jsonl", q.toString());
        RecordingFlowTest.Run pipe = RecordingFlowTest.ptdecode(Path.of(""), Files.readAllBytes(q), "--format", "jsonl", "-");
        assertEquals(Tool.EXIT_OK, pipe.exit(), pipe.err());
        assertTrue(file.out().lines().count() > 100, "a trivial decode");
        assertEquals(file.out(), pipe.out());
        // the same reports, though CPUs decode in parallel: their order, and which address of a page without code
        // is named first, may differ
        assertEquals(pages(file.err()), pages(pipe.err()));
    }

    private static List<String> pages(String err) {
        return err.lines().map(l -> l.replaceAll("(0x[0-9a-f]+)[0-9a-f]{3}\\b", "$1xxx")).sorted().toList();
    }
}

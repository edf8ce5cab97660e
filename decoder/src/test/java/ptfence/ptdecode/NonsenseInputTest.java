package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Tool;

/**
 * Issue 20: nonsense was silent success (nothing printed, exit 0), and some bad input was an internal error (exit 70)
 * or got a message that blamed the wrong thing. Each case is one line that says what is wrong where; a filter that
 * matches nothing says so on stderr. The recording is HASE's real loopy perf.data.
 */
class NonsenseInputTest {
    private static final Path HASE = RecordingPacketsTest.hase("loopy-20180404T162955");
    private static final Path REC = HASE.resolve("loopy-20180404T162955.perf");

    private static byte[] random(int n) {
        byte[] b = new byte[n];
        new Random(20).nextBytes(b);
        return b;
    }

    private static void oneLine(RecordingFlowTest.Run r, String says) {
        assertEquals(Tool.EXIT_BAD_INPUT, r.exit(), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().contains(says), r.err());
    }

    @Test
    void packetsOfAFileWithoutPsbSaysSo(@TempDir Path tmp) throws Exception {
        Path bin = tmp.resolve("random.bin");
        Files.write(bin, random(100_000));
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode("packets", bin.toString());
        oneLine(r, bin + ": no PSB in its 100000 bytes: not an Intel PT trace");
        assertEquals("", r.out());
    }

    // 'packets -' with a raw trace said "not a perf.data file": packets reads raw traces, so stdin may hold one
    @Test
    void packetsReadsARawTraceFromStdin() throws Exception {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path pt = Path.of(shared, "corpus", "libipt", "loop-tnt", "loop-tnt.pt");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isRegularFile(pt), "missing " + pt);
        RecordingFlowTest.Run file = RecordingFlowTest.ptdecode("packets", pt.toString());
        assertEquals(0, file.exit(), file.err());
        RecordingFlowTest.Run stdin = RecordingFlowTest.ptdecode(Path.of(""), Files.readAllBytes(pt), "packets", "-");
        assertEquals(0, stdin.exit(), stdin.err());
        assertEquals(file.out(), stdin.out());
        assertTrue(file.out().lines().count() > 5, file.out());
        oneLine(RecordingFlowTest.ptdecode(Path.of(""), random(5000), "packets", "-"), "stdin: no PSB in its 5000 "
                + "bytes");
        // and a recording on stdin is still one
        RecordingFlowTest.Run rec = RecordingFlowTest.ptdecode(Path.of(""), Files.readAllBytes(REC), "packets", "-");
        assertEquals(0, rec.exit(), rec.err());
        assertEquals(RecordingFlowTest.ptdecode("packets", REC.toString()).out(), rec.out());
    }

    @Test
    void aThreadFilterThatMatchesNothingSaysSo() {
        RecordingFlowTest.Run pid = RecordingFlowTest.ptdecode("--pid", "1", REC.toString());
        assertEquals(0, pid.exit(), "perf script prints nothing and succeeds here too: " + pid.err());
        assertEquals("", pid.out());
        assertEquals("ptdecode: --pid 1: no thread of the recording matches (it has pid/tid 19233/19233 "
                + ".perf-wrapped/loopy)\n", pid.err());
        RecordingFlowTest.Run comm = RecordingFlowTest.ptdecode("--comm", "nosuch", REC.toString());
        assertTrue(comm.err().contains("--comm nosuch: no thread of the recording matches"), comm.err());
        RecordingFlowTest.Run match = RecordingFlowTest.ptdecode("--comm", "loopy", REC.toString());
        assertEquals(0, match.exit());
        assertFalse(match.err().contains("matches"), match.err());
        assertTrue(match.out().lines().count() > 50);
    }

    @Test
    void aSysrootThatIsNotThereIsAnError() {
        oneLine(RecordingFlowTest.ptdecode("--sysroot", "/nope", REC.toString()), "--sysroot /nope: no such directory");
    }

    // exit 70 ("internal error") for a wrong file given to an option
    @Test
    void aWrongFileForAnOptionIsBadInputNotAnInternalError(@TempDir Path tmp) throws Exception {
        Path bin = tmp.resolve("random.bin");
        Files.write(bin, random(4096));
        oneLine(RecordingFlowTest.ptdecode("--kallsyms", bin.toString(), REC.toString()),
                bin + ": not a kallsyms file");
        // but an empty one says "no kernel symbols", as --kallsyms=/dev/null does for perf
        RecordingFlowTest.Run none = RecordingFlowTest.ptdecode("--kallsyms", "/dev/null", REC.toString());
        assertEquals(0, none.exit(), none.err());
        assertTrue(none.out().lines().count() > 50);
        oneLine(RecordingFlowTest.ptdecode("flow", "--elf", tmp.toString(), "--pt", bin.toString()),
                "--elf " + tmp + ": is a directory, not a file");
        oneLine(RecordingFlowTest.ptdecode("flow", "--raw", tmp + ":0x1000", "--pt", bin.toString()),
                "--raw " + tmp + ": is a directory, not a file");
    }
}

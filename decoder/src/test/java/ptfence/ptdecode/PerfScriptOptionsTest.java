package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import ptfence.ptdecode.RecordingFlowTest.Run;

/**
 * perf script's command line on ptdecode, where it is not about the lines (those are PerfScriptParityTest's, against
 * perf 6.1): an option ptdecode does not do yet is refused with one line naming it (never dropped in silence), -C of
 * a CPU the recording has no trace of prints nothing and exits 0 as perf script does, and ptdecode's own -v stays
 * ptdecode's.
 */
class PerfScriptOptionsTest {
    private static Path dir() {
        return RecordingPacketsTest.hase("control_flow-20180404T163033");
    }

    private static Path recording() {
        return dir().resolve("control_flow__control_flow-20180404T163033.perf");
    }

    private static String symfs() {
        return "--symfs=" + dir().resolve("symfs");
    }

    @ParameterizedTest
    @ValueSource(strings = {"--graph-function=main"})
    void anOptionNotDoneYetIsRefusedWithOneLineNamingIt(String option) {
        Run r = RecordingFlowTest.ptdecode("-i", recording().toString(), "--itrace=i1i", option);
        assertEquals(2, r.exit(), r.err());
        assertEquals("", r.out());
        String name = option.replaceFirst("=.*", "");
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().startsWith("ptdecode: " + name + ": not done yet"), r.err());
    }

    @Test
    void helpAfterAnOptionThatTakesAValueIsHelp() {
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        int rc = ptfence.cli.Tool.run("ptdecode", new PtdecodeCommand(), new java.io.PrintWriter(out),
                new java.io.PrintWriter(err), "--func", "--help");
        assertEquals(0, rc, err.toString());
        assertTrue(out.toString().contains("--func"), out.toString());
        assertEquals("", err.toString());
    }

    @Test
    void aCpuWithoutTraceSelectsNothingAsInPerf() {
        // the recording traced CPU 1 only: perf script -C 0 prints nothing and exits 0
        Run r = RecordingFlowTest.ptdecode("-i", recording().toString(), "--itrace=i1i", "-C", "0");
        assertEquals(0, r.exit(), r.err());
        assertEquals("", r.out());
        assertTrue(r.err().contains("no Intel PT trace of CPU 0"), r.err());
        // ptdecode's own listing keeps the error: a typo in -C must not look like an empty trace
        Run own = RecordingFlowTest.ptdecode(recording().toString(), "-C", "0");
        assertEquals(2, own.exit(), own.err());
    }

    @Test
    void verboseIsPtdecodesWithPerfsOptionsToo() {
        Run once = RecordingFlowTest.ptdecode("-i", recording().toString(), symfs(), "--itrace=i1i", "-v");
        Run twice = RecordingFlowTest.ptdecode("-i", recording().toString(), symfs(), "--itrace=i1i", "-vv");
        assertEquals(0, once.exit(), once.err());
        assertEquals(0, twice.exit(), twice.err());
        assertEquals(1092, once.out().lines().count());
        assertEquals(once.out(), twice.out());
    }
}

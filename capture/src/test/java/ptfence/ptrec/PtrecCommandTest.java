package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import ptfence.cli.BadInputException;

/** ptrec's command line: bad input is one line and exit 2; -m in perf's forms. */
class PtrecCommandTest {
    static PtrecJvm.Result ptrec(String... args) {
        List<String> cmd = PtrecJvm.ptrecJava();
        cmd.addAll(List.of(args));
        return PtrecJvm.run(cmd);
    }

    @Test
    void noIntelPtIsOneLineAndExit2() {
        if (Files.isDirectory(Path.of("/sys/bus/event_source/devices/intel_pt"))) return; // an Intel host: records
        PtrecJvm.Result r = ptrec("-a", "-o", "/dev/null", "--no-fence");
        assertEquals(2, r.exit());
        // issue 20: and what still works without it
        assertEquals("ptrec: no intel_pt PMU in /sys/bus/event_source/devices: this CPU or VM does not expose Intel PT; "
                + "--sideband-only still records the sideband (tasks, mappings, BPF events) and runs the text fence, "
                + "without the trace\n", r.err());
    }

    @Test
    void targetsAreRequiredAndExclusive() {
        PtrecJvm.Result r = ptrec("--sideband-only");
        assertEquals(2, r.exit());
        assertEquals("ptrec: nothing to trace: give -a, -C CPUS, -p PID or -- CMD ARGS\n", r.err());
        r = ptrec("--sideband-only", "-a", "-C", "0");
        assertEquals(2, r.exit());
        assertEquals("ptrec: give -a or -C CPUS, not both\n", r.err());
        r = ptrec("--sideband-only", "-p", "1", "--", "true");
        assertEquals(2, r.exit());
        assertEquals("ptrec: -p PID traces one task: drop -a, -C and the command\n", r.err());
        r = ptrec("--sideband-only", "-C", "0-9999");
        assertEquals(2, r.exit());
        assertTrue(r.err().matches("ptrec: -C: CPU \\d+ is not online \\(online: [0-9,-]+\\)\n"), r.err());
        r = ptrec("--sideband-only", "-a", "--filter", "filter 0x1000/0x10");
        assertEquals(2, r.exit());
        assertEquals("ptrec: --filter needs the PT stream; drop --sideband-only\n", r.err());
        r = ptrec("--bogus");
        assertEquals(2, r.exit());
    }

    @Test
    void aMissingCommandIsNamedBeforeAnythingStarts() {
        // checked before the archive, the events or the output are touched (fixtures' PtrecLiveTest checks what is left)
        PtrecJvm.Result r = ptrec("--sideband-only", "--no-fence", "-o", "/nonexistent-dir/x", "--",
                "/nonexistent/cmd");
        assertEquals(2, r.exit());
        assertEquals("ptrec: /nonexistent/cmd: command not found\n", r.err());
        r = ptrec("--sideband-only", "--no-fence", "--", "/etc");
        assertEquals(2, r.exit());
        assertEquals("ptrec: /etc: not an executable file\n", r.err());
    }

    @Test
    void noFenceWithAnArchiveIsRefused() throws Exception {
        Path archive = Files.createTempDirectory("ptrec-cmd-test").resolve("archive");
        PtrecJvm.Result r = ptrec("--sideband-only", "-a", "--no-fence", "--archive", archive.toString(),
                "-o", "/nonexistent-dir/x");
        assertEquals(2, r.exit());
        assertEquals("ptrec: --archive " + archive + ": --no-fence archives nothing; drop one of the two\n", r.err());
        assertFalse(Files.exists(archive));
        Files.delete(archive.getParent());
    }

    @Test
    void clockIsPerfOrMonotonicAndPtNeedsPerfs() {
        PtrecJvm.Result r = ptrec("--sideband-only", "-a", "--clock", "tai");
        assertEquals(2, r.exit());
        assertEquals("ptrec: --clock tai: give perf or monotonic\n", r.err());
        r = ptrec("-a", "--clock", "monotonic");
        assertEquals(2, r.exit());
        assertEquals("ptrec: --clock monotonic: intel_pt needs perf's clock; drop --clock or add --sideband-only\n",
                r.err());
        String help = ptrec("--help").out();
        assertTrue(help.contains("--sideband-only"), help);
        assertFalse(help.contains("--clock"), "an expert switch: not on the help page");
        // perf's -m N sizes the data ring: say that ptrec's is the AUX area
        String m = help.substring(help.indexOf("-m, --mmap-pages"), help.indexOf("-S, --snapshot"));
        assertTrue(m.replaceAll("\\s+", " ").contains("Unlike perf record, whose -m N sizes the data ring (and -m ,N the AUX area), ptrec's -m N is the AUX area"), m);
    }

    @Test
    void auxSizeInPerfForms() {
        assertEquals(1024, PtrecCommand.auxPages("4M", false));
        assertEquals(1024, PtrecCommand.auxPages(",4M", false));
        assertEquals(16, PtrecCommand.auxPages("16", false));
        assertEquals(2, PtrecCommand.auxPages("8K", false));
        assertEquals(1, PtrecCommand.auxPages("4K", true));
        assertThrows(BadInputException.class, () -> PtrecCommand.auxPages("4K", false));
        assertThrows(BadInputException.class, () -> PtrecCommand.auxPages("3M", false));
        assertThrows(BadInputException.class, () -> PtrecCommand.auxPages("lots", false));
    }
}

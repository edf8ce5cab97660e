package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.ptdecode.RecordingFlowTest.Run;

/**
 * Issue 31, items 12 and 13: an input that exists but is not a regular file is named for what it is (a character
 * device is not "no such file"); a FIFO is read as a stream, as stdin is, and decodes as the file does; perf
 * script's {@code -F} takes values that start with '-' in each of perf's spellings; {@code --symfs FILE} names
 * --symfs and says the path is not a directory.
 */
class InputKindTest {
    @TempDir
    Path tmp;

    private static Path hase() {
        return RecordingPacketsTest.hase("control_flow-20180404T163033");
    }

    private static Path recording() {
        return hase().resolve("control_flow__control_flow-20180404T163033.perf");
    }

    @Test
    void aCharacterDeviceIsNamedForWhatItIs() {
        for (String[] args : new String[][] {{"-i", "/dev/zero"}, {"/dev/zero"}, {"-i", "/dev/null", "-F", "ip"}}) {
            Run r = RecordingFlowTest.ptdecode(args);
            assertEquals(2, r.exit(), r.err());
            String dev = args[args[0].equals("-i") ? 1 : 0];
            assertEquals("ptdecode: " + dev + ": a character device, not a perf.data file (ptdecode reads a perf.data "
                    + "file, or a recording streamed through a FIFO or stdin)", r.err().strip());
        }
        Run missing = RecordingFlowTest.ptdecode("-i", tmp.resolve("absent").toString());
        assertEquals(2, missing.exit());
        assertEquals("ptdecode: " + tmp.resolve("absent") + ": no such file", missing.err().strip());
    }

    @Test
    void aFifoIsReadAsAStreamAndDecodesAsTheFile() throws Exception {
        Path q = RecordingRecoveryTest.quipper().resolve("perf.data.piped.intel_pt-4.14");
        Path fifo = tmp.resolve("fifo");
        Process mk = new ProcessBuilder("mkfifo", fifo.toString()).start();
        Assumptions.assumeTrue(mk.waitFor(30, TimeUnit.SECONDS) && mk.exitValue() == 0, "mkfifo (coreutils)");
        Thread writer = new Thread(() -> {
            try {
                Files.write(fifo, Files.readAllBytes(q)); // blocks until ptdecode opens the FIFO
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        writer.setDaemon(true);
        writer.start();
        Run viaFifo = RecordingFlowTest.ptdecode("--format", "jsonl", fifo.toString());
        writer.join(30_000);
        Run file = RecordingFlowTest.ptdecode("--format", "jsonl", q.toString());
        assertEquals(0, viaFifo.exit(), viaFifo.err());
        assertTrue(file.out().lines().count() > 100, "a trivial decode");
        assertEquals(file.out(), viaFifo.out());
    }

    @Test
    void fieldsStartingWithMinusAreTakenInEachOfPerfsSpellings() throws Exception {
        String rec = recording().toString();
        String symfs = "--symfs=" + hase().resolve("symfs");
        Run dflt = RecordingFlowTest.ptdecode("-i", rec, symfs, "--itrace=i1i");
        assertEquals(0, dflt.exit(), dflt.err());
        Run spaced = RecordingFlowTest.ptdecode("-i", rec, symfs, "--itrace=i1i", "-F", "-ip");
        Run equals = RecordingFlowTest.ptdecode("-i", rec, symfs, "--itrace=i1i", "--fields=-ip");
        Run attached = RecordingFlowTest.ptdecode("-i", rec, symfs, "--itrace=i1i", "-F-ip");
        for (Run r : new Run[] {spaced, equals, attached}) {
            assertEquals(0, r.exit(), r.err());
            assertEquals(spaced.out(), r.out());
        }
        assertEquals(dflt.out().lines().count(), spaced.out().lines().count());
        assertTrue(dflt.out().contains(" 400202 _start+0x0 "), "the default has the ip and sym");
        assertFalse(spaced.out().contains("400202"), "-ip removes the ip (and the sym, which perf prints with it)");
        Run both = RecordingFlowTest.ptdecode("-i", rec, symfs, "--itrace=i1i", "-F-ip,+addr");
        Run bothSpaced = RecordingFlowTest.ptdecode("-i", rec, symfs, "--itrace=i1i", "-F", "-ip,+addr");
        assertEquals(0, both.exit(), both.err());
        assertEquals(bothSpaced.out(), both.out());
        // what perf 6.1 prints for the same command lines, where perf is here
        String perfMinus = perf("script", "-i", rec, symfs, "--itrace=i1i", "-F", "-ip");
        if (perfMinus != null) {
            assertEquals(perfMinus, spaced.out(), "perf script -F -ip");
            assertEquals(perf("script", "-i", rec, symfs, "--itrace=i1i", "-F-ip,+addr"), both.out(),
                    "perf script -F-ip,+addr");
        }
    }

    @Test
    void symfsOfAFileNamesSymfsAndSaysNotADirectory() {
        Run r = RecordingFlowTest.ptdecode("-i", recording().toString(), "--symfs", "/etc/passwd", "--itrace=i1i");
        assertEquals(2, r.exit(), r.err());
        assertEquals("ptdecode: --symfs /etc/passwd: not a directory (a file)", r.err().strip());
        Run s = RecordingFlowTest.ptdecode("--sysroot", "/etc/passwd", recording().toString());
        assertEquals("ptdecode: --sysroot /etc/passwd: not a directory (a file)", s.err().strip());
        Run none = RecordingFlowTest.ptdecode("--symfs", tmp.resolve("none").toString(), recording().toString());
        assertEquals("ptdecode: --symfs " + tmp.resolve("none") + ": no such directory", none.err().strip());
    }

    /** perf's stdout, or null when perf is not here or fails. */
    static String perf(String... args) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(new java.util.ArrayList<>(java.util.List.of("perf")));
        pb.command().addAll(java.util.List.of(args));
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        Process p;
        try {
            p = pb.start();
        } catch (java.io.IOException e) {
            return null;
        }
        String out = new String(p.getInputStream().readAllBytes());
        return p.waitFor() == 0 ? out : null;
    }
}

package ptfence.perfdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A writer in another JVM, SIGKILLed while it writes: the file holds every record up to its last flush, in order,
 * and (when perf is installed) perf reads it.
 */
class KilledWriterTest {
    @TempDir
    Path dir;

    /** The record the writer writes n-th. */
    static PerfRecord nth(long n) {
        SampleId s = Samples.sid(Samples.SID_LAYOUT, (int) (n & 3), 1_000_000L + n, 3);
        return n % 3 == 0 ? new PerfRecord.Ksymbol(0, 0xffffffffc0000000L + n * 64, 64, 1, 0, "bpf_prog_" + n, s)
                : new PerfRecord.SwitchCpuWide(PerfRecord.MISC_SWITCH_OUT, (int) n, (int) n, s);
    }

    /** The child: writes records forever, flushing every 1000 and saying so on stdout. */
    public static void main(String[] args) throws Exception {
        EventAttr pt = Samples.ptAttr();
        EventAttr sb = Samples.sidebandAttr(Samples.PT_SAMPLE_TYPE);
        PerfDataWriter w = PerfDataWriter.create(Path.of(args[0]),
                List.of(new AttrIds(pt, List.of(1L, 2L)), new AttrIds(sb, List.of(3L, 4L))));
        w.setFeature(new Feature.Text(Feature.HOSTNAME, "killed"));
        for (long n = 0; ; n++) {
            w.write(nth(n));
            if (n % 1000 == 999) {
                w.flush();
                System.out.println("flushed " + (n + 1));
                System.out.flush();
            }
        }
    }

    @Test
    void aSigkilledWriterLeavesEveryRecordUpToItsLastFlush() throws Exception {
        Path p = dir.resolve("killed.perf");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                KilledWriterTest.class.getName(), p.toString()).redirectErrorStream(true).start();
        long flushed = 0;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                if (line.startsWith("flushed ")) {
                    flushed = Long.parseLong(line.substring(8));
                    if (flushed >= 20_000) {
                        break;
                    }
                }
            }
            child.destroyForcibly(); // SIGKILL, mid-write
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
        }
        assertTrue(flushed >= 20_000, "the child flushed");
        try (PerfDataFile f = PerfDataFile.open(p)) {
            long n = 0;
            for (PerfRecord rec : (Iterable<PerfRecord>) f.stream()::iterator) {
                assertEquals(nth(n), rec, "record " + n);
                n++;
            }
            assertTrue(n >= flushed, n + " records, at least the " + flushed + " flushed");
            assertEquals(0, n % 1000, "exactly the records of a flush");
        }
        PerfToolTest.Run run = PerfToolTest.perf(dir, "report", "-D", "-i", p.toString());
        assertEquals(0, run.exit(), run.err());
        assertTrue(run.out().contains("Aggregated stats"));
    }
}

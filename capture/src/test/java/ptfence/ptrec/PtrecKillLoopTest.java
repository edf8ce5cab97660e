package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ptrec SIGKILLed at random moments of its run, from the moment its perf.data appears (header, attrs, nothing else
 * yet) through its first flushes: every file it leaves is one perf reads, as perf record's own files are after their
 * header is written ({@code perf report --header-only} and {@code perf script} both exit 0). Root (system-wide
 * sideband events) and perf are needed.
 */
class PtrecKillLoopTest {
    static final int ROUNDS = 30;

    @TempDir
    Path dir;

    @BeforeAll
    static void requirements() {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
                "needs root: perf_event_open system-wide");
        Assumptions.assumeTrue(PtrecLiveTest.run(List.of("perf", "--version")).exit() == 0,
                "needs perf (Debian linux-perf) as the reference reader");
    }

    @Test
    void sigkillAtAnyMomentLeavesAFilePerfReads() throws Exception {
        Random rnd = new Random(Long.getLong("ptfence.seed", System.nanoTime()));
        Path archive = dir.resolve("archive");
        int landed = 0, read = 0;
        List<String> failures = new ArrayList<>();
        long[] delays = new long[ROUNDS];
        for (int round = 0; round < ROUNDS; round++) {
            Path data = dir.resolve("kill" + round + ".data");
            // the fence in some rounds (its start is the slow part; the writer is the same either way)
            // java.io.tmpdir in the test's directory: lmdbjava extracts its library there, and a killed JVM leaves it
            List<String> cmd = PtrecLiveTest.ptrecJava("-Djava.io.tmpdir=" + dir);
            cmd.addAll(List.of("--sideband-only", "-a", "--flush-interval", "100", "-o", data.toString()));
            cmd.addAll(round % 3 == 0 ? List.of("--archive", archive.toString()) : List.of("--no-fence"));
            Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            try {
                for (int i = 0; i < 24_000 && !Files.exists(data) && p.isAlive(); i++) {
                    Thread.sleep(5);
                }
                assertTrue(Files.exists(data) && p.isAlive(), "round " + round + ": ptrec did not start");
                // a third of the kills within the first 20 ms (before the first flush), the rest over 0.6 s
                delays[round] = round % 3 == 1 ? rnd.nextInt(20) : rnd.nextInt(600);
                Thread.sleep(delays[round]);
                boolean alive = p.isAlive();
                PtrecLiveTest.signal(p, "KILL");
                assertTrue(p.waitFor(60, TimeUnit.SECONDS));
                if (alive && p.exitValue() == 137) {
                    landed++; // running when the kill came, and ended by it
                }
            } finally {
                p.destroyForcibly();
            }
            PtrecLiveTest.Result header = PtrecLiveTest.run(List.of("perf", "report", "--header-only", "-i",
                    data.toString()));
            PtrecLiveTest.Result script = PtrecLiveTest.run(List.of("perf", "script", "-i", data.toString()));
            if (header.exit() == 0 && script.exit() == 0) {
                read++;
            } else {
                failures.add("round " + round + " (killed " + delays[round] + " ms after the file appeared, "
                        + Files.size(data) + " bytes): header-only " + header.exit() + ", script " + script.exit()
                        + ": " + (script.err() + header.err()).strip().replace('\n', ' '));
            }
        }
        System.out.printf("ptrec SIGKILL: %d/%d read by perf (header-only and script), kill landed mid-run %d/%d%n",
                read, ROUNDS, landed, ROUNDS);
        assertEquals(ROUNDS, landed, "every kill landed while ptrec ran");
        assertEquals(List.of(), failures);
    }
}

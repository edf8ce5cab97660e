package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;

/**
 * Issue 12: a script's {@code ptrec ... &} is started by a non-interactive shell with SIGINT ignored, and HotSpot
 * keeps an inherited SIG_IGN; ptrec must stop on {@code kill -INT} anyway, promptly, with its summary, having
 * archived everything, as perf record does. Started exactly that way (bash -c '... & wait') around a churn of
 * 1000 BPF programs.
 */
class PtrecBackgroundSigintTest {
    private static final int N = 1000;
    private static final long SIGINT = 1L << 1; // bit (2 - 1) of the /proc/PID/status masks
    private static final Pattern LOSSES = Pattern.compile("losses=(\\d+)");

    @TempDir
    Path dir;

    @BeforeAll
    static void requirements() {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
                "needs root: the fence loads BPF programs and perf_event_open runs system-wide");
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/bin/bash")), "needs bash to start ptrec as a script does");
    }

    @Test
    void backgroundPtrecStopsOnSigintWithEverythingArchived() throws Exception {
        Path data = dir.resolve("bg.data"), archive = dir.resolve("archive");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of("/bin/bash", "-c",
                // a sibling background job shows the mask the shell gives them; then ptrec, its pid, and wait
                "grep '^SigIgn:' /proc/self/status & wait $!; \"$@\" & echo \"pid $!\"; wait $!", "bash",
                java, "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), "ptfence.ptrec.PtrecCommand",
                "--sideband-only", "-a", "-v", "-o", data.toString(), "--archive", archive.toString()));
        Process shell = new ProcessBuilder(cmd).start();
        StringBuffer log = new StringBuffer();
        CountDownLatch recording = new CountDownLatch(1);
        Thread drainer = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(shell.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    log.append(line).append('\n');
                    if (line.startsWith("ptrec: recording ")) recording.countDown();
                }
            } catch (IOException ignored) {
                // the shell is gone
            }
            recording.countDown();
        });
        drainer.setDaemon(true);
        drainer.start();
        long pid = -1;
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(shell.getInputStream(), StandardCharsets.UTF_8));
            String sibling = out.readLine(), pidLine = out.readLine();
            assertTrue(sibling != null && sibling.startsWith("SigIgn:"), "no sibling mask: " + sibling + "; " + log);
            assertTrue((Long.parseLong(sibling.substring(7).trim(), 16) & SIGINT) != 0,
                    "the shell did not start its background jobs with SIGINT ignored (" + sibling + "): "
                    + "the condition under test is not reproduced");
            assertTrue(pidLine != null && pidLine.startsWith("pid "), pidLine);
            pid = Long.parseLong(pidLine.substring(4));
            assertTrue(recording.await(120, TimeUnit.SECONDS) && shell.isAlive(), "ptrec did not start: " + log);
            String status = Files.readString(Path.of("/proc/" + pid + "/status"));
            long ign = mask(status, "SigIgn"), cgt = mask(status, "SigCgt");

            String prefix = "bg" + (System.nanoTime() % 1000) + "_";
            Process churn = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "ptfence.fence.Churn",
                    Integer.toString(N), prefix, "800000").redirectErrorStream(true).start();
            String churnOut = new String(churn.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(churn.waitFor(120, TimeUnit.SECONDS) && churn.exitValue() == 0, "churn failed: " + churnOut);

            long t0 = System.nanoTime();
            assertEquals(0, new ProcessBuilder("kill", "-INT", Long.toString(pid)).start().waitFor());
            boolean ended = shell.waitFor(30, TimeUnit.SECONDS);
            double seconds = (System.nanoTime() - t0) / 1e9;
            assertTrue(ended, String.format("ptrec (SigIgn %x, SigCgt %x) still runs %.1f s after SIGINT: %s",
                    ign, cgt, seconds, log));
            drainer.join(5000);
            System.out.printf("ptrec ended %.2f s after SIGINT (SigIgn %x SigCgt %x at start; churn %s ns)%n",
                    seconds, ign, cgt, churnOut.trim());
            assertTrue(seconds < 10, String.format("%.1f s from SIGINT to exit", seconds));
            assertEquals(0, ign & SIGINT, "ptrec kept the inherited SIG_IGN of SIGINT");
            assertEquals(0, shell.exitValue(), "ptrec's exit status: " + log);
            String err = log.toString();
            assertTrue(err.contains("[ ptrec: wrote " + data), "no summary: " + err);
            Matcher losses = LOSSES.matcher(err);
            assertTrue(losses.find() && losses.group(1).equals("0"), "fence losses: " + err);
            try (Archive a = Archive.open(archive)) {
                List<Region> ours = a.read(s -> RegionIndex.all(s,
                        r -> r.kind() == RegionKind.BPF_PROG && r.name().contains("_" + prefix)));
                assertEquals(N, ours.stream().map(Region::name).distinct().count(), "programs archived");
                List<Recording> recs = a.read(Recordings::all);
                assertEquals(1, recs.size());
                assertFalse(recs.get(0).endTime() == Recording.RUNNING, "recording not finished");
            }
        } finally {
            if (shell.isAlive() && pid > 0) new ProcessBuilder("kill", "-TERM", Long.toString(pid)).start().waitFor();
            if (!shell.waitFor(30, TimeUnit.SECONDS)) shell.destroyForcibly();
        }
    }

    private static long mask(String status, String field) {
        for (String line : status.split("\n")) {
            if (line.startsWith(field + ":")) return Long.parseLong(line.substring(field.length() + 1).trim(), 16);
        }
        return 0;
    }
}

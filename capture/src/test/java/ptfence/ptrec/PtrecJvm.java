package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

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

/**
 * ptrec as a child JVM of the test's JDK, from the module's class path: for its command-line checks
 * (PtrecCommandTest: errors before anything starts) and PtrecBench. The live tests run ptrec as users do, through the
 * release launcher (fixtures' ptfence.scenario.LivePtrec, issue 30), and use {@link #run} for the reference tools.
 */
public final class PtrecJvm {
    private PtrecJvm() {
    }

    /** A running ptrec and everything it has printed on stderr so far. */
    record Running(Process process, StringBuffer log) {
        String waitForLog() throws InterruptedException {
            process.waitFor(60, TimeUnit.SECONDS);
            Thread.sleep(100); // the drainer's last read
            return log.toString();
        }
    }

    /** Collects a process's stderr as it comes; {@code recording} opens when ptrec says so, or at the end. */
    public static StringBuffer collectStderr(Process p, CountDownLatch recording) {
        StringBuffer log = new StringBuffer();
        Thread drainer = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    log.append(line).append('\n');
                    if (line.startsWith("ptrec: recording ")) recording.countDown();
                }
            } catch (IOException ignored) {
                // the process is gone
            }
            recording.countDown();
        });
        drainer.setDaemon(true);
        drainer.start();
        return log;
    }

    /** Starts {@code ptrec --no-kernel-text ARGS}; returns once it says "recording" (its events are enabled). */
    static Running start(String... args) throws Exception {
        List<String> cmd = ptrecJava();
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        CountDownLatch recording = new CountDownLatch(1);
        StringBuffer log = collectStderr(p, recording);
        if (!recording.await(60, TimeUnit.SECONDS) || !p.isAlive()) {
            p.destroyForcibly();
            fail("ptrec did not start recording: " + log);
        }
        return new Running(p, log);
    }

    /** The command line that runs ptrec from the test class path; append ptrec's arguments. */
    static List<String> ptrecJava() {
        return new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), "ptfence.ptrec.PtrecCommand", "--no-kernel-text"));
    }

    static void signal(Process p, String sig) throws Exception {
        assertEquals(0, new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).start().waitFor());
    }

    /** What a process did: its exit status (-1: it could not run, or ran past 120 s), stdout and stderr. */
    public record Result(int exit, String out, String err) {}

    /** Runs {@code cmd} (stdin /dev/null) to its end, at most 120 s. */
    public static Result run(List<String> cmd) {
        try {
            Path out = Files.createTempFile("ptrec-test", ".out"), err = Files.createTempFile("ptrec-test", ".err");
            Process p = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.from(new java.io.File(
                    "/dev/null"))).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Result(-1, "", "timeout");
            }
            Result r = new Result(p.exitValue(), Files.readString(out), Files.readString(err));
            Files.delete(out);
            Files.delete(err);
            return r;
        } catch (IOException e) {
            return new Result(-1, "", e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, "", "interrupted");
        }
    }
}

package ptfence.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import ptfence.cli.JavaChild;

/**
 * Test helper: runs a main of this class path in a child JVM, in a chosen working directory (so a crash's
 * hs_err file can be looked for), with a time limit (a hang is killed and reported, never waited out).
 */
public final class ChildJvm {
    private ChildJvm() {}

    /** What the child did; {@code exit} is -1 when it was killed for running out of time. */
    public record Result(int exit, String out, String err, boolean timedOut, long millis) {
        public boolean crashed() {
            return !timedOut && (exit > 128 && exit <= 128 + 31
                    || (out + err).contains("A fatal error has been detected by the Java Runtime Environment"));
        }

        @Override
        public String toString() {
            return "exit " + exit + (timedOut ? " (timed out)" : "") + " after " + millis + " ms; stderr: " + err
                    + "; stdout: " + (out.length() > 400 ? out.substring(0, 400) + "..." : out);
        }
    }

    /** The command line starting a JVM like this one (same java, class path and the opens lmdbjava needs). */
    public static List<String> command(String mainClass, String... args) {
        return new ArrayList<>(JavaChild.command(List.of("-Xmx256m"), mainClass, List.of(args)));
    }

    public static Result run(Path cwd, Duration timeout, Map<String, String> env, String mainClass, String... args)
            throws IOException, InterruptedException {
        Path out = Files.createTempFile("child-", ".out");
        Path err = Files.createTempFile("child-", ".err");
        try {
            ProcessBuilder pb = new ProcessBuilder(command(mainClass, args)).directory(cwd.toFile())
                    .redirectOutput(out.toFile()).redirectError(err.toFile());
            pb.environment().putAll(env);
            long t0 = System.nanoTime();
            Process p = pb.start();
            boolean done = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!done) {
                p.destroyForcibly().waitFor();
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            return new Result(done ? p.exitValue() : -1, Files.readString(out), Files.readString(err), !done, ms);
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /** Files a crashed JVM leaves in a directory. */
    public static List<Path> crashFiles(Path dir) throws IOException {
        try (var s = Files.list(dir)) {
            return s.filter(f -> f.getFileName().toString().startsWith("hs_err_pid")
                    || f.getFileName().toString().startsWith("core")).toList();
        }
    }
}

package ptfence.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 31, item 14: JVMs of a plain JDK (no release launcher, no lmdbjava.native.lib) that open an archive and are
 * killed with SIGKILL leave no {@code lmdbjava-native-library-*.so} in their temporary directory; they share one
 * copy of the library in the per-user cache. Each child has a temporary directory and a HOME of its own here, so
 * only what these children made is counted.
 */
class NativeLmdbTest {
    @TempDir
    Path work;

    /** Child main: opens (creates) an archive, says "open", waits to be killed. */
    public static final class OpenAndWait {
        public static void main(String[] args) throws Exception {
            try (Archive a = Archive.open(Path.of(args[0]))) {
                System.out.println("open " + System.getProperty(NativeLmdb.PROPERTY));
                System.out.flush();
                Thread.sleep(600_000);
            }
        }
    }

    @Test
    void killedJvmsLeaveNoExtractedLibraryInTmp() throws Exception {
        Path tmp = Files.createDirectories(work.resolve("tmp"));
        Path home = Files.createDirectories(work.resolve("home"));
        int rounds = 6;
        for (int i = 0; i < rounds; i++) {
            List<String> cmd = new java.util.ArrayList<>(ChildJvm.command(OpenAndWait.class.getName(),
                    work.resolve("archive").toString()));
            cmd.removeIf(a -> a.startsWith("-D" + NativeLmdb.PROPERTY + "=")); // as a plain JDK starts it
            cmd.add(1, "-Djava.io.tmpdir=" + tmp);
            cmd.add(1, "-Duser.home=" + home);
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD);
            pb.environment().remove("XDG_CACHE_HOME");
            pb.environment().put("HOME", home.toString());
            Process p = pb.start();
            String line = new BufferedReader(new InputStreamReader(p.getInputStream())).readLine();
            p.destroyForcibly(); // SIGKILL: no exit hooks, no deleteOnExit
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertTrue(line != null && line.startsWith("open "), "round " + i + ": " + line);
            assertEquals("open " + home.resolve(".cache/ptfence/native"), line.substring(0, line.lastIndexOf('/')),
                    "the library is loaded from the per-user cache");
        }
        try (Stream<Path> s = Files.list(tmp)) {
            assertEquals(List.of(), s.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("lmdbjava-native-library-")).toList(), "left in java.io.tmpdir");
        }
        try (Stream<Path> s = Files.list(home.resolve(".cache/ptfence/native"))) {
            assertEquals(1, s.filter(p -> p.getFileName().toString().matches("liblmdb-[0-9a-f]{16}\\.so")).count(),
                    "one copy, shared by every start");
        }
    }
}

package ptfence.insn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * JNA finds capstone without running {@code ldconfig -p} (issue 30: a child process at every disassembling start):
 * the directories {@link LibraryDirs} reads from ld.so.conf hold every library ldconfig's cache names, and a JVM that
 * disassembles execs nothing (strace), where JNA left alone does.
 */
class LibraryDirsTest {
    @TempDir
    Path dir;

    @Test
    void theConfiguredDirectoriesHoldEveryLibraryLdconfigKnows() throws Exception {
        Process p;
        try {
            p = new ProcessBuilder("/sbin/ldconfig", "-p").redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            Assumptions.abort("no /sbin/ldconfig to compare with: " + e.getMessage());
            return;
        }
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), out);
        Set<Path> ours = new TreeSet<>();
        for (String d : LibraryDirs.of(Path.of("/etc/ld.so.conf"))) {
            ours.add(Path.of(d).toRealPath());
        }
        List<String> missing = new ArrayList<>();
        int libs = 0;
        for (String line : out.lines().toList()) {
            int arrow = line.indexOf(" => ");
            if (arrow < 0) {
                continue;
            }
            libs++;
            Path lib = Path.of(line.substring(arrow + 4).strip());
            if (Files.exists(lib) && !ours.contains(lib.getParent().toRealPath())) {
                missing.add(lib.toString());
            }
        }
        assertTrue(libs > 10, out);
        assertEquals(List.of(), missing, "libraries ldconfig knows outside " + ours);
    }

    @Test
    void includesAreFollowedCommentsAndHwcapSkipped() throws Exception {
        Path d1 = Files.createDirectories(dir.resolve("one")), d2 = Files.createDirectories(dir.resolve("two"));
        Path d3 = Files.createDirectories(dir.resolve("three")), d4 = Files.createDirectories(dir.resolve("four"));
        Path conf = dir.resolve("ld.so.conf"), confD = Files.createDirectories(dir.resolve("conf.d"));
        Files.writeString(conf, "# top\n" + d1 + "  # trailing\ninclude conf.d/*.conf\nhwcap 0 nosegneg\n" + d4
                + "=libc6\ninclude " + conf + "\n");
        Files.writeString(confD.resolve("b.conf"), d3 + "\n");
        Files.writeString(confD.resolve("a.conf"), d2 + "/\n" + dir.resolve("absent") + "\n");
        Files.writeString(confD.resolve("c.txt"), dir.resolve("five") + "\n");
        List<String> got = LibraryDirs.of(conf);
        int at = got.indexOf(d1.toString());
        assertTrue(at >= 0, got.toString());
        assertEquals(List.of(d1.toString(), d2.toString(), d3.toString(), d4.toString()), got.subList(at, at + 4));
        assertFalse(got.contains(dir.resolve("absent").toString()) || got.contains(dir.resolve("five").toString()));
        assertTrue(got.contains("/usr/lib") || !Files.isDirectory(Path.of("/usr/lib")), got.toString());
    }

    @Test
    void aDisassemblingJvmExecsNothing() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/strace")), "needs strace (to see a child's exec)");
        // the check can fail: JNA left alone execs ldconfig
        assertTrue(execs("bare").stream().anyMatch(e -> e.contains("ldconfig")), "JNA alone ran no ldconfig: "
                + "the check below would prove nothing");
        List<String> execs = execs("decoder");
        assertEquals(1, execs.size(), "execs beside the JVM's own: " + execs);
    }

    /** The execve calls of a JVM running {@link LibraryDirsChild} {@code how} (its own first). */
    private List<String> execs(String how) throws Exception {
        Path log = dir.resolve(how + ".strace");
        Process p = new ProcessBuilder("/usr/bin/strace", "-f", "-qq", "-e", "trace=execve", "-o", log.toString(),
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                System.getProperty("java.class.path"), LibraryDirsChild.class.getName(), how).redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child JVM hangs");
        Assumptions.assumeFalse(out.contains("PTRACE_TRACEME") || out.contains("Operation not permitted"),
                "strace may not trace here: " + out);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("ok"), out);
        return Files.readAllLines(log).stream().filter(l -> l.contains("execve(") && !l.contains("= -1")).toList();
    }
}

package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 33 item 2, live: a process that maps its jitdump executable (as a JIT announces it) and has anonymous
 * executable memory with a /tmp/perf-PID.map; ptrec keeps both files beside the recording, byte for byte, with no
 * extra step (perf needs 'perf inject --jit').
 */
class JitFilesLiveTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirements() {
        PtrecLiveTest.requirements();
        Assumptions.assumeTrue(PtrecLiveTest.run(List.of("python3", "-c", "import mmap")).exit() == 0,
                "needs python3 (the test's JIT stand-in maps memory executable)");
    }

    @Test
    void keepsTheJitdumpAndPerfMapBesideTheRecording() throws Exception {
        Path jitDir = Files.createDirectories(dir.resolve("jit"));
        Path out = Files.createDirectories(dir.resolve("out"));
        byte[] dump = new byte[3000];
        new Random(33).nextBytes(dump);
        Path template = Files.write(dir.resolve("template"), dump);
        // the stand-in JIT: its jitdump mapped PROT_EXEC, anonymous executable memory, its perf map in /tmp
        String script = String.join("\n",
                "import mmap, os, shutil, sys",
                "pid = os.getpid()",
                "p = os.path.join(sys.argv[2], 'jit-%d.dump' % pid)",
                "shutil.copy(sys.argv[1], p)",
                "fd = os.open(p, os.O_RDONLY)",
                "m = mmap.mmap(fd, os.path.getsize(p), mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC)",
                "a = mmap.mmap(-1, 8192, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, "
                        + "mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)",
                "with open('/tmp/perf-%d.map' % pid, 'w') as f:",
                "    f.write('7f0000001000 40 LFoo;::bar\\n')",
                "print(pid)");
        Path py = Files.writeString(dir.resolve("jit.py"), script);
        Path data = out.resolve("rec.data");
        PtrecLiveTest.Result r = PtrecLiveTest.run(PtrecLiveTest.ptrecWith("--sideband-only", "--no-fence", "-v",
                "-o", data.toString(), "--", "python3", py.toString(), template.toString(), jitDir.toString()));
        Matcher m = Pattern.compile("(?m)^(\\d+)$").matcher(r.out());
        assertTrue(m.find(), "the child's pid: " + r.out() + r.err());
        int pid = Integer.parseInt(m.group(1));
        Path map = Path.of("/tmp/perf-" + pid + ".map");
        try {
            assertEquals(0, r.exit(), r.err());
            assertTrue(r.err().contains("kept jit-" + pid + ".dump, perf-" + pid + ".map beside " + data), r.err());
            assertArrayEquals(dump, Files.readAllBytes(out.resolve("jit-" + pid + ".dump")), "the jitdump, as written");
            assertArrayEquals(Files.readAllBytes(map), Files.readAllBytes(out.resolve("perf-" + pid + ".map")),
                    "the perf map, as written");
        } finally {
            Files.deleteIfExists(map);
        }
    }
}

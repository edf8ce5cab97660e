package ptfence.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Symbol ends against perf 6.1's own: perf's Python call chains (`perf script -s`, itrace=bepg) on HASE's loopy
 * recording give each function's start and end. Its last text symbol, the size-less label `exit`, ends for perf at
 * the next symbol perf loaded from the file (the `.data` label `msg`, in file-offset terms), not a page on.
 */
class SymbolsTailEndTest {
    private static final String SCRIPT = """
            def process_event(param_dict):
                for f in param_dict.get("callchain", []):
                    s = f.get("sym")
                    if s:
                        print("%s %d %d" % (s["name"], s["start"], s["end"]))
            """;

    @Test
    void everyFunctionOfPerfsCallChainsEndsWherePerfEndsIt(@TempDir Path tmp) throws Exception {
        Path dir = Path.of(System.getProperty("ptfence.data", "../fixtures/data"), "real", "hase",
                "loopy-20180514T145114");
        assertTrue(Files.isDirectory(dir), "missing " + dir);
        Path script = Files.writeString(tmp.resolve("ends.py"), SCRIPT);
        Process p;
        try {
            p = new ProcessBuilder("perf", "script", "-i", dir.resolve("perf.data.1").toString(), "--symfs",
                    dir.resolve("symfs").toString(), "--itrace=bepg", "-s", script.toString())
                    .redirectOutput(tmp.resolve("out").toFile()).redirectError(tmp.resolve("err").toFile()).start();
        } catch (IOException e) {
            Assumptions.abort("perf is not installed (" + e.getMessage() + ")");
            return;
        }
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "perf did not finish");
        String err = Files.readString(tmp.resolve("err"));
        Assumptions.assumeFalse(err.contains("Python scripting not supported"), "perf has no Python: " + err);
        assertEquals(0, p.exitValue(), err);
        List<String> lines = Files.readAllLines(tmp.resolve("out"));
        Elf elf = Elf.read(dir.resolve("loopy"));
        assertNotNull(elf);
        Symbols symbols = new Symbols().addElf(elf, 0);
        TreeSet<String> seen = new TreeSet<>();
        for (String l : lines) {
            String[] f = l.split(" ");
            if (f.length != 3 || !seen.add(l)) {
                continue;
            }
            long start = Long.parseLong(f[1]);
            long end = Long.parseLong(f[2]);
            long at = elf.vaddrOf(start); // perf's ends are file offsets for an ET_EXEC
            Symbols.Entry e = symbols.at(at);
            assertNotNull(e, l);
            assertEquals(f[0], e.name(), l);
            assertEquals(end - start, e.end() - e.start(), "the length of " + l);
        }
        assertTrue(seen.stream().anyMatch(s -> s.startsWith("exit ")), "perf's chains reach exit: " + seen);
        assertEquals(3, seen.size(), "perf's functions: " + seen);
    }
}

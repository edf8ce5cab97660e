package ptfence.ptarchive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import ptfence.cli.Tool;

/**
 * The ptarchive ls lines taken without picocli ({@link QuickLs}) leave ls and ptarchive exactly as picocli's parse of
 * the same line leaves them, every field of both (the mixin's included); every other line goes to picocli with the
 * command untouched.
 */
class QuickLsTest {
    @Test
    void takenLinesSetWhatPicocliSets() throws Exception {
        List<String[]> lines = List.of(
                new String[] {"ls"},
                new String[] {"--archive", "/a", "ls"},
                new String[] {"--archive=/a b", "ls", "--json"},
                new String[] {"ls", "--archive", "arch.d", "--recordings"},
                new String[] {"--archive", "/p", "ls", "--recordings", "--archive=/q", "--json"},
                new String[] {"ls", "--json", "--recordings"});
        for (String[] line : lines) {
            PtarchiveCommand quick = new PtarchiveCommand();
            assertTrue(quick.takeQuickly(line), Arrays.toString(line));
            LsCommand quickLs = (LsCommand) quick.taken();
            assertNotNull(quickLs.out(), "where it prints");
            PtarchiveCommand picocli = new PtarchiveCommand();
            picocli.CommandLine.ParseResult parsed = Tool.model(picocli, line).parseArgs(line);
            LsCommand picocliLs = (LsCommand) parsed.subcommand().commandSpec().userObject();
            assertEquals(state(picocli), state(quick), Arrays.toString(line) + ": ptarchive");
            assertEquals(state(picocliLs), state(quickLs), Arrays.toString(line) + ": ls");
            assertTrue(quickLs.parent == quick && picocliLs.parent == picocli, "parent");
        }
    }

    @Test
    void everyOtherLineIsPicocli() throws Exception {
        List<String[]> lines = List.of(
                new String[] {}, new String[] {"--help"}, new String[] {"--version"}, new String[] {"ls", "-h"},
                new String[] {"ls", "--help"}, new String[] {"help", "ls"}, new String[] {"show", "x"},
                new String[] {"stats"}, new String[] {"ls", "--name", "x"}, new String[] {"ls", "--tag=6d"},
                new String[] {"ls", "--json", "--json"}, new String[] {"ls", "--recordings", "--recordings"},
                new String[] {"ls", "extra"}, new String[] {"ls", "ls"}, new String[] {"ls", "--"},
                new String[] {"--archive", "ls", "ls"}, new String[] {"--archive", "a", "--archive", "b", "ls"},
                new String[] {"ls", "--archive"}, new String[] {"ls", "--archive=-x"}, new String[] {"ls", "--archive", "@f"},
                new String[] {"ls", "--archive="}, new String[] {"--archive", "/a"}, new String[] {"--json", "ls"},
                new String[] {"ls", "--archive", "a", "--archive", "b"}, new String[] {"@args"});
        for (String[] line : lines) {
            PtarchiveCommand c = new PtarchiveCommand();
            assertFalse(c.takeQuickly(line), Arrays.toString(line));
            assertNull(c.taken(), Arrays.toString(line));
            assertEquals(state(new PtarchiveCommand()), state(c), Arrays.toString(line) + " changed the command");
        }
    }

    /** Every field, by name, the mixin's by path; where it prints and the parent (checked apart) left out. */
    private static Map<String, Object> state(Object o) throws IllegalAccessException {
        Map<String, Object> out = new TreeMap<>();
        for (Class<?> k = o.getClass(); k != Object.class; k = k.getSuperclass()) {
            for (Field f : k.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) || List.of("spec", "quickOut", "parent", "taken")
                        .contains(f.getName())) {
                    continue;
                }
                f.setAccessible(true);
                Object v = f.get(o);
                if (v instanceof ArchiveOption a) {
                    out.put(f.getName() + ".directory", a.directory);
                } else {
                    out.put(f.getName(), v);
                }
            }
        }
        return out;
    }
}

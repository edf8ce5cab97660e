package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import ptfence.cli.Tool;

/**
 * The lines ptdecode takes without picocli ({@link QuickLines}) leave the command exactly as picocli's parse of the
 * same line leaves it — every field of the command and of its mixins — and every other line is left to picocli with
 * the command untouched.
 */
class QuickLinesTest {
    @Test
    void takenLinesSetWhatPicocliSets() throws Exception {
        List<String[]> lines = List.of(
                new String[] {},
                new String[] {"loopy.perf"},
                new String[] {"dir with space/x.perf"},
                new String[] {"--itrace=i0ns", "-F", "ip,sym", "--symfs=/tmp/symfs", "rec.perf"},
                new String[] {"rec.perf", "--itrace=i0ns", "-F", "ip,sym", "--symfs", "/tmp/s"},
                new String[] {"-i", "rec.perf", "--ns", "--itrace=bep", "--itrace=i100ns", "--fields=ip", "-F", "+addr"},
                new String[] {"--input=rec.perf", "--fields", "comm,tid,ip,sym", "x.perf"},
                new String[] {"--input", "a=b", "--symfs=a=b"},
                new String[] {"--ns"});
        for (String[] line : lines) {
            PtdecodeCommand quick = new PtdecodeCommand();
            assertTrue(quick.takeQuickly(line), Arrays.toString(line));
            PtdecodeCommand picocli = new PtdecodeCommand();
            Tool.model(picocli, line).parseArgs(line);
            assertEquals(state(picocli), state(quick), Arrays.toString(line));
        }
    }

    @Test
    void everyOtherLineIsPicocli() throws Exception {
        List<String[]> lines = List.of(
                new String[] {"--help"}, new String[] {"-h"}, new String[] {"--version"}, new String[] {"-"},
                new String[] {"flow", "--pt", "x.pt"}, new String[] {"packets", "x.pt"}, new String[] {"@args"},
                new String[] {"a.perf", "b.perf"}, new String[] {"--itrace"}, new String[] {"--itrace", "i0ns"},
                new String[] {"-Fip,sym"}, new String[] {"-F", "-ip"}, new String[] {"-F"}, new String[] {"--fields="},
                new String[] {"--symfs", "a", "--symfs", "b"}, new String[] {"-i", "a", "--input=b"},
                new String[] {"--ns", "--ns"}, new String[] {"--ns=true"}, new String[] {"--format", "jsonl", "x"},
                new String[] {"x.perf", "--bogus"}, new String[] {""}, new String[] {"--symfs", ""},
                new String[] {"--symfs", "@dir"}, new String[] {"--symfs", "flow"}, new String[] {"-i=x"},
                new String[] {"--", "x.perf"}, new String[] {"x.perf", "-C", "0"});
        Map<String, Object> fresh = state(new PtdecodeCommand());
        for (String[] line : lines) {
            PtdecodeCommand c = new PtdecodeCommand();
            assertFalse(c.takeQuickly(line), Arrays.toString(line));
            assertEquals(fresh, state(c), Arrays.toString(line) + " changed the command");
        }
    }

    /**
     * The quick path leaves every field it is not given at its initializer; that is picocli's default only while no
     * option of the command or its mixins has an annotation defaultValue (picocli keeps the initial value then).
     */
    @Test
    void noOptionHasADefaultValueBesideItsInitializer() throws Exception {
        Object none = picocli.CommandLine.Option.class.getMethod("defaultValue").getDefaultValue();
        List<String> withDefault = new ArrayList<>();
        List<Object> objects = new ArrayList<>(List.of(new PtdecodeCommand()));
        int options = 0;
        for (int i = 0; i < objects.size(); i++) {
            for (Class<?> k = objects.get(i).getClass(); k != Object.class; k = k.getSuperclass()) {
                for (Field f : k.getDeclaredFields()) {
                    picocli.CommandLine.Option o = f.getAnnotation(picocli.CommandLine.Option.class);
                    if (o != null) {
                        options++;
                        if (!o.defaultValue().equals(none)) {
                            withDefault.add(k.getSimpleName() + "." + f.getName() + " = " + o.defaultValue());
                        }
                    }
                    if (f.isAnnotationPresent(picocli.CommandLine.Mixin.class)) {
                        f.setAccessible(true);
                        objects.add(f.get(objects.get(i)));
                    }
                }
            }
        }
        assertTrue(options > 30 && objects.size() > 2, options + " options in " + objects.size() + " objects");
        assertEquals(List.of(), withDefault, "options with a defaultValue: QuickLines would not set it");
    }

    /** Every field of the command and of its mixins (this package's objects), by path; arrays as lists, streams by class. */
    private static Map<String, Object> state(Object o) throws IllegalAccessException {
        Map<String, Object> out = new TreeMap<>();
        state(o, "", out);
        return out;
    }

    private static void state(Object o, String prefix, Map<String, Object> out) throws IllegalAccessException {
        for (Class<?> k = o.getClass(); k != Object.class; k = k.getSuperclass()) {
            for (Field f : k.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers())) {
                    continue;
                }
                f.setAccessible(true);
                Object v = f.get(o);
                String name = prefix + f.getName();
                if (v != null && v.getClass().getPackage() == PtdecodeCommand.class.getPackage() && !v.getClass().isEnum()) {
                    state(v, name + ".", out);
                } else if (v instanceof java.io.OutputStream || v instanceof java.io.InputStream) {
                    out.put(name, v.getClass()); // where output goes, not what the line said (a new Stdout each)
                } else if (v != null && v.getClass().isArray()) {
                    List<Object> items = new ArrayList<>();
                    for (int i = 0; i < java.lang.reflect.Array.getLength(v); i++) {
                        items.add(java.lang.reflect.Array.get(v, i));
                    }
                    out.put(name, items);
                } else {
                    out.put(name, v);
                }
            }
        }
    }
}

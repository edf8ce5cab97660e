package ptfence.ptdecode;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The ptdecode lines taken without picocli ({@link ptfence.cli.QuickLine}): a recording and perf script's usual
 * options, each in the forms perf users write — {@code [-i|--input] FILE}, {@code --itrace=OPTS}, {@code -F}/{@code
 * --fields FIELDS}, {@code --symfs DIR}, {@code --ns}, long options also with '='. Anything else (another option, a
 * value starting with '-' or '@', an option given twice where picocli refuses that, a subcommand's name, '-' for
 * stdin, help) goes to picocli. {@code QuickLinesTest} parses lines both ways and compares every field.
 */
final class QuickLines {
    /** Words picocli would take as a subcommand, or as no plain value. */
    private static final Set<String> NOT_VALUES = Set.of("packets", "flow");

    private QuickLines() {}

    static boolean take(PtdecodeCommand c, String... args) {
        String recording = null;
        String input = null;
        Path symfs = null;
        boolean ns = false;
        List<String> itrace = null;
        List<String> fields = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!plain(a) && !a.startsWith("-")) {
                return false;
            }
            if (!a.startsWith("-")) {
                if (recording != null) {
                    return false; // picocli's error: one RECORDING
                }
                recording = a;
                continue;
            }
            String name = a;
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
                if (!plain(value)) {
                    return false;
                }
            }
            if (value == null && !name.equals("--ns") && !name.equals("--itrace")) {
                if (i + 1 >= args.length || !plain(args[i + 1])) {
                    return false;
                }
                value = args[++i];
            }
            switch (name) {
                case "--itrace" -> {
                    if (value == null) {
                        return false; // its fallback value: picocli's
                    }
                    if (itrace == null) {
                        itrace = new ArrayList<>();
                    }
                    itrace.add(value);
                }
                case "-F", "--fields" -> fields.add(value);
                case "--symfs" -> {
                    if (symfs != null || value.indexOf('\0') >= 0) {
                        return false;
                    }
                    symfs = Path.of(value);
                }
                case "-i", "--input" -> {
                    if (input != null) {
                        return false;
                    }
                    input = value;
                }
                case "--ns" -> {
                    if (ns || value != null) {
                        return false;
                    }
                    ns = true;
                }
                default -> {
                    return false;
                }
            }
        }
        // what picocli sets: the values given; every other field keeps its initializer, as picocli keeps it (no
        // option of PtdecodeCommand or its mixins has a defaultValue: QuickLinesTest checks that too)
        c.recording = recording;
        c.perf.input = input;
        c.perf.symfs = symfs;
        c.perf.ns = ns;
        c.perf.itrace = itrace;
        c.perf.fields = fields;
        return true;
    }

    /** A word picocli takes as a value, nothing more: not empty, no option, no @file, no subcommand. */
    private static boolean plain(String s) {
        return !s.isEmpty() && s.charAt(0) != '-' && s.charAt(0) != '@' && !NOT_VALUES.contains(s);
    }
}

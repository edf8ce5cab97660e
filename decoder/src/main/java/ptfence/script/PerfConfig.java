package ptfence.script;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * perf's configuration files as perf 6.1 reads them for perf script: {@code $PERF_CONFIG} alone when it is set (set
 * and empty: none), else {@code /etc/perfconfig} (unless {@code PERF_CONFIG_NOSYSTEM}) and then
 * {@code $HOME/.perfconfig} (unless {@code PERF_CONFIG_NOGLOBAL}), a later value replacing an earlier one. The format
 * is git's: {@code [section]}, {@code name = value}, comments after # or ;, names in any case. A line perf cannot read
 * stops that file with perf's one line ("bad config file line N in FILE"); the run goes on, as perf's does.
 *
 * <p>Of the keys perf 6.1 reads, those of Intel PT decoding are checked here as perf checks them ({@link #check}):
 * intel-pt.mispred-all (a boolean), intel-pt.max-loops and intel-pt.cache-divisor (numbers); perf script does not
 * look at itrace.debug-log-buffer-size. None of them changes perf script's lines on a recording without a never-ending loop (perf's
 * max-loops counts direct branches walked with no packet; mispred-all marks brstack entries), which is what the
 * parity suite checks.
 */
public final class PerfConfig {
    private final Map<String, String> values = new LinkedHashMap<>();

    /** The files perf reads in this environment, in order. */
    static java.util.List<Path> files(Map<String, String> env) {
        String exclusive = env.get("PERF_CONFIG");
        if (exclusive != null) {
            return exclusive.isEmpty() ? java.util.List.of() : java.util.List.of(Path.of(exclusive));
        }
        java.util.List<Path> out = new java.util.ArrayList<>();
        if (!isTrue(env.get("PERF_CONFIG_NOSYSTEM"))) {
            out.add(Path.of("/etc/perfconfig"));
        }
        String home = env.get("HOME");
        if (!isTrue(env.get("PERF_CONFIG_NOGLOBAL")) && home != null && !home.isEmpty()) {
            out.add(Path.of(home, ".perfconfig"));
        }
        return out;
    }

    private static boolean isTrue(String v) {
        return v != null && Boolean.TRUE.equals(bool(v));
    }

    /** Reads perf's files for {@code env}; what perf would say about them goes to {@code err}. */
    public static PerfConfig load(Map<String, String> env, PrintStream err) {
        PerfConfig c = new PerfConfig();
        for (Path f : files(env)) {
            if (!Files.isReadable(f) || Files.isDirectory(f)) {
                continue; // perf skips a file it cannot open, silently
            }
            try {
                c.parse(Files.readString(f, StandardCharsets.ISO_8859_1), f.toString(), err);
            } catch (IOException e) {
                // unreadable after all: perf gives up on it without a word
            }
        }
        return c;
    }

    /** The value of {@code key} (section.name, lower case), or null; a name without a value is "". */
    public String get(String key) {
        return values.get(key);
    }

    /**
     * Checks the keys of Intel PT decoding as perf reads them when a recording has Intel PT (intel_pt_perf_config):
     * a value perf cannot read is named in its words and left out.
     */
    public void check(PrintStream err) {
        checkValue("intel-pt.mispred-all", v -> bool(v) != null, err);
        checkValue("intel-pt.max-loops", v -> number(v) != null, err);
        checkValue("intel-pt.cache-divisor", v -> number(v) != null, err);
    }

    private void checkValue(String key, java.util.function.Predicate<String> ok, PrintStream err) {
        String v = values.get(key);
        if (v != null && !ok.test(v)) {
            err.println("bad config value for '" + key + "', ignoring...");
            values.remove(key);
        }
    }

    /** perf's boolean: true/yes/on, false/no/off, or a number (non-zero: true); null if it is none of those. */
    static Boolean bool(String v) {
        String s = v.trim().toLowerCase(Locale.ROOT);
        switch (s) {
            case "true", "yes", "on" -> {
                return true;
            }
            case "false", "no", "off", "" -> {
                return false;
            }
            default -> {
                Long n = number(s);
                return n == null ? null : n != 0;
            }
        }
    }

    /** perf's number: decimal, 0x hex or 0 octal, with an optional k, m or g; null if it is not one. */
    static Long number(String v) {
        String s = v.trim().toLowerCase(Locale.ROOT);
        long unit = 1;
        if (!s.isEmpty() && "kmg".indexOf(s.charAt(s.length() - 1)) >= 0) {
            unit = switch (s.charAt(s.length() - 1)) {
                case 'k' -> 1L << 10;
                case 'm' -> 1L << 20;
                default -> 1L << 30;
            };
            s = s.substring(0, s.length() - 1);
        }
        try {
            return Long.decode(s) * unit;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    // ------------------------------------------------------------------ the file

    private String text;
    private int pos;
    private int line;

    /** perf's reader: the next character, a line end counted as it is read; the end of the text reads as one. */
    private int next() {
        if (pos >= text.length()) {
            pos++;
            return '\n';
        }
        char c = text.charAt(pos++);
        if (c == '\r' && pos < text.length() && text.charAt(pos) == '\n') {
            c = text.charAt(pos++);
        }
        if (c == '\n') {
            line++;
        }
        return c;
    }

    private boolean atEnd() {
        return pos > text.length();
    }

    void parse(String content, String name, PrintStream err) {
        text = content;
        pos = 0;
        line = 1;
        String section = null;
        boolean comment = false;
        while (true) {
            int c = next();
            if (atEnd()) {
                return;
            }
            if (c == '\n') {
                comment = false;
                continue;
            }
            if (comment || c == ' ' || c == '\t') {
                continue;
            }
            if (c == '#' || c == ';') {
                comment = true;
                continue;
            }
            int at = line;
            if (c == '[') {
                section = section();
                if (section == null) {
                    err.println("bad config file line " + line + " in " + name);
                    return;
                }
                continue;
            }
            if (!Character.isLetter(c) || section == null) {
                err.println("bad config file line " + at + " in " + name);
                return;
            }
            if (!value(section, Character.toLowerCase((char) c))) {
                err.println("bad config file line " + at + " in " + name); // perf names the line the name is on
                return;
            }
        }
    }

    /** After '[': the section's name up to ']' (a "subsection" after a space kept as .sub), or null. */
    private String section() {
        StringBuilder b = new StringBuilder();
        while (true) {
            int c = next();
            if (c == ']') {
                return b.length() == 0 ? null : b.toString();
            }
            if (c == '\n' || atEnd()) {
                return null;
            }
            if (c == ' ' || c == '\t') {
                return subsection(b);
            }
            if (!Character.isLetterOrDigit(c) && c != '-' && c != '_' && c != '.') {
                return null;
            }
            b.append(Character.toLowerCase((char) c));
        }
    }

    private String subsection(StringBuilder b) {
        int c;
        do {
            c = next();
        } while (c == ' ' || c == '\t');
        if (c != '"') {
            return null;
        }
        b.append('.');
        while (true) {
            c = next();
            if (c == '\n' || atEnd()) {
                return null;
            }
            if (c == '"') {
                break;
            }
            if (c == '\\') {
                c = next();
                if (c == '\n') {
                    return null;
                }
            }
            b.append((char) c);
        }
        return next() == ']' ? b.toString() : null;
    }

    /** A "name = value" line from its first letter: stored under section.name; false if perf cannot read it. */
    private boolean value(String section, char first) {
        StringBuilder key = new StringBuilder().append(first);
        int c;
        while (true) {
            c = next();
            if (!Character.isLetterOrDigit(c) && c != '-' && c != '_') {
                break;
            }
            key.append(Character.toLowerCase((char) c));
        }
        while (c == ' ' || c == '\t') {
            c = next();
        }
        if (c != '=') {
            return false; // perf 6.1 takes no name without a value
        }
        StringBuilder v = new StringBuilder();
        boolean quoted = false;
        boolean comment = false;
        int space = 0;
        while (true) {
            c = next();
            if (c == '\n') {
                if (quoted) {
                    return false;
                }
                break;
            }
            if (comment) {
                continue;
            }
            if (!quoted && (c == ' ' || c == '\t')) {
                if (v.length() > 0) {
                    space++;
                }
                continue;
            }
            if (!quoted && (c == '#' || c == ';')) {
                comment = true;
                continue;
            }
            for (; space > 0; space--) {
                v.append(' ');
            }
            if (c == '\\') {
                c = next();
                switch (c) {
                    case '\n' -> {
                        continue;
                    }
                    case 't' -> c = '\t';
                    case 'b' -> c = '\b';
                    case 'n' -> c = '\n';
                    case '\\', '"' -> { }
                    default -> {
                        return false;
                    }
                }
                v.append((char) c);
                continue;
            }
            if (c == '"') {
                quoted = !quoted;
                continue;
            }
            v.append((char) c);
        }
        values.put(section + "." + key, v.toString());
        return true;
    }
}

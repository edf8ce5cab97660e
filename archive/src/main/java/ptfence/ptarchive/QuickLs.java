package ptfence.ptarchive;

import java.nio.file.Path;

/**
 * The {@code ptarchive ls} lines taken without picocli ({@link ptfence.cli.QuickLine}): {@code [--archive DIR] ls
 * [--archive DIR] [--recordings] [--json]}, {@code --archive=DIR} too, each option at most once where it stands. A
 * script that lists an archive pays no picocli model (a third of such a start, docs/install.md). Any other line (a
 * filter, help, a value starting with '-' or '@' or one that is a bare lowercase word such as a subcommand's name,
 * another subcommand) goes to picocli. {@code QuickLsTest} parses lines both ways and compares every field.
 */
final class QuickLs {
    private QuickLs() {
    }

    /** The ls command {@code args} asks for, its fields set as picocli sets them; null for a line left to picocli. */
    static LsCommand take(PtarchiveCommand parent, String... args) {
        Path before = null, after = null;
        boolean ls = false, recordings = false, json = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--archive") || a.startsWith("--archive=")) {
                String v = a.equals("--archive") ? (i + 1 < args.length ? args[++i] : null) : a.substring(10);
                if (v == null || !plain(v) || (ls ? after : before) != null) {
                    return null;
                }
                if (ls) {
                    after = Path.of(v);
                } else {
                    before = Path.of(v);
                }
            } else if (!ls && a.equals("ls")) {
                ls = true;
            } else if (ls && a.equals("--recordings") && !recordings) {
                recordings = true;
            } else if (ls && a.equals("--json") && !json) {
                json = true;
            } else {
                return null;
            }
        }
        if (!ls) {
            return null;
        }
        // what picocli sets: the values given; every other field keeps its initial value
        parent.archive = before;
        LsCommand c = new LsCommand();
        c.archive = new ArchiveOption();
        c.archive.directory = after;
        c.parent = parent;
        c.recordingsOnly = recordings;
        c.json = json;
        c.quickOut = ptfence.cli.Tool.stdoutWriter();
        return c;
    }

    /**
     * A value picocli takes as a value, nothing more: not empty, no option, no @file, no NUL, and not a bare
     * lowercase word, which a subcommand's name is (such a directory is legal; picocli gets its line).
     */
    private static boolean plain(String s) {
        return !s.isEmpty() && s.charAt(0) != '-' && s.charAt(0) != '@' && s.indexOf('\0') < 0
                && !s.matches("[a-z]+");
    }
}

package ptfence.script;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * perf script's lists of what perf has installed: {@code -l} (the scripts with a {@code -report} wrapper under
 * {@code $PERF_EXEC_PATH/scripts/LANG/bin}, with the description and arguments their wrapper's comments give) and
 * {@code --list-dlfilters} (the shared objects here and in {@code $PERF_EXEC_PATH/dlfilters} that are filters, with
 * their filter_description). Directories are read in the order the file system lists them, as perf's readdir does.
 */
public final class InstalledTools {
    private InstalledTools() {
    }

    /** perf's exec path: $PERF_EXEC_PATH, else Debian's perf-core. */
    static Path execPath() {
        String exec = System.getenv("PERF_EXEC_PATH");
        return Path.of(exec != null && !exec.isEmpty() ? exec : "/usr/lib/perf-core");
    }

    /** {@code perf script -l}. */
    public static void scripts(PrintStream out) throws IOException {
        out.print("List of available trace scripts:\n");
        Path root = execPath().resolve("scripts");
        if (!Files.isDirectory(root)) {
            return;
        }
        try (DirectoryStream<Path> langs = Files.newDirectoryStream(root)) {
            for (Path lang : langs) {
                Path bin = lang.resolve("bin");
                if (!Files.isDirectory(bin)) {
                    continue;
                }
                try (DirectoryStream<Path> scripts = Files.newDirectoryStream(bin)) {
                    for (Path report : scripts) {
                        String name = report.getFileName().toString();
                        if (!name.endsWith("-report") || Files.isDirectory(report)) {
                            continue;
                        }
                        String[] info = scriptInfo(report);
                        String first = name.substring(0, name.length() - "-report".length())
                                + (info[1] == null ? "" : " " + info[1]);
                        out.print(String.format("  %-36s %s\n", first, info[0] == null ? "" : info[0]));
                    }
                }
            }
        }
    }

    /** A wrapper's "# description:" and "# args:" comments (null where absent), as perf reads them. */
    private static String[] scriptInfo(Path report) throws IOException {
        String[] info = new String[2];
        for (String line : Files.readAllLines(report, java.nio.charset.StandardCharsets.ISO_8859_1)) {
            String p = line.stripLeading();
            if (!p.startsWith("#") || p.startsWith("#!")) {
                continue;
            }
            p = p.substring(1).stripLeading();
            if (p.startsWith("description:")) {
                info[0] = p.substring("description:".length()).stripLeading();
            } else if (p.startsWith("args:")) {
                info[1] = p.substring("args:".length()).stripLeading();
            }
        }
        return info;
    }

    /** {@code perf script --list-dlfilters} ({@code verbose}: each long description too, indented). */
    public static void dlfilters(PrintStream out, boolean verbose) throws IOException {
        out.print("List of available dlfilters:\n");
        dlfilters(out, Path.of("."), verbose);
        dlfilters(out, execPath().resolve("dlfilters"), verbose);
    }

    private static void dlfilters(PrintStream out, Path dir, boolean verbose) throws IOException {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path so : entries) {
                String name = so.getFileName().toString();
                if (name.length() < 4 || !name.endsWith(".so") || Files.isDirectory(so)) {
                    continue;
                }
                String[] desc = ptfence.dlfilter.DlFilter.describe(so);
                if (desc == null) {
                    continue;
                }
                out.print(String.format("  %-36s %s\n", name, desc[0] == null ? "" : desc[0]));
                if (verbose && desc[1] != null) {
                    for (String l : desc[1].split("\n", -1)) {
                        out.print(" ".repeat(39) + l + "\n");
                    }
                }
            }
        }
    }
}

package ptfence.insn;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Where JNA looks for capstone: the dynamic loader's directories, read from /etc/ld.so.conf (and the files it
 * includes) in Java. JNA otherwise runs {@code ldconfig -p} as a child process the first time it loads a library, in
 * every process that disassembles (a fork and exec, ~20 ms of CPU and 3 MB of RSS of a 0.1 s start), only to learn
 * these directories; it skips that when {@code jna.platform.library.path} is set. A value set by the user (-D in
 * JAVA_OPTS) is kept.
 */
public final class LibraryDirs {
    static final String PROPERTY = "jna.platform.library.path";

    private LibraryDirs() {
    }

    /** Sets {@value #PROPERTY} to {@link #of} the system's configuration unless it is set; before JNA's first load. */
    public static synchronized void forJna() {
        if (System.getProperty(PROPERTY) == null) {
            System.setProperty(PROPERTY, String.join(java.io.File.pathSeparator, of(Path.of("/etc/ld.so.conf"))));
        }
    }

    /**
     * The directories ld.so searches besides LD_LIBRARY_PATH: those {@code conf} names (its {@code include} globs
     * followed, comments and {@code hwcap} lines skipped), then the trusted ones it always searches, as ldconfig
     * builds its cache from them; those that exist, each once.
     */
    static List<String> of(Path conf) {
        Set<String> dirs = new LinkedHashSet<>();
        read(conf, dirs, new java.util.HashSet<>());
        String multiarch = switch (System.getProperty("os.arch")) {
            case "amd64", "x86_64" -> "x86_64-linux-gnu";
            case "aarch64" -> "aarch64-linux-gnu";
            default -> null;
        };
        if (multiarch != null) {
            dirs.add("/lib/" + multiarch);
            dirs.add("/usr/lib/" + multiarch);
        }
        dirs.addAll(List.of("/lib64", "/usr/lib64", "/lib", "/usr/lib"));
        List<String> out = new ArrayList<>();
        for (String d : dirs) {
            if (Files.isDirectory(Path.of(d))) {
                out.add(d);
            }
        }
        return out;
    }

    private static void read(Path conf, Set<String> dirs, Set<Path> seen) {
        if (!seen.add(conf.toAbsolutePath().normalize())) {
            return; // an include loop
        }
        List<String> lines;
        try {
            lines = Files.readAllLines(conf);
        } catch (IOException | RuntimeException e) {
            return; // unreadable: what ldconfig skips too
        }
        for (String line : lines) {
            int hash = line.indexOf('#');
            String l = (hash >= 0 ? line.substring(0, hash) : line).strip();
            if (l.isEmpty() || l.startsWith("hwcap ")) {
                continue;
            }
            if (l.startsWith("include ") || l.startsWith("include\t")) {
                for (String pattern : l.substring(8).strip().split("\\s+")) {
                    Path p = conf.resolveSibling(pattern); // relative: to the including file's directory
                    include(p, dirs, seen);
                }
                continue;
            }
            // "DIR" or the old "DIR=TYPE"; several may share a line, separated by blanks, commas or colons
            for (String d : l.split("[\\s,:]+")) {
                int eq = d.indexOf('=');
                String dir = eq >= 0 ? d.substring(0, eq) : d;
                if (dir.startsWith("/")) {
                    dirs.add(dir.length() > 1 && dir.endsWith("/") ? dir.substring(0, dir.length() - 1) : dir);
                }
            }
        }
    }

    /** An include's files: a glob in its last name only, as ld.so.conf uses them ({@code /etc/ld.so.conf.d/*.conf}). */
    private static void include(Path pattern, Set<String> dirs, Set<Path> seen) {
        Path parent = pattern.getParent();
        String glob = pattern.getFileName() == null ? "" : pattern.getFileName().toString();
        if (parent == null) {
            return;
        }
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(parent, glob)) {
            s.forEach(files::add);
        } catch (IOException | RuntimeException e) {
            return; // no such directory
        }
        files.sort(null); // ldconfig reads them in the glob's (sorted) order
        for (Path f : files) {
            read(f, dirs, seen);
        }
    }
}

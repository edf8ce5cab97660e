package ptfence.symbol;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import ptfence.image.Elf;
import ptfence.image.Symbols;

/**
 * One mapped ELF file as symbols see it: its function symbols and, read on first use, its line table, both in the
 * file's own virtual addresses. When the file itself has no symbol table or no line info, a separate debug file is
 * looked for by build id (/usr/lib/debug/.build-id/xx/rest.debug, perf's ~/.debug cache) and by path
 * (/usr/lib/debug/PATH.debug), under the sysroot first.
 */
final class Dso {
    private final Elf elf;
    private final Symbols symbols = new Symbols();
    private final Path sysroot;
    private final String recordedPath;
    private volatile LineTable lines;
    private SymtabFiles files;
    private volatile boolean linesRead;
    private Elf debug;
    private boolean debugLooked;

    Dso(Elf elf, Path sysroot, String recordedPath) {
        this.elf = elf;
        this.sysroot = sysroot;
        this.recordedPath = recordedPath;
        symbols.addElf(elf, 0);
        if (symbols.isEmpty()) {
            Elf d = debugFile();
            if (d != null) {
                symbols.addElf(d, 0);
            }
        }
        symbols.at(0); // sort now: decoder threads share it
    }

    Elf elf() {
        return elf;
    }

    Symbols symbols() {
        return symbols;
    }

    /** The line table (of the file, else of its debug file), or null; read once. */
    LineTable lines() {
        if (!linesRead) {
            synchronized (this) {
                if (!linesRead) {
                    LineTable t = LineTable.of(elf);
                    if (t == null) {
                        Elf d = debugFile();
                        t = d == null ? null : LineTable.of(d);
                    }
                    lines = t;
                    files = t == null ? null : SymtabFiles.of(elf);
                    linesRead = true;
                }
            }
        }
        return lines;
    }

    /**
     * The line of the code at {@code vaddr}: its DWARF line, else (in a file with line info) the symbol table's file
     * with line 0, as perf prints what binutils answers; null when neither knows.
     */
    SourceLine line(long vaddr) {
        LineTable t = lines();
        if (t == null) {
            return null;
        }
        SourceLine l = t.line(vaddr);
        if (l == null) {
            String f = files.fileAt(vaddr);
            l = f == null ? null : new SourceLine(f.substring(f.lastIndexOf('/') + 1) + ":0", vaddr, vaddr + 1,
                    f + ":0");
        }
        return l;
    }

    private synchronized Elf debugFile() {
        if (!debugLooked) {
            debugLooked = true;
            byte[] id = elf.buildId();
            List<String> candidates = new java.util.ArrayList<>();
            if (id.length > 1) {
                String hex = HexFormat.of().formatHex(id);
                candidates.add("/usr/lib/debug/.build-id/" + hex.substring(0, 2) + "/" + hex.substring(2) + ".debug");
                String home = System.getProperty("user.home");
                if (home != null) {
                    candidates.add(home + "/.debug/.build-id/" + hex.substring(0, 2) + "/" + hex.substring(2)
                            + "/debug");
                }
            }
            candidates.add("/usr/lib/debug" + (recordedPath.startsWith("/") ? "" : "/") + recordedPath + ".debug");
            for (String c : candidates) {
                for (Path p : sysroot == null ? List.of(Path.of(c))
                        : List.of(sysroot.resolve(c.replaceFirst("^/+", "")), Path.of(c))) {
                    if (Files.isRegularFile(p)) {
                        Elf d = Elf.read(p);
                        if (d != null && (id.length == 0 || java.util.Arrays.equals(id, d.buildId()))) {
                            debug = d;
                            return debug;
                        }
                    }
                }
            }
        }
        return debug;
    }
}

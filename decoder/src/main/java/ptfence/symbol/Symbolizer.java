package ptfence.symbol;

/**
 * Names for code addresses: the function (and its offset) and the file holding it, and the source line, for an
 * address run by process {@code pid} at perf time {@code time} (-1 when the trace has no time). One implementation
 * serves every view of a recording ({@link RecordingSymbols}), so they all name code the same way.
 */
public interface Symbolizer {
    /** The function holding {@code address}, or null when nothing names it. */
    Symbol symbol(long address, long time, int pid);

    /** The source line the code at {@code address} came from (DWARF line info) and the code it covers, or null. */
    SourceLine line(long address, long time, int pid);

    /** "file:line" of the source the code at {@code address} came from, or null. */
    default String srcline(long address, long time, int pid) {
        SourceLine l = line(address, time, pid);
        return l == null ? null : l.text();
    }

    /**
     * The name perf gives the code's container at {@code address} (its dso): a mapped file's path as recorded,
     * {@code [kernel.kallsyms]} for kernel text, a BPF program's name; null where nothing maps the address. Also
     * for addresses no symbol names.
     */
    default String dso(long address, long time, int pid) {
        Symbol s = symbol(address, time, pid);
        return s == null ? null : s.dso();
    }

    /**
     * The files perf reads when process {@code pid} maps its vdso at {@code time} and finds none of them (to learn the
     * process's ELF class it reads the files the process maps, by address, until one opens): the absolute-path files
     * mapped then, in address order, up to the first whose file is here. Empty where nothing says.
     */
    default java.util.List<String> filesReadForVdso(int pid, long time) {
        return java.util.List.of();
    }

    /**
     * perf's srcline where it cannot read lines (the file is missing, the code has no file): the dso's short name
     * and the address in it ({@code name[hex]}): in a mapped file its file address, in code a KSYMBOL names (a BPF program, each JITed function its own dso) the
     * offset from the symbol's start, in {@code [kernel.kallsyms]} the address; null where nothing maps the address.
     */
    default String srclineFallback(long address, long time, int pid) {
        return null;
    }

    /**
     * The address perf shows for {@code address} in a call chain (its map's address: in a mapped file the file
     * address, elsewhere the address itself).
     */
    default long mapAddress(long address, long time, int pid) {
        return address;
    }

    /**
     * The address perf's brstackoff shows: the map's address where its file's symbols are not adjusted to load
     * addresses (a shared object or PIE, or a file perf could not read), else the address itself (an ET_EXEC
     * executable, the kernel).
     */
    default long offsetAddress(long address, long time, int pid) {
        return address;
    }

    /**
     * Where no function is named around {@code address}: the file name {@link #dso} gives there, with {@code span}
     * set to {@code [lo, hi)} and the perf times {@code [from, to)} over which every address of that range gets no
     * symbol and that same dso for {@code pid} (to is {@code Long.MAX_VALUE} only where the answer also holds without
     * a time); null where this is not known cheaply (the caller asks {@link #symbol} then).
     */
    default String missSpan(long address, long time, int pid, long[] span) {
        return null;
    }

    /**
     * perf's map around {@code address} for a script's dictionary (dso_map_start, dso_map_end, dso_bid): {@code span}
     * set to the map's [start, end) and its file's build id as hex ("" without one) returned; null where there is no
     * map known.
     */
    default String mapOf(long address, long time, int pid, long[] span) {
        return null;
    }

    /** Every function of this name the recording could run: user symbols of mapped files, kernel symbols. */
    java.util.List<Symbol> named(String name);

    /** Names nothing. */
    Symbolizer NONE = new Symbolizer() {
        public Symbol symbol(long address, long time, int pid) {
            return null;
        }

        public SourceLine line(long address, long time, int pid) {
            return null;
        }

        public java.util.List<Symbol> named(String name) {
            return java.util.List.of();
        }
    };
}

package ptfence.symbol;

/**
 * One thread's way through a {@link Symbolizer}: consecutive instructions are mostly in the same function, so the
 * last symbol answers again while it covers the address (same process, within its time span), and the last source
 * line while the address stays in its row. Not shared between threads.
 */
public final class SymbolCursor {
    private final Symbolizer symbols;
    private Symbol last;
    private int lastPid = Integer.MIN_VALUE;
    private int linePid = Integer.MIN_VALUE;
    private SourceLine line;
    private long noLineAt = 1;

    /** perf's --full-source-path: source lines with the file's whole name. */
    private final boolean fullPaths;

    public SymbolCursor(Symbolizer symbols) {
        this(symbols, false);
    }

    public SymbolCursor(Symbolizer symbols, boolean fullPaths) {
        this.symbols = symbols;
        this.fullPaths = fullPaths;
    }

    /** The function holding {@code address}, or null. */
    public Symbol symbol(long address, long time, int pid) {
        Symbol s = last;
        if (s != null && s.covers(address) && (address < 0 || pid == lastPid)
                && (time < 0 || time >= s.from() && time < s.to())) {
            return s;
        }
        s = symbols.symbol(address, time, pid);
        last = s;
        lastPid = pid;
        return s;
    }

    /** "file:line" for {@code address}, or null. */
    public String srcline(long address, long time, int pid) {
        SourceLine l = line;
        if (pid == linePid && (l != null ? l.covers(address) : address == noLineAt)) {
            return l == null ? null : fullPaths ? l.path() : l.text();
        }
        l = symbols.line(address, time, pid);
        line = l;
        linePid = pid;
        noLineAt = address;
        return l == null ? null : fullPaths ? l.path() : l.text();
    }
}

package ptfence.ptdecode;

import ptfence.symbol.SourceLine;
import ptfence.symbol.Symbol;
import ptfence.symbol.Symbolizer;

/**
 * The call views' names from the recording's one symbolizer ({@link ptfence.symbol.RecordingSymbols}), so calls,
 * branches, Perfetto slices and folded stacks name code exactly as the instruction listing does. A branch's two ends
 * are looked up on every line, and a program's branches keep coming back to the same few addresses: the answers are
 * kept in a small table by address and process, each valid while its symbol is (its perf time span).
 */
final class CallNames implements Symbolizer {
    private static final int SLOTS = 1 << 12;

    private final Symbolizer symbols;
    private final long[] address = new long[SLOTS];
    private final int[] pid = new int[SLOTS];
    private final Symbol[] symbol = new Symbol[SLOTS];
    private final String[] dso = new String[SLOTS];

    CallNames(Symbolizer symbols) {
        this.symbols = symbols;
    }

    /** The slot holding {@code a} for {@code p} at {@code time}, filled on a miss; -1 when nothing names it. */
    private int slot(long a, long time, int p) {
        int i = (int) ((a ^ a >>> 12) * 0x9E3779B1L >>> 20) & (SLOTS - 1);
        Symbol s = symbol[i];
        if (s != null && address[i] == a && (pid[i] == p || a < 0)
                && (time < 0 || time >= s.from() && time < s.to())) {
            return i;
        }
        s = symbols.symbol(a, time, p);
        if (s == null) {
            return -1;
        }
        address[i] = a;
        pid[i] = p;
        symbol[i] = s;
        dso[i] = symbols.dso(a, time, p);
        return i;
    }

    @Override
    public Symbol symbol(long a, long time, int p) {
        int i = slot(a, time, p);
        return i < 0 ? null : symbol[i];
    }

    @Override
    public String dso(long a, long time, int p) {
        int i = slot(a, time, p);
        return i < 0 ? symbols.dso(a, time, p) : dso[i];
    }

    @Override
    public SourceLine line(long a, long time, int p) {
        return symbols.line(a, time, p);
    }

    @Override
    public String srclineFallback(long a, long time, int p) {
        return symbols.srclineFallback(a, time, p);
    }

    @Override
    public java.util.List<Symbol> named(String name) {
        return symbols.named(name);
    }
}

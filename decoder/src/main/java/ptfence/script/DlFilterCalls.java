package ptfence.script;

import java.io.ByteArrayOutputStream;
import ptfence.dlfilter.DlFilter;
import ptfence.symbol.Symbol;
import ptfence.symbol.Symbolizer;

/**
 * perf's --dlfilter in perf's order. perf hands each sample to the filter as its session delivers it: the samples of
 * every CPU's queue and the recorded events' samples merged by time, which is the printed order (a sample is filtered
 * just before its line). ptdecode makes a CPU's samples ahead of the merge, so the sample is kept with its line (a
 * {@link ScriptMerge.LineCall}) and the filter is called when the line's turn to be printed comes: a filter whose
 * state spans CPUs (a count of the samples without a CPU kept with CPU 0's) counts as under perf.
 */
public final class DlFilterCalls implements ScriptMerge.LineCall {
    private final DlFilter filter;
    private final Symbolizer symbols;
    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();

    public DlFilterCalls(DlFilter filter, Symbolizer symbols) {
        this.filter = filter;
        this.symbols = symbols;
    }

    @Override
    public DlFilter.Sample fresh() {
        DlFilter.Sample d = new DlFilter.Sample();
        // resolve_ip, resolve_addr, resolve_address: the sample's process at the sample's time, looked up when the
        // filter asks (on the printing thread: the symbol tables are shared)
        d.resolver = a -> location(a, a == 0 ? null : symbols.symbol(a, d.time, d.pid), symbols, d.time, d.pid);
        return d;
    }

    /**
     * What a filter's (or a script's) resolve_ip/resolve_addr gets for address {@code a} of process {@code pid} at
     * {@code time}: its symbol {@code sym} (null: none), and its file, the symbol's or the mapping's.
     */
    static DlFilter.Location location(long a, Symbol sym, Symbolizer symbols, long time, int pid) {
        String dso = sym != null && sym.dso() != null ? sym.dso() : a == 0 ? null : symbols.dso(a, time, pid);
        return new DlFilter.Location(sym == null ? null : sym.name(), sym == null ? 0 : sym.start(),
                sym == null ? 0 : sym.end(), dso, a);
    }

    @Override
    public boolean keep(DlFilter.Sample call, LineBytes out) {
        printed.reset();
        boolean keep = filter.keep(call, printed);
        if (printed.size() > 0) {
            out.bytes(printed.toByteArray()); // ahead of the line, or alone where the filter drops it
        }
        return keep;
    }
}

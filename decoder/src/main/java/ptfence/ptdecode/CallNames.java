package ptfence.ptdecode;

import ptfence.calls.Symbolizer;
import ptfence.sideband.Sideband;
import ptfence.symbol.Symbol;
import ptfence.symbol.SymbolCursor;

/**
 * The call views' names from the recording's one symbolizer ({@link ptfence.symbol.RecordingSymbols}), so calls,
 * branches, Perfetto slices and folded stacks name code exactly as the instruction listing does. The views know a
 * CPU; the symbolizer wants the process, which the sideband gives for the CPU at that time.
 */
final class CallNames implements Symbolizer {
    private final Sideband sideband;
    private final SymbolCursor symbols;

    CallNames(ptfence.symbol.Symbolizer symbols, Sideband sideband) {
        this.sideband = sideband;
        this.symbols = new SymbolCursor(symbols);
    }

    @Override
    public String describe(long address, long time, int cpu) {
        Sideband.Task task = time >= 0 ? sideband.taskAt(cpu, time) : null;
        Symbol s = symbols.symbol(address, time, task == null ? -1 : task.pid());
        return s == null ? null : s.describe(address);
    }
}

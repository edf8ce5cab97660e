package ptfence.calls;

import ptfence.symbol.Symbol;

/**
 * Names code addresses for the call views: the function holding {@code address} as run by process {@code pid} (-1:
 * unknown) at perf time {@code time} (-1: unknown), and perf's name of the file or region holding it. The one seam
 * between the views and wherever symbols come from.
 */
public interface Symbolizer {
    /** The function holding {@code address}, or null. */
    Symbol symbol(long address, long time, int pid);

    /** perf's dso for {@code address} (also where no symbol names it), or null where nothing maps it. */
    default String dso(long address, long time, int pid) {
        Symbol s = symbol(address, time, pid);
        return s == null ? null : s.dso();
    }

    /** "name" or "name+0x12", or null. */
    default String describe(long address, long time, int pid) {
        Symbol s = symbol(address, time, pid);
        return s == null ? null : s.describe(address);
    }

    /** The function's name alone (perf's call trace prints no offsets), or null. */
    default String function(long address, long time, int pid) {
        Symbol s = symbol(address, time, pid);
        return s == null ? null : s.name();
    }
}

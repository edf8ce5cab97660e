package ptfence.script;

import java.util.Set;

/**
 * perf script's filters of samples by who and where (--pid, --tid, --comms, --dsos, -S/--symbols with --addr-range):
 * perf's machine__resolve marks a sample filtered by them, so they apply to every sample alike (recorded, synthesized
 * psb and cbr, the branches and calls of every view), never to a trace error, which is no sample. A filtered sample
 * still feeds the thread's stack (perf's decoder fed it before perf script saw the sample). Null sets: no filter.
 */
public record SampleFilters(Set<Integer> pids, Set<Integer> tids, Set<String> comms, Set<String> dsos,
        ScriptConfig.SymbolFilter symbols) {
    public static final SampleFilters NONE = new SampleFilters(null, null, null, null, null);

    /**
     * All of them on a sample of {@code pid}/{@code tid} named {@code comm} at {@code ip}, perf time {@code time}, its
     * file and symbol looked up in {@code symbols} where a file or symbol filter is set.
     */
    public boolean kept(ptfence.symbol.Symbolizer symbols, int pid, int tid, String comm, long ip, long time) {
        if (byThread() && !threadKept(pid, tid, comm)) {
            return false;
        }
        if (!byPlace()) {
            return true;
        }
        ptfence.symbol.Symbol s = ip == 0 ? null : symbols.symbol(ip, time, pid);
        String d = s != null ? s.dso() : ip == 0 ? null : symbols.dso(ip, time, pid);
        return placeKept(ip, d, s == null ? null : s.name());
    }

    /** The thread filters on a sample of {@code pid}/{@code tid} named {@code comm} (null: unknown). */
    public boolean threadKept(int pid, int tid, String comm) {
        return (pids == null || pids.contains(pid)) && (tids == null || tids.contains(tid))
                && (comms == null || comm != null && comms.contains(comm));
    }

    /** Whether any filter is set (none: every sample is kept, nothing need be looked up). */
    public boolean any() {
        return byThread() || byPlace();
    }

    /** Whether a thread filter is set (the sample's name must then be looked up). */
    public boolean byThread() {
        return pids != null || tids != null || comms != null;
    }

    /** Whether the file and symbol filters are set (the sample's place must then be looked up). */
    public boolean byPlace() {
        return dsos != null || symbols != null;
    }

    /**
     * The file and symbol filters on a sample at {@code ip}: {@code dso} its file (null: none; a long name or its
     * last part matches), {@code symbol} the symbol there (null: none, which -S leaves out).
     */
    public boolean placeKept(long ip, String dso, String symbol) {
        if (dsos != null && (dso == null || !dsos.contains(dso) && !dsos.contains(dso.substring(dso.lastIndexOf('/') + 1)))) {
            return false;
        }
        return symbols == null || symbols.keeps(ip, symbol, dso != null);
    }
}

package ptfence.script;

import java.util.Set;
import ptfence.perfdata.IntelPtInfo;

/**
 * Everything a perf-format run of one recording is asked for, resolved and checked once, shared read-only by the
 * CPUs' sinks: the --itrace letters, the fields, the time ranges, the filters, and what the recording says about
 * time and frequency.
 */
public final class ScriptConfig {
    public final ItraceOptions itrace;
    public final FieldSet fields;
    public final PerfEvents events;
    public final TimeRanges time;
    public final IntelPtInfo pt;
    /** --ns: nine decimals. */
    public final boolean nanoseconds;
    public final boolean reltime;
    public final boolean deltatime;
    /** -C; null: every CPU. */
    public final Set<Integer> cpus;
    /** --pid, --tid, --comms, --dsos, -S/--symbols (with --addr-range). */
    public final SampleFilters filters;
    /** The instruction period in TSC ticks, for i...ns and i...t periods. */
    public final long periodTicks;
    /**
     * perf's state of each file's data, which decides which failures to read a file's missing code perf reports (two
     * or one per file, {@link DsoData}); failures where no file is mapped it reports every time.
     */
    public final DsoData dsoData = new DsoData();

    /** --dlfilter: the filter each sample goes through before its line (null: none). */
    public ptfence.dlfilter.DlFilter dlfilter;

    /** -s: the Python script each sample, error and switch goes to instead of a line (null: none). */
    public PythonScript script;

    /** --per-event-dump: each sample's line goes to its event's file, else null. */
    public PerEventDump perEvent;

    /** --full-source-path: srcline with the source file's whole name (perf's srcline_full_filename). */
    public boolean fullSourcePath;

    /** --max-blocks: how many blocks -F brstackinsn prints at most (0: all, perf's default). */
    public int maxBlocks;

    /** TSC ticks per second / max non-turbo ratio / 1000: the kHz one core:bus ratio step is (perf's cbr2khz). */
    public final long cbr2khz;

    public ScriptConfig(ItraceOptions itrace, FieldSet fields, PerfEvents events, TimeRanges time, IntelPtInfo pt,
            boolean nanoseconds, boolean reltime, boolean deltatime, Set<Integer> cpus, SampleFilters filters) {
        this.itrace = itrace;
        this.fields = fields;
        this.events = events;
        this.time = time;
        this.pt = pt;
        this.nanoseconds = nanoseconds;
        this.reltime = reltime;
        this.deltatime = deltatime;
        this.cpus = cpus;
        this.filters = filters;
        long ticks = itrace.period;
        if (itrace.periodType == ItraceOptions.PeriodType.NANOSECS) {
            ticks = nsToTicks(pt, itrace.period);
        }
        this.periodTicks = ticks;
        long tscFreq = nsToTicks(pt, 1_000_000_000L);
        this.cbr2khz = pt.maxNonTurboRatio() == 0 ? 0 : tscFreq / pt.maxNonTurboRatio() / 1000;
    }

    /** perf's intel_pt_ns_to_ticks. */
    static long nsToTicks(IntelPtInfo pt, long ns) {
        long mult = pt.timeMult();
        long shift = pt.timeShift();
        if (mult == 0) {
            return ns;
        }
        long quot = ns / mult;
        long rem = ns % mult;
        return (quot << shift) + (rem << shift) / mult;
    }

    /**
     * -S/--symbols: names, and addresses each with --addr-range bytes after it. An address matches the sample's IP
     * only, never a symbol's start: perf takes every entry that reads as a number out of its symbol list.
     */
    public record SymbolFilter(Set<String> names, long[] addresses, long range) {
        /**
         * True if a sample at {@code ip} in symbol {@code name} (null if none) is kept; an
         * address matches only where a map holds {@code ip} ({@code mapped}), as perf's addr_list.
         */
        public boolean keeps(long ip, String name, boolean mapped) {
            if (name != null && names.contains(name)) {
                return true;
            }
            for (long a : addresses) {
                if (mapped && (ip == a || range > 0 && Long.compareUnsigned(ip - a, range) < 0)) {
                    return true;
                }
            }
            return false;
        }
    }
}

package ptfence.calls;

/**
 * How a line view prints: the text fields of its branch lines and of its synthesized event lines (perf's -F, which
 * perf keeps per event type: a per-thread recording's branches have no cpu, its psb and cbr events do), whether text
 * shows the synthesized events (psb, cbr, ptwrite, power: perf's --itrace p and w) and the trace errors (e), and the
 * --time range [from, to] in perf time (untimed items always).
 */
public record LineOptions(SampleFields fields, SampleFields eventFields, boolean events, boolean errors, long from,
        long to) {
    /** The same fields for branches and events. */
    public LineOptions(SampleFields fields, boolean events, boolean errors, long from, long to) {
        this(fields, fields, events, errors, from, to);
    }
}

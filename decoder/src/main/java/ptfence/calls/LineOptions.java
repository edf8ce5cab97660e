package ptfence.calls;

/**
 * How a line view prints: its text fields (perf's -F), whether text shows the synthesized events (psb, cbr, ptwrite,
 * power: perf's --itrace p and w) and the trace errors (e), and the --time range [from, to] in perf time (untimed
 * items always).
 */
public record LineOptions(SampleFields fields, boolean events, boolean errors, long from, long to) {
}

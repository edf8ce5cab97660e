package ptfence.sideband;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import ptfence.cli.BadInputException;
import ptfence.output.SidebandDump;
import ptfence.output.TextSink;

/**
 * Prints perf_event sideband files (libipt's "pevent" format: a plain sequence of perf_event records,
 * each followed by the sample_id fields its sample_type selects) interleaved with the trace by time, the
 * way ptdump's {@code --pevent} / {@code --sb:*} options do. Several files merge by timestamp.
 */
public final class PeventDump implements SidebandDump {
    /** {@code --sb:compact}. */
    public static final int COMPACT = 1;
    /** {@code --sb:verbose}. */
    public static final int VERBOSE = 2;
    /** {@code --sb:filename}. */
    public static final int FILENAME = 4;
    /** {@code --sb:offset}. */
    public static final int FILE_OFFSET = 8;
    /** {@code --sb:time}. */
    public static final int TSC = 16;

    /**
     * How to read one sideband file: perf_event_attr.sample_type (and per-identifier overrides), and the
     * perf_event_mmap_page time conversion (time_zero, time_shift, time_mult), plus a TSC offset that
     * shows the file's records earlier.
     */
    public record Config(long sampleType, List<long[]> sampleConfig, long timeZero, int timeShift, long timeMult,
                         long tscOffset) {
        public static final Config DEFAULT = new Config(0, List.of(), 0, 0, 1, 0);

        public Config withSampleType(long v) { return new Config(v, sampleConfig, timeZero, timeShift, timeMult, tscOffset); }
        public Config withTimeZero(long v) { return new Config(sampleType, sampleConfig, v, timeShift, timeMult, tscOffset); }
        public Config withTimeShift(int v) { return new Config(sampleType, sampleConfig, timeZero, v, timeMult, tscOffset); }
        public Config withTimeMult(long v) { return new Config(sampleType, sampleConfig, timeZero, timeShift, v, tscOffset); }
        public Config withTscOffset(long v) { return new Config(sampleType, sampleConfig, timeZero, timeShift, timeMult, v); }

        /** Adds {@code identifier:sampleType} (records whose trailing IDENTIFIER matches use that sample_type). */
        public Config withSampleConfig(long identifier, long type) {
            List<long[]> l = new ArrayList<>(sampleConfig);
            l.add(new long[] {identifier, type});
            return new Config(sampleType, List.copyOf(l), timeZero, timeShift, timeMult, tscOffset);
        }
    }

    private final int flags;
    private final boolean warnings;
    private final List<PeventStream> waiting = new ArrayList<>();
    private final List<PeventStream> active = new ArrayList<>();
    private boolean initialized;

    public PeventDump(int flags, boolean warnings) {
        this.flags = flags;
        this.warnings = warnings;
    }

    /**
     * Adds a sideband file; {@code spec} may carry ptdump's {@code :from[-to]} range.
     *
     * @throws BadInputException if the file cannot be read
     */
    public void add(String spec, Config config) {
        waiting.add(0, PeventStream.open(spec, config, Path.of("")));
    }

    /** Whether any sideband file was added. */
    public boolean isEmpty() {
        return waiting.isEmpty() && active.isEmpty();
    }

    private void init(TextSink out) {
        initialized = true;
        while (!waiting.isEmpty()) {
            PeventStream s = waiting.remove(0);
            if (fetch(s, out)) {
                insert(s);
            }
        }
    }

    private void insert(PeventStream s) {
        int k = 0;
        while (k < active.size() && Long.compareUnsigned(s.tsc, active.get(k).tsc) > 0) {
            k++;
        }
        active.add(k, s);
    }

    @Override
    public void dumpUntil(long tsc, TextSink out) {
        if (!initialized) {
            init(out);
        }
        while (!active.isEmpty() && Long.compareUnsigned(tsc, active.get(0).tsc) >= 0) {
            PeventStream s = active.remove(0);
            print(s, out);
            if (fetch(s, out)) {
                insert(s);
            }
        }
    }

    /** Reads the next record; false (and the stream is dropped) at the end or on an error. */
    private boolean fetch(PeventStream s, TextSink out) {
        String err = s.advance();
        if (err != null) {
            if (err != PeventStream.EOS) {
                out.str("[").str(s.name).ch(':').hex16(s.current).str(" sideband error: ").str(err).ch(']').nl();
            }
            return false;
        }
        return true;
    }

    private void print(PeventStream s, TextSink out) {
        s.print(out, flags);
    }
}

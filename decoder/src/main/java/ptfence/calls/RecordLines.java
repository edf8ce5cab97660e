package ptfence.calls;

import java.util.Arrays;
import ptfence.script.ScriptMerge;

/**
 * The lines of the recording's own records a text call view prints among its lines ({@code --show-*-events}), as
 * the sample views' printer makes them ({@link ScriptMerge#collect}): perf time ascending, each with the place of its
 * time field, which the view writes as it writes its own (--reltime and --deltatime count over both).
 */
public final class RecordLines implements ScriptMerge.LineSink {
    private long[] times = new long[64];
    private int[] ends = new int[64];
    private int[] splits = new int[64];
    private byte[] text = new byte[4096];
    private int count;
    private int length;
    private int next;

    @Override
    public void line(long time, byte[] b, int from, int split, int to) {
        if (count == times.length) {
            times = Arrays.copyOf(times, count * 2);
            ends = Arrays.copyOf(ends, count * 2);
            splits = Arrays.copyOf(splits, count * 2);
        }
        int len = to - from;
        if (length + len > text.length) {
            text = Arrays.copyOf(text, Math.max(text.length * 2, length + len));
        }
        System.arraycopy(b, from, text, length, len);
        times[count] = time;
        splits[count] = split < 0 ? -1 : length + split - from;
        length += len;
        ends[count++] = length;
    }

    /** Whether a line not printed yet is at or before perf time {@code time} (ties go before the view's lines). */
    boolean nextAtOrBefore(long time) {
        return next < count && times[next] <= time;
    }

    /** Prints the next line through {@code perf}. */
    void printNext(PerfLines perf) throws java.io.IOException {
        int i = next++;
        perf.recordLine(text, i == 0 ? 0 : ends[i - 1], splits[i], ends[i], times[i]);
    }
}

package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What a BPF program wrote with bpf_perf_event_output(): the PERF_SAMPLE_RAW payload of a {@code bpf-output} event's
 * sample (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT). The one parser of RAW payloads: the fields before RAW
 * (READ, CALLCHAIN) are stepped over as the attr lays them out.
 */
public final class BpfOutput {
    /** PERF_COUNT_SW_BPF_OUTPUT. */
    public static final long SW_BPF_OUTPUT = 10;
    private static final long READ_TOTAL_TIME_ENABLED = 1, READ_TOTAL_TIME_RUNNING = 2, READ_ID = 4, READ_GROUP = 8,
            READ_LOST = 16;

    private BpfOutput() {
    }

    /** Whether samples of this event are what BPF programs wrote (perf's evsel__is_bpf_output). */
    public static boolean isBpfOutput(EventAttr a) {
        return a != null && a.type() == 1 && a.config() == SW_BPF_OUTPUT;
    }

    /**
     * The RAW bytes of a sample: {@code raw_size} bytes, the kernel's padding to 8 bytes included (as perf shows
     * them); empty when the sample has no RAW field. A size past the record is a {@link BadPerfData}.
     */
    public static ByteBuffer payload(PerfRecord.Sample s, EventAttr attr) {
        long st = s.sampleType();
        if ((st & SampleType.RAW) == 0) {
            return ByteBuffer.allocate(0);
        }
        ByteBuffer b = s.rest().order(ByteOrder.LITTLE_ENDIAN);
        int p = b.position();
        if ((st & SampleType.READ) != 0) {
            long rf = attr == null ? 0 : attr.readFormat();
            int perValue = 1 + ((rf & READ_ID) != 0 ? 1 : 0) + ((rf & READ_LOST) != 0 ? 1 : 0);
            int times = ((rf & READ_TOTAL_TIME_ENABLED) != 0 ? 1 : 0) + ((rf & READ_TOTAL_TIME_RUNNING) != 0 ? 1 : 0);
            if ((rf & READ_GROUP) != 0) {
                long nr = need(b, p, 8).getLong(p);
                p += 8 + 8 * times + (int) Math.min(nr * perValue * 8, Integer.MAX_VALUE - 1024);
            } else {
                p += 8 * (perValue + times);
            }
        }
        if ((st & SampleType.CALLCHAIN) != 0) {
            long nr = need(b, p, 8).getLong(p);
            p += 8 + (int) Math.min(nr * 8, Integer.MAX_VALUE - 1024);
        }
        int size = need(b, p, 4).getInt(p);
        need(b, p + 4, size);
        return b.slice(p + 4, size).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static ByteBuffer need(ByteBuffer b, int at, int n) {
        if (n < 0 || at < 0 || (long) at + n > b.limit()) {
            throw new BadPerfData("sample's RAW field: " + n + " bytes at " + at + " past the sample's " + b.limit());
        }
        return b;
    }
}

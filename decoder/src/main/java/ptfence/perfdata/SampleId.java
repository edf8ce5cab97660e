package ptfence.perfdata;

/**
 * The {@code struct sample_id} trailer of a kernel record (attr.sample_id_all). {@code layout} is the attr's
 * sample_type restricted to the trailer's fields; a field whose bit is absent is 0. Fields appear in the
 * order TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER.
 */
public record SampleId(long layout, int pid, int tid, long time, long id, long streamId, int cpu, int res,
        long identifier) {

    public static final SampleId NONE = new SampleId(0, 0, 0, 0, 0, 0, 0, 0, 0);

    /** The sample_type bits the trailer can carry. */
    public static final long TRAILER_BITS = SampleType.TID | SampleType.TIME | SampleType.ID | SampleType.STREAM_ID
            | SampleType.CPU | SampleType.IDENTIFIER;

    public SampleId {
        layout &= TRAILER_BITS;
        if ((layout & SampleType.TID) == 0) {
            pid = 0;
            tid = 0;
        }
        if ((layout & SampleType.TIME) == 0) {
            time = 0;
        }
        if ((layout & SampleType.ID) == 0) {
            id = 0;
        }
        if ((layout & SampleType.STREAM_ID) == 0) {
            streamId = 0;
        }
        if ((layout & SampleType.CPU) == 0) {
            cpu = 0;
            res = 0;
        }
        if ((layout & SampleType.IDENTIFIER) == 0) {
            identifier = 0;
        }
    }

    /** Bytes the trailer takes for the given sample_type. */
    public static int size(long sampleType) {
        return Long.bitCount(sampleType & TRAILER_BITS) * 8;
    }

    public int size() {
        return size(layout);
    }

    public boolean has(long bit) {
        return (layout & bit) != 0;
    }
}

package ptfence.perfdata;

import java.nio.ByteBuffer;

/**
 * One AUX area buffer of a recording: the payload of a PERF_RECORD_AUXTRACE, where it sits in the file
 * ({@code fileOffset} of the trace bytes), and what the record says of it (offset in the AUX area, reference,
 * idx = mmap index, tid and cpu). {@code data} is a read-only slice of the mapped file.
 */
public record AuxBuffer(long fileOffset, long size, long offset, long reference, int idx, int tid, int cpu,
        ByteBuffer data) {

    @Override
    public ByteBuffer data() {
        return data.duplicate();
    }
}

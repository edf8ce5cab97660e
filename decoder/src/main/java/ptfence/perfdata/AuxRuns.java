package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * AUX buffers grouped into runs: consecutive buffers of one mmap index whose AUX offsets join up are one stream
 * (full-trace mode drains the ring in pieces and a packet may straddle two); a snapshot, a gap or another
 * CPU/thread starts a new run.
 */
public final class AuxRuns {
    private static final long MAX_JOINED = Integer.MAX_VALUE - 64;

    private AuxRuns() {
    }

    /**
     * True if {@code b} continues {@code last}'s run (whose buffers total {@code runBytes}). perf record pads each
     * buffer to 8 bytes with zeros and counts them in its size, so the next buffer starts up to 7 bytes before the
     * end of the previous one.
     */
    public static boolean continues(AuxBuffer last, AuxBuffer b, boolean snapshot, long runBytes) {
        long overlap = last.offset() + last.size() - b.offset();
        return !snapshot && last.cpu() == b.cpu() && last.tid() == b.tid() && overlap >= 0 && overlap < 8
                && zeroTail(last, (int) overlap) && runBytes + b.size() <= MAX_JOINED;
    }

    /** {@code last} without the padding {@code b} overlaps (call after {@link #continues} said yes). */
    public static AuxBuffer trimFor(AuxBuffer last, AuxBuffer b) {
        int n = (int) (last.offset() + last.size() - b.offset());
        if (n == 0) {
            return last;
        }
        ByteBuffer d = last.data();
        d.limit(d.limit() - n);
        return new AuxBuffer(last.fileOffset(), last.size() - n, last.offset(), last.reference(), last.idx(),
                last.tid(), last.cpu(), d.slice());
    }

    private static boolean zeroTail(AuxBuffer b, int n) {
        ByteBuffer d = b.data();
        for (int i = d.limit() - n; i < d.limit(); i++) {
            if (i < 0 || d.get(i) != 0) {
                return false;
            }
        }
        return true;
    }

    /** All runs of {@code buffers} (in file order), each run's buffers in order; runs ordered by first file offset. */
    public static List<List<AuxBuffer>> of(List<AuxBuffer> buffers, boolean snapshot) {
        Map<Integer, List<AuxBuffer>> open = new LinkedHashMap<>();
        List<List<AuxBuffer>> runs = new ArrayList<>();
        for (AuxBuffer b : buffers) {
            List<AuxBuffer> run = open.get(b.idx());
            if (run != null) {
                AuxBuffer last = run.get(run.size() - 1);
                long total = run.stream().mapToLong(AuxBuffer::size).sum();
                if (continues(last, b, snapshot, total)) {
                    run.set(run.size() - 1, trimFor(last, b));
                    run.add(b);
                    continue;
                }
            }
            List<AuxBuffer> fresh = new ArrayList<>();
            fresh.add(b);
            runs.add(fresh);
            open.put(b.idx(), fresh);
        }
        return runs;
    }

    /** A run's bytes as one buffer (the buffer itself when the run has one). */
    public static ByteBuffer bytes(List<AuxBuffer> run) {
        if (run.size() == 1) {
            return run.get(0).data();
        }
        long total = run.stream().mapToLong(AuxBuffer::size).sum();
        ByteBuffer data = ByteBuffer.allocate((int) total);
        for (AuxBuffer b : run) {
            data.put(b.data());
        }
        return data.flip();
    }
}

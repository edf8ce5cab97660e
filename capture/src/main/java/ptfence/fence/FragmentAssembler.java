package ptfence.fence;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * Puts the fence's records back together where the kernel wrote them in fragments ({@link FenceRecord#KIND_FRAG}: a
 * kernel without the dynptr-read kfuncs, {@link KernelLayout#copiesInChunks}). A record's fragments come from one
 * program run on one CPU, so (key, CPU) names it; they may arrive in any order and interleave with other CPUs'.
 * A record is handed on once all its bytes are in; one that misses a fragment (the ring was full) is dropped after
 * {@code staleNanos} and counted. Used by one consumer thread at a time.
 */
final class FragmentAssembler {
    /** Receives a whole record, laid out as a ring record of its kind would be. */
    interface Whole {
        void accept(ByteBuffer data, int offset, int length);
    }

    private record Key(long key, int cpu) {}

    private static final class Partial {
        final byte[] bytes;
        final long since = System.nanoTime();
        int got;

        Partial(int total) { bytes = new byte[total]; }
    }

    /** The largest record the programs write (a 16 MiB dynptr record's worth). */
    private static final int MAX_TOTAL = 1 << 24;

    private final Map<Key, Partial> partial = new HashMap<>();
    private long dropped, malformed;

    /** One KIND_FRAG ring record; {@code whole} gets the record it completes, if any. */
    void accept(ByteBuffer ring, int at, int payloadLen, Whole whole) {
        ByteBuffer b = ring.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int total = b.getInt(at + FenceRecord.FRAG_TOTAL), off = b.getInt(at + FenceRecord.FRAG_OFF),
                len = b.getInt(at + FenceRecord.FRAG_LEN);
        if (payloadLen < FenceRecord.FRAG_HEADER + len || total <= 0 || total > MAX_TOTAL || off < 0 || len < 0
                || (long) off + len > total) {
            malformed++;
            return;
        }
        Key k = new Key(b.getLong(at + FenceRecord.FRAG_KEY), b.getInt(at + FenceRecord.FRAG_CPU));
        Partial p = partial.computeIfAbsent(k, x -> new Partial(total));
        if (p.bytes.length != total) {
            malformed++;
            return;
        }
        b.get(at + FenceRecord.FRAG_HEADER, p.bytes, off, len);
        p.got += len;
        if (p.got >= total) {
            partial.remove(k);
            whole.accept(ByteBuffer.wrap(p.bytes).order(ByteOrder.LITTLE_ENDIAN), 0, total);
        }
    }

    /** Drops the records still missing bytes after {@code staleNanos}; returns how many. */
    int dropStale(long staleNanos) {
        long now = System.nanoTime();
        int n = 0;
        for (Iterator<Partial> it = partial.values().iterator(); it.hasNext(); ) {
            if (now - it.next().since >= staleNanos) {
                it.remove();
                n++;
            }
        }
        dropped += n;
        return n;
    }

    /** Records dropped incomplete, and fragments that could not be placed. */
    long lost() { return dropped + malformed; }
}

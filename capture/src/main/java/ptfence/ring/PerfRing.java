package ptfence.ring;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import ptfence.sys.MappedMemory;
import ptfence.sys.Mmap;
import ptfence.sys.PerfEvent;

/**
 * The consumer side of one perf event's mmap ring (docs/kernel-interfaces.md §2): the user page, the data ring of
 * records and, optionally, the AUX area. {@link #drain} hands each record over as a little-endian buffer positioned
 * at its header — the same scratch buffer every time, so the loop allocates nothing; records that wrap around the end
 * of the ring are reassembled.
 */
public final class PerfRing implements AutoCloseable {
    /** Receives one record: {@code record} holds exactly the record (header included), valid during the call. */
    @FunctionalInterface
    public interface RecordConsumer {
        void accept(ByteBuffer record, PerfRing ring) throws java.io.IOException;
    }

    /** Receives AUX bytes {@code [offset, offset+bytes.remaining())} of the AUX stream, valid during the call. */
    @FunctionalInterface
    public interface AuxConsumer {
        void accept(ByteBuffer bytes, long offset, PerfRing ring) throws java.io.IOException;
    }

    private static final int TIME_SHIFT = 50, TIME_MULT = 52, CAPABILITIES = 40, TIME_ZERO = 64;
    private static final int DATA_HEAD = 1024, DATA_TAIL = 1032, DATA_OFFSET = 1040, DATA_SIZE = 1048,
            AUX_HEAD = 1056, AUX_TAIL = 1064, AUX_OFFSET = 1072, AUX_SIZE = 1080;
    private static final long CAP_USER_TIME_ZERO = 0x10;

    private final PerfEvent event;
    private final MappedMemory map;
    private final int dataOffset;
    private final int dataSize;
    private final ByteBuffer scratch = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    private MappedMemory aux;
    private ByteBuffer auxCopy;
    private long records;
    private long bytes;
    private long auxBytes;

    private PerfRing(PerfEvent event, MappedMemory map) {
        this.event = event;
        this.map = map;
        this.dataOffset = (int) map.getLong(DATA_OFFSET);
        this.dataSize = (int) map.getLong(DATA_SIZE);
    }

    /** Maps {@code dataPages} (a power of two) of ring for {@code event}. */
    public static PerfRing map(PerfEvent event, int dataPages) {
        return new PerfRing(event, event.mapRing(dataPages));
    }

    public PerfEvent event() {
        return event;
    }

    public int dataSize() {
        return dataSize;
    }

    /**
     * Maps an AUX area of {@code pages} (a power of two) after the data ring. READ_WRITE is the normal mode (the
     * kernel stops at a full buffer and flags the AUX record TRUNCATED); READ_ONLY the overwrite mode for snapshots.
     */
    public void mapAux(int pages, Mmap.Protection protection) {
        if (Integer.bitCount(pages) != 1) {
            throw new IllegalArgumentException("AUX area of " + pages + " pages: must be a power of two");
        }
        long offset = dataOffset + (long) dataSize;
        long size = (long) pages * Mmap.PAGE_SIZE;
        map.putLong(AUX_OFFSET, offset);
        map.putLong(AUX_SIZE, size);
        aux = event.mapAux(offset, size, protection);
        auxCopy = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    }

    public boolean hasAux() {
        return aux != null;
    }

    /** Delivers every record the kernel has published, then frees their space. Returns how many. */
    public int drain(RecordConsumer consumer) throws java.io.IOException {
        long head = map.getLongAcquire(DATA_HEAD);
        long tail = map.getLong(DATA_TAIL);
        int n = 0;
        try {
            while (tail < head) {
                int at = (int) (tail % dataSize);
                int size = Short.toUnsignedInt(map.getShort(dataOffset + at + 6));
                if (size < 8 || size > head - tail) {
                    throw new IllegalStateException("perf ring " + event.label() + ": corrupt record size " + size
                            + " at " + tail);
                }
                scratch.clear();
                int first = Math.min(size, dataSize - at);
                map.get(dataOffset + at, scratch, first);
                if (first < size) {
                    map.get(dataOffset, scratch, size - first);
                }
                scratch.flip();
                consumer.accept(scratch, this);
                tail += size;
                bytes += size;
                n++;
            }
        } finally {
            map.putLongRelease(DATA_TAIL, tail);
        }
        records += n;
        return n;
    }

    private long peekPosition;
    private final ByteBuffer peekScratch = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);

    /**
     * For a second thread that must react before the consumer gets there: delivers the records published since the
     * last peek without freeing them. A record the consumer has already freed (and the kernel may be overwriting) is
     * skipped, so a peeker can miss records but never sees a torn one.
     */
    public int peek(RecordConsumer consumer) throws java.io.IOException {
        long head = map.getLongAcquire(DATA_HEAD);
        int n = 0;
        while (true) {
            long tail = map.getLongAcquire(DATA_TAIL);
            if (peekPosition < tail) peekPosition = tail;
            if (peekPosition >= head) break;
            int at = (int) (peekPosition % dataSize);
            int size = Short.toUnsignedInt(map.getShort(dataOffset + at + 6));
            if (size < 8 || size > head - peekPosition) break;
            peekScratch.clear();
            int first = Math.min(size, dataSize - at);
            map.get(dataOffset + at, peekScratch, first);
            if (first < size) map.get(dataOffset, peekScratch, size - first);
            peekScratch.flip();
            if (map.getLongAcquire(DATA_TAIL) > peekPosition) continue; // freed while we copied: start again at tail
            consumer.accept(peekScratch, this);
            peekPosition += size;
            n++;
        }
        return n;
    }

    /** Delivers the AUX bytes written since the last call (normal mode), then frees their space. */
    public long drainAux(AuxConsumer consumer) throws java.io.IOException {
        if (aux == null) {
            return 0;
        }
        long head = map.getLongAcquire(AUX_HEAD);
        long tail = map.getLong(AUX_TAIL);
        if (head <= tail) {
            return 0;
        }
        long n = head - tail;
        copyAux(tail, n);
        consumer.accept(auxCopy, tail, this);
        map.putLongRelease(AUX_TAIL, head);
        auxBytes += n;
        return n;
    }

    /**
     * Snapshot (overwrite) mode: delivers the newest bytes of the AUX area, at most its size. The caller disables the
     * event around this call so the hardware does not write while it copies.
     */
    public long snapshotAux(AuxConsumer consumer) throws java.io.IOException {
        if (aux == null) {
            return 0;
        }
        long head = map.getLongAcquire(AUX_HEAD);
        long n = Math.min(head, aux.length());
        if (n == 0) {
            return 0;
        }
        copyAux(head - n, n);
        consumer.accept(auxCopy, head - n, this);
        auxBytes += n;
        return n;
    }

    private void copyAux(long from, long n) {
        int size = (int) aux.length();
        int at = (int) (from % size);
        auxCopy.clear();
        int first = (int) Math.min(n, size - at);
        aux.get(at, auxCopy, first);
        if (first < n) {
            aux.get(0, auxCopy, (int) (n - first));
        }
        auxCopy.flip();
    }

    public long records() {
        return records;
    }

    public long bytes() {
        return bytes;
    }

    public long auxBytes() {
        return auxBytes;
    }

    /** The user page's clock conversion, for AUXTRACE_INFO and TIME_CONV. */
    public TimeConversion timeConversion() {
        long caps = map.getLong(CAPABILITIES);
        return new TimeConversion(Short.toUnsignedInt(map.getShort(TIME_SHIFT)),
                Integer.toUnsignedLong(map.getInt(TIME_MULT)), map.getLong(TIME_ZERO),
                (caps & CAP_USER_TIME_ZERO) != 0);
    }

    /** TSC to perf time: {@code time = zero + (cyc >> shift) * mult + (((cyc & mask) * mult) >> shift)}. */
    public record TimeConversion(int shift, long mult, long zero, boolean capUserTimeZero) {}

    @Override
    public void close() {
        if (aux != null) {
            aux.close();
            aux = null;
        }
        map.close();
    }
}

package ptfence.ring;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Consumer side of a BPF_MAP_TYPE_RINGBUF, without libbpf. The kernel maps a writable consumer page
 * ({@code u64 consumer_pos}) and a read-only producer area: a page with {@code u64 producer_pos}, then the data
 * (size a power of two) mapped twice back to back, so a record that wraps reads linearly. Each record is an 8-byte
 * header ({@code u32 len} with BUSY and DISCARD bits, u32 reserved) and the payload, 8-aligned.
 */
public final class BpfRingBuffer {
    public static final int PAGE = 4096;
    private static final int BUSY = 0x80000000, DISCARD = 0x40000000, LEN_MASK = 0x3fffffff, HDR = 8;

    private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    /** Receives each committed record; {@code data} is valid only during the call. */
    @FunctionalInterface
    public interface RecordHandler {
        void record(ByteBuffer data, int offset, int length);
    }

    private final ByteBuffer consumerPage;
    private final ByteBuffer producerPage;
    private final ByteBuffer data;
    private final long mask;
    private long consumed;
    private long discarded;

    /**
     * @param consumerPage the writable first page of the map
     * @param producer     the read-only mapping at offset PAGE: one page, then 2 × size of data
     * @param size         the map's max_entries (data size, a power of two)
     */
    public BpfRingBuffer(ByteBuffer consumerPage, ByteBuffer producer, int size) {
        if (Integer.bitCount(size) != 1) throw new IllegalArgumentException("ring size " + size + " is not a power of 2");
        if (producer.capacity() < PAGE + 2L * size)
            throw new IllegalArgumentException("producer mapping of " + producer.capacity() + " bytes for ring " + size);
        this.consumerPage = consumerPage;
        this.producerPage = producer;
        this.data = producer.slice(PAGE, 2 * size).order(ByteOrder.LITTLE_ENDIAN);
        this.mask = size - 1;
    }

    /** Bytes committed by producers and not yet consumed (including records still being written). */
    public long pending() {
        return (long) LONGS.getAcquire(producerPage, 0) - (long) LONGS.getAcquire(consumerPage, 0);
    }

    /** Delivers every committed record in order, releasing each one back to the kernel; returns the count. */
    public int poll(RecordHandler handler) {
        long c = (long) LONGS.getAcquire(consumerPage, 0);
        long p = (long) LONGS.getAcquire(producerPage, 0);
        int n = 0;
        while (c < p) {
            int at = (int) (c & mask);
            int len = (int) INTS.getAcquire(data, at);
            if ((len & BUSY) != 0) break;             // still being written; the next poll gets it
            int payload = len & LEN_MASK;
            if ((len & DISCARD) == 0) {
                handler.record(data, at + HDR, payload);
                n++;
            } else {
                discarded++;
            }
            c += (HDR + payload + 7) & ~7L;
            LONGS.setRelease(consumerPage, 0, c);
            consumed++;
        }
        return n;
    }

    /** Records released so far, discarded ones included. */
    public long consumed() { return consumed; }

    public long discarded() { return discarded; }
}

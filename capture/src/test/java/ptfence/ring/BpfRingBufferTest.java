package ptfence.ring;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The consumer protocol against a ring laid out as the kernel's ringbuf.c lays it out (double-mapped data
 * simulated by writing each byte at both positions).
 */
class BpfRingBufferTest {
    static final int SIZE = 4096;
    final ByteBuffer consumer = ByteBuffer.allocateDirect(4096).order(ByteOrder.LITTLE_ENDIAN);
    final ByteBuffer producer = ByteBuffer.allocateDirect(4096 + 2 * SIZE).order(ByteOrder.LITTLE_ENDIAN);
    long prod;

    /** What the kernel does: header at prod, payload after, then producer_pos advances (8-aligned). */
    void produce(byte[] payload, int flags) {
        int at = (int) (prod & (SIZE - 1));
        putData(at, new byte[] {(byte) payload.length, (byte) (payload.length >> 8), (byte) (payload.length >> 16),
                (byte) ((payload.length >> 24) | (flags >>> 24))});
        putData(at + 8, payload);
        prod += (8 + payload.length + 7) & ~7;
        producer.putLong(0, prod);
    }

    void putData(int at, byte[] b) {
        for (int i = 0; i < b.length; i++) {
            int pos = (at + i) & (SIZE - 1);
            producer.put(4096 + pos, b[i]);
            producer.put(4096 + SIZE + pos, b[i]);
        }
    }

    @Test
    void deliversInOrderSkipsDiscardedStopsAtBusyAndReadsAcrossTheWrap() {
        BpfRingBuffer rb = new BpfRingBuffer(consumer, producer, SIZE);
        List<String> got = new ArrayList<>();
        BpfRingBuffer.RecordHandler h = (d, off, len) -> {
            byte[] b = new byte[len];
            d.get(off, b);
            got.add(new String(b));
        };
        produce("first".getBytes(), 0);
        produce("dropped".getBytes(), 0x40000000);
        produce("third!".getBytes(), 0);
        assertEquals(2, rb.poll(h));
        assertEquals(List.of("first", "third!"), got);
        assertEquals(1, rb.discarded());
        assertEquals(prod, consumer.getLong(0), "consumer_pos released to the producer position");

        // A record still being written stops the consumer until it is committed.
        long before = prod;
        produce("busy".getBytes(), 0x80000000);
        assertEquals(0, rb.poll(h));
        assertEquals(before, consumer.getLong(0));
        int at = (int) (before & (SIZE - 1));
        putData(at + 3, new byte[] {0});
        assertEquals(1, rb.poll(h));

        // Fill up to the end so that the next record wraps: it must still read as one piece.
        got.clear();
        while ((prod & (SIZE - 1)) < SIZE - 64) {
            produce(new byte[40], 0);
            rb.poll((d, o, l) -> {});
        }
        String wrapped = "x".repeat(200);
        produce(wrapped.getBytes(), 0);
        assertEquals(1, rb.poll(h));
        assertEquals(List.of(wrapped), got);
        assertEquals(0, rb.pending());
    }
}

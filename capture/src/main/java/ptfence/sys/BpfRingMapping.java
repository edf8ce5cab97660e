package ptfence.sys;

import java.nio.ByteBuffer;

/**
 * The two mappings of a BPF ring buffer map: the writable consumer page and the read-only producer area (producer
 * page + data mapped twice, so a record that wraps reads linearly). Exposed as ByteBuffers; unmapped on close.
 */
public final class BpfRingMapping implements AutoCloseable {
    private final MappedMemory consumer, producer;

    private BpfRingMapping(MappedMemory consumer, MappedMemory producer) {
        this.consumer = consumer;
        this.producer = producer;
    }

    /** Maps ring buffer {@code map} of {@code size} data bytes (its max_entries). */
    public static BpfRingMapping map(BpfFd map, int size) throws BpfException {
        int page = Mmap.PAGE_SIZE;
        MappedMemory c;
        try {
            c = Mmap.map(map.fd(), 0, page, Mmap.Protection.READ_WRITE, map + " consumer page");
        } catch (SyscallException e) {
            throw new BpfException(e.call(), e.errno(), null);
        }
        try {
            // The kernel refuses a writable mapping of the producer side.
            return new BpfRingMapping(c, Mmap.map(map.fd(), page, page + 2L * size, Mmap.Protection.READ_ONLY,
                    map + " producer area"));
        } catch (SyscallException e) {
            c.close();
            throw new BpfException(e.call(), e.errno(), null);
        }
    }

    public ByteBuffer consumerPage() { return consumer.slice(0, (int) consumer.length()); }

    public ByteBuffer producerArea() { return producer.slice(0, (int) producer.length()).asReadOnlyBuffer(); }

    @Override
    public void close() {
        producer.close();
        consumer.close();
    }
}

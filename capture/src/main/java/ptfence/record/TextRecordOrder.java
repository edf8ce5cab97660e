package ptfence.record;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import ptfence.ring.PerfRing;

/**
 * The kernel-text records of one drain (KSYMBOL, BPF_EVENT, TEXT_POKE: one ring per CPU) handed on in time order,
 * not ring by ring. The fence's tracker turns each TEXT_POKE and each copy made at one into a version that ends
 * the one before, so it needs them in the order they happened: drained CPU by CPU, a dispatcher switch made on CPU 1
 * came after a later one made on CPU 0 (the guest's XDP churn moves between its 2 CPUs), and the earlier switch
 * ended the later version, its half held the wrong program from then on; and two flips of one static key on two
 * CPUs left the archive with the older bytes (6.1: a jump label's nop at 186.99 s handled before its jmp at 185.03 s). Records without a time keep their place
 * before the timed ones (a stable sort); records published while a drain runs wait for the next one, as before.
 */
final class TextRecordOrder {
    /** Receives one record (its size already repaired) and its time. */
    interface Consumer {
        void accept(ByteBuffer rec) throws IOException;
    }

    private final int trailer;
    private final List<ByteBuffer> held = new ArrayList<>();

    /** @param trailer the sample_id trailer's size (its time is the trailer's first field) */
    TextRecordOrder(int trailer) {
        this.trailer = trailer;
    }

    /** Drains every ring, then delivers what they held, oldest first. */
    void drain(List<PerfRing> rings, Consumer consumer) throws IOException {
        held.clear();
        for (PerfRing r : rings) {
            r.drain((rec, ring) -> {
                ByteBuffer copy = ByteBuffer.allocate(rec.remaining()).order(ByteOrder.LITTLE_ENDIAN);
                copy.put(rec.duplicate()).flip();
                held.add(copy);
            });
        }
        try {
            for (ByteBuffer rec : inTimeOrder(held)) consumer.accept(rec);
        } finally {
            held.clear();
        }
    }

    /** The records sorted by time, stably (those without a time first, in their order). */
    List<ByteBuffer> inTimeOrder(List<ByteBuffer> records) {
        records.sort(Comparator.comparingLong(this::time));
        return records;
    }

    /** The record's time (the sample_id trailer's), 0 where it has none. */
    long time(ByteBuffer rec) {
        int size = KernelRecordSizes.trueSize(rec, Short.toUnsignedInt(rec.getShort(6)), trailer);
        return size >= 8 + trailer ? rec.getLong(size - trailer + 8) : 0;
    }
}

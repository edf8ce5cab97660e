package ptfence.record;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import ptfence.perfdata.RecordTypes;

class TextRecordOrderTest {
    /** A PERF_RECORD_TEXT_POKE as the kernel writes it, with a 32-byte sample_id trailer (pid/tid, time, id, cpu). */
    static ByteBuffer poke(long address, byte[] old, byte[] now, long time, int cpu) {
        int body = (4 + old.length + now.length + 7) & ~7, size = 16 + body + 32;
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(RecordTypes.TEXT_POKE).putShort((short) 0).putShort((short) size).putLong(address)
                .putShort((short) old.length).putShort((short) now.length).put(old).put(now);
        b.position(16 + body);
        b.putInt(1).putInt(1).putLong(time).putLong(7).putInt(cpu).putInt(0);
        return b.flip();
    }

    static byte[] b(int... v) {
        byte[] out = new byte[v.length];
        for (int i = 0; i < v.length; i++) out[i] = (byte) v[i];
        return out;
    }

    /**
     * Debian 6.1 in the guest, XDP churn: the static call trampoline's switches at 0xffffffff81e01330 landed in the
     * rings of both CPUs; drained ring by ring, a later switch (to half 0x800, CPU 0) was applied before an earlier
     * one (to half 0, CPU 1) and that half's versions collapsed to nothing at one time. In time order they do not.
     */
    @Test
    void pokesFromTwoCpusComeInTheOrderTheyHappened() {
        long site = 0xffffffff81e01330L;
        byte[] toNop = b(0xe9, 0xbb, 0xe1, 0x44, 0xff), toHalf0 = b(0xe9, 0xcb, 0xfa, 0x21, 0x3e),
                toHalf1 = b(0xe9, 0xcb, 0x02, 0x22, 0x3e);
        List<ByteBuffer> drained = new ArrayList<>(List.of(
                poke(site, toNop, toHalf0, 170_711_777_090L, 0),      // ring of CPU 0
                poke(site, toHalf1, toNop, 170_946_719_505L, 0),
                poke(site, toNop, toHalf1, 170_790_872_029L, 1),      // ring of CPU 1
                poke(site, toNop, toHalf0, 171_039_894_891L, 1)));
        TextRecordOrder order = new TextRecordOrder(32);
        List<Long> times = order.inTimeOrder(drained).stream().map(order::time).toList();
        assertEquals(List.of(170_711_777_090L, 170_790_872_029L, 170_946_719_505L, 171_039_894_891L), times);
    }
}

package ptfence.record;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** The oversized KSYMBOL seen in a live recording (bytes as the kernel wrote them, surplus = stale ring memory). */
class KernelRecordSizesTest {
    @Test
    void oversizedKsymbolIsCutToItsContent() {
        // header.size 0x80, name of 36 characters: 24 + 40 + 32-byte trailer = 96 bytes of real content
        byte[] raw = HexFormat.of().parseHex(
                "1100000000008000287b02c0ffffffff3d05000001000000"
                + HexFormat.of().formatHex("bpf_prog_56f9394dbd736084_fence_free\0\0\0\0".getBytes(StandardCharsets.US_ASCII))
                + "a5770000a7770000a24865e402060000" + "0100000000000000e900000000000000"
                + "0100000000000000e900000000000000" + "11000000000060000c2102c0ffffffff");
        ByteBuffer rec = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(128, raw.length);
        assertEquals(96, KernelRecordSizes.trueSize(rec, 128, 32));
    }

    @Test
    void wellFormedRecordsKeepTheirSize() {
        ByteBuffer bpf = ByteBuffer.allocate(56).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 18).putShort(6, (short) 56);
        assertEquals(56, KernelRecordSizes.trueSize(bpf, 56, 32));
        ByteBuffer poke = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 20).putShort(6, (short) 64);
        poke.putShort(16, (short) 5).putShort(18, (short) 5); // 16 + align8(4+10)=16 + 32 = 64
        assertEquals(64, KernelRecordSizes.trueSize(poke, 64, 32));
        ByteBuffer sw = ByteBuffer.allocate(48).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 15);
        assertEquals(48, KernelRecordSizes.trueSize(sw, 48, 32));
    }
}

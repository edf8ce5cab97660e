package ptfence.packet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PacketCursorTest {
    static final byte[] PSB = {2, (byte) 0x82, 2, (byte) 0x82, 2, (byte) 0x82, 2, (byte) 0x82,
            2, (byte) 0x82, 2, (byte) 0x82, 2, (byte) 0x82, 2, (byte) 0x82};

    static byte[] bytes(int... v) {
        byte[] b = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = (byte) v[i];
        }
        return b;
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            o.writeBytes(p);
        }
        return o.toByteArray();
    }

    @Test
    void decodesCorePacketsWithPayloads() {
        byte[] t = concat(PSB, bytes(0x99, 0x01), bytes(0x02, 0x23),
                bytes(0x71, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00),        // tip.pge sext48 0x401000
                bytes(0x2c),                                                // tnt.8: 0x2c>>1 = 0b10110 -> 4 bits 0110
                bytes(0x19, 1, 2, 3, 4, 5, 6, 7),                          // tsc
                bytes(0x02, 0x43, 0x03, 0, 0, 0, 0, 0),                    // pip nr, cr3 = 1<<5
                bytes(0x59, 0x42), bytes(0x0f, 0x02),                      // mtc, cyc with one ext byte
                bytes(0x00));
        PacketCursor c = new PacketCursor(TraceSource.of(t));
        assertTrue(c.syncForward());
        assertEquals(0, c.position());
        assertEquals(PacketCursor.PSB, c.next());
        assertEquals(PacketCursor.MODE_EXEC, c.next());
        assertTrue(c.csl());
        assertEquals(PacketCursor.PSBEND, c.next());
        assertEquals(PacketCursor.TIP_PGE, c.next());
        assertEquals(PacketCursor.IPC_SEXT_48, c.ipc());
        assertEquals(0x401000L, c.ipPayload());
        assertEquals(7, c.size());
        assertEquals(PacketCursor.TNT_8, c.next());
        assertEquals(4, c.tntCount());
        assertEquals(0b0110, c.tntBits());
        assertEquals(PacketCursor.TSC, c.next());
        assertEquals(0x07060504030201L, c.tsc());
        assertEquals(PacketCursor.PIP, c.next());
        assertTrue(c.nonRoot());
        assertEquals(1L << 5, c.cr3());
        assertEquals(PacketCursor.MTC, c.next());
        assertEquals(0x42, c.mtcCtc());
        assertEquals(PacketCursor.CYC, c.next());
        assertEquals(1 | (1 << 5), c.cycles());
        assertEquals(PacketCursor.PAD, c.next());
        assertEquals(PacketCursor.END, c.next());
        Packet.Tnt tnt = new Packet.Tnt(0, 1, 3, 0b101);
        assertTrue(tnt.taken(0));
        assertFalse(tnt.taken(1));
    }

    @Test
    void blockItemsAreRecognizedOnlyInsideABlock() {
        // 0x0c is a TNT-8 outside a block and a BIP (id 1) inside one.
        byte[] t = concat(PSB, bytes(0x0c), bytes(0x02, 0x63, 0x81), bytes(0x0c, 1, 2, 3, 4),
                bytes(0x02, 0x63, 0x02), bytes(0x14, 1, 2, 3, 4, 5, 6, 7, 8), bytes(0x02, 0xb3), bytes(0x0c));
        PacketCursor c = new PacketCursor(TraceSource.of(t));
        assertTrue(c.syncForward());
        assertEquals(PacketCursor.PSB, c.next());
        assertEquals(PacketCursor.TNT_8, c.next());
        assertEquals(PacketCursor.BBP, c.next());
        assertTrue(c.bbpSize4());
        assertEquals(1, c.bbpType());
        assertEquals(PacketCursor.BIP, c.next());
        assertEquals(1, c.bipId());
        assertEquals(0x04030201L, c.bipPayload());
        assertEquals(PacketCursor.BBP, c.next());
        assertFalse(c.bbpSize4());
        assertEquals(PacketCursor.BIP, c.next());
        assertEquals(2, c.bipId());
        assertEquals(0x0807060504030201L, c.bipPayload());
        assertEquals(9, c.size());
        assertEquals(PacketCursor.BEP, c.next());
        assertTrue(c.ipBit());
        assertEquals(PacketCursor.TNT_8, c.next());
        assertEquals(PacketCursor.END, c.next());
        PacketCursor q = new PacketCursor(TraceSource.of(t));
        assertTrue(q.syncForward());
        assertEquals(8, q.skipAll());
    }

    @Test
    void errorsCarryOffsetAndResyncFindsNextPsb() {
        byte[] t = concat(PSB, bytes(0xc9), PSB, bytes(0x02, 0x23), bytes(0x19, 1));
        PacketCursor c = new PacketCursor(TraceSource.of(t));
        assertTrue(c.syncForward());
        c.next();
        TraceDecodeException e = assertThrows(TraceDecodeException.class, c::next);
        assertEquals(16, e.offset());
        assertEquals(DecodeError.BAD_OPCODE, e.error());
        assertTrue(c.syncForward());
        assertEquals(17, c.position());
        assertEquals(PacketCursor.PSB, c.next());
        assertEquals(PacketCursor.PSBEND, c.next());
        TraceDecodeException trunc = assertThrows(TraceDecodeException.class, c::next);
        assertEquals(DecodeError.TRUNCATED, trunc.error());
        assertEquals(35, trunc.offset());
        assertFalse(c.syncForward());
        assertTrue(c.syncBackward());
        assertEquals(17, c.position());
        assertTrue(c.syncBackward());
        assertEquals(0, c.position());
    }

    @Test
    void packetsStraddlingMappingWindowsDecodeTheSame(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        java.util.Random r = new java.util.Random(7);
        for (int k = 0; k < 400; k++) {
            o.writeBytes(PSB);
            o.writeBytes(bytes(0x02, 0x23));
            for (int j = 0; j < r.nextInt(30); j++) {
                switch (r.nextInt(4)) {
                    case 0 -> o.writeBytes(bytes(0x2c));
                    case 1 -> o.writeBytes(bytes(0xdd, 1, 2, 3, 4, 5, 6, 7, 8));
                    case 2 -> o.writeBytes(bytes(0x02, 0xc3, 0x88, 1, 2, 3, 4, 5, 6, 7, 8));
                    default -> o.writeBytes(bytes(0x19, 1, 2, 3, 4, 5, 6, 7));
                }
            }
        }
        Path f = dir.resolve("t.pt");
        Files.write(f, o.toByteArray());
        List<Packet> whole = all(new PacketCursor(TraceSource.open(f)));
        List<Packet> windowed = all(new PacketCursor(TraceSource.open(f, 0, -1, 300)));
        assertEquals(whole, windowed);
        assertTrue(whole.size() > 1000);
        PacketCursor back = new PacketCursor(TraceSource.open(f, 0, -1, 300));
        int psbs = 0;
        while (back.syncBackward()) {
            psbs++;
        }
        assertEquals(400, psbs);
    }

    @Test
    void filesBeyondTwoGibibytesDecodeAtTheirTrueOffsets(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("big.pt");
        long at = (3L << 30) + 5; // past 2^31 and past the first 1 GiB mapping windows
        byte[] tail = concat(PSB, bytes(0x02, 0x23), bytes(0xdd, 1, 2, 3, 4, 5, 6, 7, 8), bytes(0x2c));
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f,
                java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE,
                java.nio.file.StandardOpenOption.SPARSE)) {
            ch.write(java.nio.ByteBuffer.wrap(tail), at);
        }
        try (TraceSource src = TraceSource.open(f)) {
            assertEquals(at + tail.length, src.size());
            PacketCursor c = new PacketCursor(src);
            assertTrue(c.syncBackward());
            assertEquals(at, c.position());
            assertEquals(PacketCursor.PSB, c.next());
            assertEquals(PacketCursor.PSBEND, c.next());
            assertEquals(PacketCursor.FUP, c.next());
            assertEquals(at + 18, c.offset());
            assertEquals(0x0807060504030201L, c.ipPayload());
            assertEquals(PacketCursor.TNT_8, c.next());
            assertEquals(PacketCursor.END, c.next());
        }
        try (TraceSource range = TraceSource.parse(f + ":" + (at - 3) + "-" + (at + 18))) {
            PacketCursor c = new PacketCursor(range);
            assertTrue(c.syncForward());
            assertEquals(3, c.position());
            assertEquals(PacketCursor.PSB, c.next());
            assertEquals(PacketCursor.PSBEND, c.next());
            assertEquals(PacketCursor.END, c.next());
        }
    }

    private static List<Packet> all(PacketCursor c) {
        List<Packet> out = new ArrayList<>();
        assertTrue(c.syncForward());
        while (c.next() != PacketCursor.END) {
            out.add(c.packet());
        }
        return out;
    }

    @Test
    void rangeSyntaxFollowsPtdump() {
        assertEquals(new TraceSource.Range("a.pt", 0x10, 0x20), TraceSource.Range.parse("a.pt:0x10-0x20"));
        assertEquals(new TraceSource.Range("a.pt", 8, -1), TraceSource.Range.parse("a.pt:010"));
        assertEquals(new TraceSource.Range("c:x.pt", 0, -1), TraceSource.Range.parse("c:x.pt"));
    }
}

package ptfence.perfdata;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A perf.data written on a big-endian machine (magic read byte-swapped) reads with the same values. */
class BigEndianTest {

    @Test
    void aBigEndianRecordingReadsWithTheSameValues() {
        ByteBuffer b = ByteBuffer.allocate(1024).order(ByteOrder.BIG_ENDIAN);
        int attrSize = 64 + 16;
        int idsOff = 104;
        int attrsOff = idsOff + 16;
        int dataOff = attrsOff + attrSize;
        // data: COMM (with TID|TIME trailer), AUXTRACE + 8 bytes of payload
        ByteBuffer data = ByteBuffer.allocate(256).order(ByteOrder.BIG_ENDIAN);
        data.putInt(RecordTypes.COMM).putShort((short) 0x2000).putShort((short) (8 + 8 + 8 + 16));
        data.putInt(42).putInt(43).put("ls\0\0\0\0\0\0".getBytes(StandardCharsets.US_ASCII));
        data.putInt(42).putInt(43).putLong(123456789L);
        data.putInt(RecordTypes.AUXTRACE).putShort((short) 0).putShort((short) 48);
        data.putLong(8).putLong(0x1000).putLong(77).putInt(3).putInt(43).putInt(3).putInt(0);
        data.put(new byte[] {2, (byte) 0x82, 2, (byte) 0x82, 0, 0, 0, 0});
        int dataSize = data.position();
        int featOff = dataOff + dataSize;
        b.putLong(PerfDataFile.MAGIC).putLong(104).putLong(attrSize).putLong(attrsOff).putLong(attrSize)
                .putLong(dataOff).putLong(dataSize).putLong(0).putLong(0);
        b.putLong(1L << Feature.HOSTNAME).putLong(0).putLong(0).putLong(0);
        b.putLong(idsOff, 7).putLong(idsOff + 8, 8);
        int a = (int) attrsOff;
        b.putInt(a, 6).putInt(a + 4, 64).putLong(a + 8, 0x2401).putLong(a + 16, 1)
                .putLong(a + 24, SampleType.TID | SampleType.TIME).putLong(a + 40, EventAttr.FLAG_SAMPLE_ID_ALL);
        b.putLong(a + 64, idsOff).putLong(a + 72, 16);
        b.put((int) dataOff, data.array(), 0, dataSize);
        int t = (int) featOff;
        b.putLong(t, featOff + 16).putLong(t + 8, 4 + 64);
        b.putInt(t + 16, 64).put(t + 20, "bigbox\0".getBytes(StandardCharsets.US_ASCII));
        b.limit(t + 16 + 4 + 64).position(0);

        PerfDataFile f = PerfDataFile.of("be.perf", b);
        assertEquals(ByteOrder.BIG_ENDIAN, f.byteOrder());
        AttrIds attr = f.attrs().get(0);
        assertEquals(6, attr.attr().type());
        assertEquals(0x2401, attr.attr().config());
        assertEquals(List.of(7L, 8L), attr.ids());
        assertEquals("bigbox", f.features().hostname().orElseThrow());
        List<PerfRecord> recs = f.stream().toList();
        assertEquals(new PerfRecord.Comm(0x2000, 42, 43, "ls",
                new SampleId(SampleType.TID | SampleType.TIME, 42, 43, 123456789L, 0, 0, 0, 0, 0)), recs.get(0));
        PerfRecord.Auxtrace aux = (PerfRecord.Auxtrace) recs.get(1);
        assertEquals(0x1000, aux.offset());
        assertEquals(3, aux.cpu());
        assertEquals(ByteBuffer.wrap(new byte[] {2, (byte) 0x82, 2, (byte) 0x82, 0, 0, 0, 0}), aux.data());
    }
}

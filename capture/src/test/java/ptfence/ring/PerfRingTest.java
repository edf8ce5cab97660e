package ptfence.ring;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import ptfence.bpf.TestPrograms;
import ptfence.perfdata.EventAttr;
import ptfence.record.CpuList;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;
import ptfence.sys.PerfEvent;

/** The ring consumer against the kernel: the records of BPF loads, peeked and then drained, byte for byte. */
class PerfRingTest {
    @Test
    void peekSeesWhatDrainThenConsumes() throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "needs root: CPU-wide events and BPF loads");
        EventAttr attr = EventAttr.builder().type(1).config(9).sampleType(0x2 | 0x4 | 0x80 | 0x10000)
                .flags(EventAttr.FLAG_DISABLED | EventAttr.FLAG_SAMPLE_ID_ALL | EventAttr.FLAG_KSYMBOL
                        | EventAttr.FLAG_BPF_EVENT | EventAttr.FLAG_WATERMARK).wakeupEvents(1).build();
        List<PerfEvent> events = new ArrayList<>();
        List<PerfRing> rings = new ArrayList<>();
        try {
            for (int cpu : CpuList.online()) {
                PerfEvent e = PerfEvent.open(attr, "ring test", -1, cpu);
                events.add(e);
                rings.add(PerfRing.map(e, 2)); // 8 KiB: the records of 40 loads and unloads wrap it
            }
            events.forEach(PerfEvent::enable);
            List<String> drained = new ArrayList<>();
            int ksymbols = 0, peekedTotal = 0;
            for (int round = 0; round < 10; round++) {
                for (int i = 0; i < 4; i++) {
                    try (BpfFd fd = Bpf.get().progLoad(TestPrograms.constant("ptrec_ring" + i, i))) {
                        assertNotNull(fd);
                    }
                }
                Thread.sleep(20);
                for (PerfRing r : rings) {
                    List<String> p = new ArrayList<>(), d = new ArrayList<>();
                    r.peek((rec, ring) -> p.add(hex(rec)));
                    r.drain((rec, ring) -> d.add(hex(rec)));
                    // records published between the two calls come after what the peek saw
                    assertEquals(p, d.subList(0, p.size()));
                    peekedTotal += p.size();
                    drained.addAll(d);
                }
            }
            for (PerfRing r : rings) r.drain((rec, ring) -> drained.add(hex(rec)));
            for (String d : drained) {
                if (d.startsWith("11000000") && d.contains(hexOf("_ptrec_ring"))) ksymbols++;
            }
            assertTrue(ksymbols >= 40 * 2 - 8, "only " + ksymbols + " KSYMBOL records of 80 (load + unload)");
            assertTrue(peekedTotal > 0);
        } finally {
            rings.forEach(PerfRing::close);
            events.forEach(PerfEvent::close);
        }
    }

    private static String hexOf(String s) {
        return java.util.HexFormat.of().formatHex(s.getBytes(StandardCharsets.US_ASCII));
    }

    private static String hex(ByteBuffer rec) {
        byte[] b = new byte[rec.remaining()];
        rec.duplicate().get(b);
        return java.util.HexFormat.of().formatHex(b);
    }
}

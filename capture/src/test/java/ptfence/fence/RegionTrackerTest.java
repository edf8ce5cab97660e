package ptfence.fence;

import org.junit.jupiter.api.Test;
import ptfence.bpf.TestPrograms;
import ptfence.sys.Bpf;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class RegionTrackerTest {
    static final class Recorder implements RegionTracker.RegionWriter {
        final List<TextRegion> opened = new ArrayList<>(), closed = new ArrayList<>();

        @Override public synchronized void opened(TextRegion r) { opened.add(r); }

        @Override public synchronized void closed(TextRegion r) { closed.add(r); }
    }

    static CapturedText img(Hook h, long addr, String name, long ns, byte... bytes) {
        return new CapturedText(h, addr, bytes, 7, 0x1122334455667788L, name, ns, 0, 1, 1, 1, true);
    }

    @Test
    void loadOpensFreeClosesAndReusedAddressesStaySeparate() throws Exception {
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("boot-1", w);
        t.accept(img(Hook.LOAD, 0x1000, "bpf_prog_a_x", 100, (byte) 1, (byte) 2));
        assertEquals(1, w.opened.size());
        assertEquals(TextRegion.OPEN, w.opened.get(0).validToNs());
        t.accept(img(Hook.FREE, 0x1000, "bpf_prog_a_x", 200, (byte) 1, (byte) 2));
        t.accept(img(Hook.LOAD, 0x1000, "bpf_prog_b_y", 300, (byte) 3));   // JIT space reused
        t.accept(img(Hook.FREE, 0x1000, "bpf_prog_b_y", 400, (byte) 3));
        assertEquals(2, w.opened.size());
        assertEquals(2, w.closed.size());
        assertEquals(100, w.closed.get(0).validFromNs());
        assertEquals(200, w.closed.get(0).validToNs());
        assertEquals(300, w.closed.get(1).validFromNs());
        assertEquals(400, w.closed.get(1).validToNs());
        assertEquals("boot-1", w.closed.get(1).bootId());
        assertEquals("bpf_prog", w.closed.get(1).kind());
        assertEquals(0, t.liveRegions());
    }

    @Test
    void freeOfAnUnseenProgramIsARegionUpToTheFree() throws Exception {
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        t.accept(img(Hook.SCAN, 0x2000, "bpf_prog_s", 50, (byte) 9));
        t.accept(img(Hook.LOAD, 0x2000, "bpf_prog_s", 60, (byte) 9));       // scan and LOAD saw the same bytes
        assertEquals(1, w.opened.size());
        assertEquals(0, w.opened.get(0).validFromNs(), "scanned: there before the fence");
        t.accept(img(Hook.FREE, 0x3000, "", 500, (byte) 5));                 // e.g. a seccomp filter
        assertEquals(0, w.closed.get(0).validFromNs());
        assertEquals(500, w.closed.get(0).validToNs());
        t.accept(img(Hook.FREE, 0x2000, "bpf_prog_s", 700, (byte) 8));       // bytes poked after load
        assertEquals(3, w.closed.size());
        assertArrayEquals(new byte[] {9}, w.closed.get(1).bytes());
        assertArrayEquals(new byte[] {8}, w.closed.get(2).bytes());
        assertEquals(700, w.closed.get(2).validToNs());
    }

    @Test
    void ksymbolUnregisterClosesTheRegion() throws Exception {
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        t.accept(img(Hook.USER_SPACE, 0x6000, "bpf_prog_u", 10, (byte) 1));
        assertFalse(t.ksymbolUnregistered(0x6000, "bpf_prog_other", 20));
        assertTrue(t.ksymbolUnregistered(0x6000, "bpf_prog_u", 30));
        assertEquals(30, w.closed.get(0).validToNs());
        assertEquals(10, w.closed.get(0).validFromNs());
        assertEquals(0, t.liveRegions());
    }

    @Test
    void textPokeStartsANewVersion() throws Exception {
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        t.accept(img(Hook.LOAD, 0x4000, "bpf_prog_t", 10, (byte) 1, (byte) 2, (byte) 3, (byte) 4));
        assertFalse(t.textPoke(0x5000, new byte[] {7}, 20));
        assertTrue(t.textPoke(0x4001, new byte[] {8, 9}, 30));
        assertEquals(30, w.closed.get(0).validToNs());
        assertArrayEquals(new byte[] {1, 8, 9, 4}, w.opened.get(1).bytes());
        assertEquals(30, w.opened.get(1).validFromNs());
        t.accept(img(Hook.FREE, 0x4000, "bpf_prog_t", 40, (byte) 1, (byte) 8, (byte) 9, (byte) 4));
        assertEquals(40, w.closed.get(1).validToNs());
        assertEquals(0, t.liveRegions());
    }

    @Test
    void liveChurnBecomesClosedRegions() throws Exception {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
        Recorder w = new Recorder();
        RegionTracker tracker = new RegionTracker(RegionTracker.currentBootId(), w);
        try (TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false), tracker)) {
            for (int i = 0; i < 100; i++) Bpf.get().progLoad(TestPrograms.constant("rgn" + i, i)).close();
            fence.awaitQuiet(Duration.ofSeconds(2), Duration.ofSeconds(60));
        }
        List<TextRegion> mine = w.closed.stream().filter(r -> r.name().contains("_rgn")).toList();
        assertEquals(100, mine.size());
        for (TextRegion r : mine) {
            assertTrue(r.validFromNs() > 0 && r.validFromNs() < r.validToNs(), r.toString());
            assertEquals(Hook.LOAD, r.firstSeenBy());
        }
        assertEquals(36, RegionTracker.currentBootId().length());
    }
}

package ptfence.fence;

import org.junit.jupiter.api.Test;
import ptfence.bpf.TestPrograms;
import ptfence.region.Region;
import ptfence.region.RegionKind;
import ptfence.store.ContentKey;
import ptfence.sys.Bpf;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class RegionTrackerTest {
    static final class Recorder implements RegionTracker.RegionWriter {
        final List<Region> opened = new ArrayList<>(), closed = new ArrayList<>();
        final Map<ContentKey, byte[]> images = new HashMap<>();

        @Override public synchronized void opened(Region r, byte[] bytes) {
            assertEquals(ContentKey.of(bytes), r.key());
            images.put(r.key(), bytes);
            (r.isOpen() ? opened : closed).add(r);
        }

        @Override public synchronized void closed(Region r) {
            assertTrue(opened.stream().anyMatch(o -> o.id() == r.id()), "closing a region never opened: " + r);
            closed.add(r);
        }

        byte[] bytes(Region r) { return images.get(r.key()); }
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
        assertEquals(Region.OPEN, w.opened.get(0).validTo());
        t.accept(img(Hook.FREE, 0x1000, "bpf_prog_a_x", 200, (byte) 1, (byte) 2));
        t.accept(img(Hook.LOAD, 0x1000, "bpf_prog_b_y", 300, (byte) 3));   // JIT space reused
        t.accept(img(Hook.FREE, 0x1000, "bpf_prog_b_y", 400, (byte) 3));
        assertEquals(2, w.opened.size());
        assertEquals(2, w.closed.size());
        assertEquals(100, w.closed.get(0).validFrom());
        assertEquals(200, w.closed.get(0).validTo());
        assertEquals(300, w.closed.get(1).validFrom());
        assertEquals(400, w.closed.get(1).validTo());
        assertEquals("boot-1", w.closed.get(1).bootId());
        assertEquals(RegionKind.BPF_PROG, w.closed.get(1).kind());
        assertEquals("7", Integer.toString(((ptfence.region.BpfMetadata) w.closed.get(1).metadata()).progId()));
        assertEquals(0, t.liveRegions());
    }

    @Test
    void freeOfAnUnseenProgramIsARegionUpToTheFree() throws Exception {
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        t.accept(img(Hook.SCAN, 0x2000, "bpf_prog_s", 50, (byte) 9));
        t.accept(img(Hook.LOAD, 0x2000, "bpf_prog_s", 60, (byte) 9));       // scan and LOAD saw the same bytes
        assertEquals(1, w.opened.size());
        assertEquals(0, w.opened.get(0).validFrom(), "scanned: there before the fence");
        t.accept(img(Hook.FREE, 0x3000, "", 500, (byte) 5));                 // e.g. a seccomp filter
        assertEquals(0, w.closed.get(0).validFrom());
        assertEquals(500, w.closed.get(0).validTo());
        t.accept(img(Hook.FREE, 0x2000, "bpf_prog_s", 700, (byte) 8));       // bytes poked after load
        assertEquals(3, w.closed.size());
        assertArrayEquals(new byte[] {9}, w.bytes(w.closed.get(1)));
        assertArrayEquals(new byte[] {8}, w.bytes(w.closed.get(2)));
        assertEquals(700, w.closed.get(2).validTo());
    }

    @Test
    void ksymbolUnregisterClosesTheRegion() throws Exception {
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        t.accept(img(Hook.USER_SPACE, 0x6000, "bpf_prog_u", 10, (byte) 1));
        assertFalse(t.ksymbolUnregistered(0x6000, "bpf_prog_other", 20));
        assertTrue(t.ksymbolUnregistered(0x6000, "bpf_prog_u", 30));
        assertEquals(30, w.closed.get(0).validTo());
        assertEquals(10, w.closed.get(0).validFrom());
        assertEquals(0, t.liveRegions());
    }

    @Test
    void fenceTimesAreConvertedRecordTimesAreNot() throws Exception {
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w, mono -> mono * 10 + 5); // a stand-in perf clock
        t.accept(img(Hook.LOAD, 0x7000, "bpf_prog_c", 10, (byte) 1, (byte) 2));
        assertEquals(105, w.opened.get(0).validFrom());
        assertTrue(t.textPoke(0x7001, new byte[] {3}, 150));              // TEXT_POKE: perf time already
        assertEquals(150, w.closed.get(0).validTo());
        assertEquals(150, w.opened.get(1).validFrom());
        t.accept(img(Hook.FREE, 0x7000, "bpf_prog_c", 20, (byte) 1, (byte) 3));
        assertEquals(205, w.closed.get(1).validTo());
        t.accept(img(Hook.LOAD, 0x8000, "bpf_prog_d", 21, (byte) 4));
        assertTrue(t.ksymbolUnregistered(0x8000, "bpf_prog_d", 250));   // no FREE hook: the unregister ends it
        assertEquals(250, w.closed.get(2).validTo());
        t.accept(img(Hook.LOAD, 0x9000, "bpf_prog_e", 40, (byte) 5));
        assertTrue(t.ksymbolUnregistered(0x9000, "bpf_prog_e", 300));   // a clock slightly off must not invert it
        assertEquals(405, w.closed.get(3).validTo());
    }

    @Test
    void withTheFreeHookAProgramEndsAtItsFreeNotItsUnregister() throws Exception {
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        t.freeHookActive(true);
        t.accept(img(Hook.LOAD, 0xa000, "bpf_prog_f", 10, (byte) 1));
        t.accept(img(Hook.LOAD, 0xb000, "bpf_prog_g", 11, (byte) 2));
        t.accept(img(Hook.KERNEL_READ, 0xc000, "bpf_trampoline_1", 12, (byte) 3));
        assertTrue(t.ksymbolUnregistered(0xa000, "bpf_prog_f", 20));
        assertTrue(t.ksymbolUnregistered(0xb000, "bpf_prog_g", 21));
        assertTrue(t.ksymbolUnregistered(0xc000, "bpf_trampoline_1", 22)); // no FREE image comes for it
        assertEquals(1, w.closed.size());
        assertEquals(22, w.closed.get(0).validTo());
        // the code can still run until the grace period ends: the FREE, not the unregister, ends it
        t.accept(img(Hook.FREE, 0xa000, "bpf_prog_f", 30, (byte) 1));
        assertEquals(30, w.closed.get(1).validTo());
        assertEquals(1, w.opened.stream().filter(r -> r.name().equals("bpf_prog_f")).count(), "no second region");
        // the recording ended before g's FREE: its unregister is the best end known
        assertEquals(1, t.closeUnfreed());
        assertEquals(21, w.closed.get(2).validTo());
        assertEquals(0, t.liveRegions());
    }

    @Test
    void textPokeStartsANewVersion() throws Exception {
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        t.accept(img(Hook.LOAD, 0x4000, "bpf_prog_t", 10, (byte) 1, (byte) 2, (byte) 3, (byte) 4));
        // a poke no region holds (kernel text): the new bytes are a version of their own from then on
        assertFalse(t.textPoke(0x5000, new byte[] {7}, 20));
        assertEquals(RegionKind.TEXT_POKE, w.opened.get(1).kind());
        assertEquals(0x5000, w.opened.get(1).address());
        assertEquals(20, w.opened.get(1).validFrom());
        assertTrue(t.textPoke(0x4001, new byte[] {8, 9}, 30));
        assertEquals(30, w.closed.get(0).validTo());
        assertArrayEquals(new byte[] {1, 8, 9, 4}, w.bytes(w.opened.get(2)));
        assertEquals(30, w.opened.get(2).validFrom());
        t.accept(img(Hook.FREE, 0x4000, "bpf_prog_t", 40, (byte) 1, (byte) 8, (byte) 9, (byte) 4));
        assertEquals(40, w.closed.get(1).validTo());
        assertEquals(1, t.liveRegions(), "the kernel text poke stays");
    }

    /** The bytes the archive would give at this address and time: the newest region valid then, as a decoder. */
    static byte at(Recorder w, long address, long time) {
        Region best = null;
        for (Region r : w.closed.stream().filter(c -> c.validTo() != Region.OPEN).toList()) {
            if (r.contains(address) && r.validAt(time) && (best == null || r.validFrom() >= best.validFrom())) best = r;
        }
        for (Region r : w.opened) {
            boolean closedSince = w.closed.stream().anyMatch(c -> c.id() == r.id());
            if (!closedSince && r.contains(address) && r.validAt(time)
                    && (best == null || r.validFrom() >= best.validFrom())) best = r;
        }
        assertNotNull(best, "nothing at 0x" + Long.toHexString(address) + " at " + time);
        return w.bytes(best)[(int) (address - best.address())];
    }

    @Test
    void pokesSeenBeforeTheirModulesLateCopyBecomeItsVersions() throws Exception {
        // a module copied at load (100) whose copy reaches the tracker after pokes made at 150 (a jump label at
        // 0x9002 flipped to a jmp), 160 (another site) and 170 (the first back); then a poke at 180 elsewhere: the
        // module's versions must hold each poke from its time on, and the newest version at any time is right
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        assertFalse(t.textPoke(0x9002, new byte[] {(byte) 0xeb}, 150));
        assertFalse(t.textPoke(0x9005, new byte[] {(byte) 0xeb}, 160));
        t.textPoke(0x9002, new byte[] {0x66}, 170);
        t.accept(img(Hook.MODULE_LOAD, 0x9000, "[m]", 100, new byte[] {1, 2, 0x66, 4, 5, 0x66, 7, 8}),
                null);
        assertTrue(t.textPoke(0x9007, new byte[] {9}, 180));
        assertEquals(0x66, at(w, 0x9002, 120));
        assertEquals((byte) 0xeb, at(w, 0x9002, 155));
        assertEquals((byte) 0xeb, at(w, 0x9005, 165));
        assertEquals((byte) 0xeb, at(w, 0x9002, 165), "the module's version from 160 holds the jmp of 150");
        assertEquals(0x66, at(w, 0x9002, 175));
        assertEquals((byte) 0xeb, at(w, 0x9005, 185), "the module's version from 180 holds the jmp of 160");
        assertEquals(0x66, at(w, 0x9002, 185));
        assertEquals(9, at(w, 0x9007, 185));
        // a poke made before the copy (at 90, seen before the copy came) is in the copy already: no version
        t.textPoke(0xa001, new byte[] {2}, 90);
        int versions = w.opened.size();
        t.accept(img(Hook.MODULE_LOAD, 0xa000, "[n]", 100, new byte[] {1, 2}), null);
        assertEquals(versions + 1, w.opened.size());
        // after the module arrived, a poke at a site that has a TEXT_POKE region changes both alike
        t.textPoke(0x9005, new byte[] {0x66}, 190);
        assertEquals(0x66, at(w, 0x9005, 195));
    }

    /**
     * Debian 6.1 in the guest: a trampoline image read after its retirement poke (bpf_tramp_image_put: the 5-byte
     * nop at ip_after_call, +0x82, becomes {@code jmp} to the epilogue, e9 40 00 00 00) held the jump from the time
     * the attach made it reachable, while kcore still read the nop then. The poke's record, later in the stream,
     * carries the old bytes: the version up to the poke gets them back, the jump starts at the poke.
     */
    @Test
    void aTrampolineCopiedAfterItsRetirementPokeHoldsTheNopUntilThePoke() throws Exception {
        byte[] nop = {0x0f, 0x1f, 0x44, 0, 0}, jmp = {(byte) 0xe9, 0x40, 0, 0, 0};
        byte[] image = new byte[0xd0];
        for (int i = 0; i < image.length; i++) image[i] = (byte) (0x40 + i % 7);
        System.arraycopy(jmp, 0, image, 0x82, 5); // the late copy
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        t.accept(new CapturedText(Hook.KERNEL_READ, 0xffffffffc0232000L, image, 0, 0, "bpf_trampoline_6442",
                100, 0, 1, 0, 0, true));
        assertTrue(t.textPoke(0xffffffffc0232082L, nop, jmp, 150));
        Region cut = w.closed.get(0), held = w.closed.get(1), now = w.opened.get(w.opened.size() - 1);
        assertEquals(100, cut.validFrom());
        assertEquals(100, cut.validTo(), "the late copy's version holds no instant");
        assertEquals(RegionKind.BPF_TRAMPOLINE, held.kind());
        assertEquals(100, held.validFrom());
        assertEquals(150, held.validTo());
        byte[] before = image.clone();
        System.arraycopy(nop, 0, before, 0x82, 5);
        assertArrayEquals(before, w.bytes(held));
        assertEquals(150, now.validFrom());
        assertTrue(now.isOpen());
        assertArrayEquals(image, w.bytes(now));
        // a poke the copy already held before it was taken (its time before the copy's): nothing changes
        int versions = w.opened.size() + w.closed.size();
        assertTrue(t.textPoke(0xffffffffc0232082L, nop, jmp, 120));
        assertEquals(versions, w.opened.size() + w.closed.size());
        // other kinds keep the old rule (a module's jump labels poked before its load hook copied it)
        t.accept(img(Hook.LOAD, 0x9000, "bpf_prog_j", 10, (byte) 1, (byte) 2));
        versions = w.opened.size() + w.closed.size();
        assertTrue(t.textPoke(0x9001, new byte[] {5}, new byte[] {2}, 30));
        assertEquals(versions, w.opened.size() + w.closed.size());
    }

    /**
     * Debian 6.1 in the guest, bpf_trampoline_6442495166 at 0xffffffffc0222000: a retirement poke (e9 40 00 00 00 at
     * +0x7a) made where no image was live left a text_poke region there, live ever after; the next image at that
     * address (copied at its attach, the nop at +0x7a) lost its own retirement poke to that stale region, and its
     * FREE image (with the jump) then became a second version over the same span. The poke goes to the newest live
     * region holding it; a FREE after the unregister ended the region adds no version from time 0.
     */
    @Test
    void aPokeGoesToTheNewestLiveRegionAndAFreeAfterTheUnregisterAddsNothing() throws Exception {
        long image = 0xffffffffc0222000L, site = image + 0x7a;
        byte[] nop = {0x0f, 0x1f, 0x44, 0, 0}, jmp = {(byte) 0xe9, 0x40, 0, 0, 0};
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        assertFalse(t.textPoke(site, nop, jmp, 148_840));                        // no image live: a text_poke region
        byte[] code = new byte[0x100];
        for (int i = 0; i < code.length; i++) code[i] = (byte) (0x50 + i % 5);
        System.arraycopy(nop, 0, code, 0x7a, 5);
        t.accept(new CapturedText(Hook.KERNEL_READ, image, code, 0, 0, "bpf_trampoline_6442495166", 158_582, 0, 1,
                0, 0, true));
        assertTrue(t.textPoke(site, nop, jmp, 163_000));                          // its retirement
        Region retired = w.opened.get(w.opened.size() - 1);
        assertEquals("bpf_trampoline_6442495166", retired.name(), "the image took the poke, not the stale region");
        assertEquals(163_000, retired.validFrom());
        byte[] after = code.clone();
        System.arraycopy(jmp, 0, after, 0x7a, 5);
        assertArrayEquals(after, w.bytes(retired));
        assertTrue(t.ksymbolUnregistered(image, "bpf_trampoline_6442495166", 163_311));
        int versions = w.opened.size() + w.closed.size();
        t.accept(new CapturedText(Hook.TRAMPOLINE_FREE, image, after, 0, 0, "bpf_trampoline_6442495166", 163_312,
                0, 1, 0, 0, true));
        assertEquals(versions, w.opened.size() + w.closed.size(), "the FREE image is the version already closed");
        for (Region r : w.closed) {
            if (r.name().startsWith("bpf_trampoline")) assertTrue(r.validFrom() > 0, r::toString);
        }
    }

    /**
     * Debian 6.1 in the guest, bpf_trampoline_6442495166 at 0xffffffffc0304000 from 163.96 s: its FREE image (with
     * the retirement jump at +0x7a) came through the fence's worker at 169.52 s, before the recorder's loop, 1.5 s
     * behind, took the retirement poke of 168.98 s; the FREE made the jump a second version over the whole span and
     * the late poke found no live image. The FREE now waits for the loop: the poke makes the version at its time,
     * the unregister ends it, and nothing spans the image's time twice.
     */
    @Test
    void aTrampolineFreeAheadOfItsRetirementPokeWaitsForIt() throws Exception {
        long image = 0xffffffffc0304000L;
        byte[] nop = {0x0f, 0x1f, 0x44, 0, 0}, jmp = {(byte) 0xe9, 0x40, 0, 0, 0};
        byte[] code = new byte[0x100];
        for (int i = 0; i < code.length; i++) code[i] = (byte) (0x60 + i % 3);
        System.arraycopy(nop, 0, code, 0x7a, 5);
        byte[] retired = code.clone();
        System.arraycopy(jmp, 0, retired, 0x7a, 5);
        Recorder w = new Recorder();
        RegionTracker t = new RegionTracker("b", w);
        String name = "bpf_trampoline_6442495166";
        t.accept(new CapturedText(Hook.KERNEL_READ, image, code, 0, 0, name, 163_960, 0, 1, 0, 0, true));
        t.accept(new CapturedText(Hook.TRAMPOLINE_FREE, image, retired, 0, 0, name, 169_520, 0, 1, 0, 0, true));
        assertTrue(t.textPoke(image + 0x7a, nop, jmp, 168_978), "the image is still live for its late poke");
        assertTrue(t.ksymbolUnregistered(image, name, 169_519));
        List<Region> versions = w.closed.stream().filter(r -> r.name().equals(name)).toList();
        assertEquals(2, versions.size(), versions::toString);
        assertEquals(List.of(163_960L, 168_978L), versions.stream().map(Region::validFrom).toList());
        assertEquals(List.of(168_978L, 169_519L), versions.stream().map(Region::validTo).toList());
        assertArrayEquals(code, w.bytes(versions.get(0)));
        assertArrayEquals(retired, w.bytes(versions.get(1)));
        // the FREE of an earlier image of that name at that address, after a new one opened: not this one's end
        t.accept(new CapturedText(Hook.KERNEL_READ, image, code, 0, 0, name, 170_000, 0, 1, 0, 0, true));
        int n = w.opened.size() + w.closed.size();
        t.accept(new CapturedText(Hook.TRAMPOLINE_FREE, image, retired, 0, 0, name, 169_600, 0, 1, 0, 0, true));
        assertEquals(n, w.opened.size() + w.closed.size());
        assertEquals(1, t.liveRegions());
    }

    /**
     * Debian 6.12 in the guest: trampoline and program images share the BPF pack's 64-byte chunks. The retirement
     * poke of bpf_trampoline_6442495068 (171.08 s, +0x8d) was handled by the recorder's loop after the fence's
     * in-kernel copy of bpf_prog_9f9d0a0089de2fe7_gobs_549 (loaded at 180.77 s at +0x8c of that image) had opened
     * it, and the program, the newest region holding the address, took the trampoline's jump as a second version.
     * A text born after a poke never takes it, in every arrival order of the fence's copies among the loop's
     * time-ordered records.
     */
    @Test
    void aPokeMadeBeforeATextWasBornIsNotItsVersionWhateverTheArrivalOrder() throws Exception {
        java.util.Random random = new java.util.Random(0x6122L);
        byte[] nop = {0x0f, 0x1f, 0x44, 0, 0}, jmp = {(byte) 0xe9, 0x40, 0, 0, 0};
        for (int round = 0; round < 200; round++) {
            long image = 0xffffffffc0022180L + 64L * random.nextInt(8);
            int site = 0x40 + random.nextInt(0x80);
            long tBorn = 1_000 + random.nextInt(1_000), poke = tBorn + 1 + random.nextInt(1_000),
                    gone = poke + 1 + random.nextInt(1_000), pBorn = gone + 1 + random.nextInt(1_000),
                    pFree = pBorn + 1 + random.nextInt(1_000);
            byte[] code = new byte[0x100];
            for (int i = 0; i < code.length; i++) code[i] = (byte) (0x50 + i % 5);
            System.arraycopy(nop, 0, code, site, 5);
            byte[] prog = new byte[28];
            for (int i = 0; i < prog.length; i++) prog[i] = (byte) (0x90 - i);
            long progAt = image + site - 1 - random.nextInt(3); // the program's bytes cover the poked site
            String tramp = "bpf_trampoline_6442495068", name = "bpf_prog_9f9d0a0089de2fe7_gobs_549";
            Recorder w = new Recorder();
            RegionTracker t = new RegionTracker("b", w);
            ThrowingStep[] loopSteps = {
                    () -> { t.accept(new CapturedText(Hook.KERNEL_READ, image, code, 0, 0, tramp, tBorn, 0, 1, 0, 0,
                            true)); return null; },
                    () -> { t.textPoke(image + site, nop, jmp, poke); return null; },
                    () -> { t.ksymbolUnregistered(image, tramp, gone); return null; }};
            ThrowingStep[] fenceSteps = {
                    () -> { t.accept(img(Hook.LOAD, progAt, name, pBorn, prog)); return null; },
                    () -> { t.accept(img(Hook.FREE, progAt, name, pFree, prog)); return null; }};
            int li = 0, fi = 0;
            String order = "";
            while (li < loopSteps.length || fi < fenceSteps.length) {
                boolean fence = fi < fenceSteps.length && (li == loopSteps.length || random.nextBoolean());
                (fence ? fenceSteps[fi++] : loopSteps[li++]).run();
                order += fence ? "F" : "L";
            }
            String why = "round " + round + ", arrival " + order;
            List<Region> progs = w.closed.stream().filter(r -> r.name().equals(name)).toList();
            assertEquals(1, progs.size(), why + ": " + progs);
            assertEquals(pBorn, progs.get(0).validFrom(), why);
            assertEquals(pFree, progs.get(0).validTo(), why);
            assertArrayEquals(prog, w.bytes(progs.get(0)), why);
            List<Region> tramps = w.closed.stream().filter(r -> r.name().equals(tramp)).toList();
            assertEquals(List.of(tBorn, poke), tramps.stream().map(Region::validFrom).toList(), why);
            assertEquals(List.of(poke, gone), tramps.stream().map(Region::validTo).toList(), why);
            byte[] retired = code.clone();
            System.arraycopy(jmp, 0, retired, site, 5);
            assertArrayEquals(code, w.bytes(tramps.get(0)), why);
            assertArrayEquals(retired, w.bytes(tramps.get(1)), why);
        }
    }

    private interface ThrowingStep {
        Object run() throws Exception;
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
        List<Region> mine = w.closed.stream().filter(r -> r.name().contains("_rgn")).toList();
        assertEquals(100, mine.size());
        for (Region r : mine) {
            assertTrue(r.validFrom() > 0 && r.validFrom() < r.validTo(), r.toString());
            assertEquals(RegionKind.BPF_PROG, r.kind());
            assertTrue(r.tag().length() == 16, r.tag());
        }
        assertEquals(36, RegionTracker.currentBootId().length());
    }
}

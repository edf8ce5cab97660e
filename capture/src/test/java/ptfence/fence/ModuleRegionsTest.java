package ptfence.fence;

import org.junit.jupiter.api.Test;
import ptfence.bpf.Btf;
import ptfence.region.KernelMetadata;
import ptfence.region.Region;
import ptfence.region.RegionKind;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Module text in the region tracker (each load its own region, even at one address; text pokes are versions; the
 * free ends it; the symbols go with it) and the module fence's programs before the verifier of this kernel. The live
 * fence runs in a guest kernel (capture/src/test/guest, {@code GuestFenceTest}): this one has no modules.
 */
class ModuleRegionsTest {
    private static CapturedText text(Hook h, long addr, String name, long ns, byte... bytes) {
        return new CapturedText(h, addr, bytes, 0, 0, name, ns, 0, 2, 0, 0, true);
    }

    @Test
    void eachLoadIsAVersionOfItsOwnAndPokesAndFreesEndThem() throws Exception {
        RegionTrackerTest.Recorder w = new RegionTrackerTest.Recorder();
        RegionTracker t = new RegionTracker("boot", w);
        KernelMetadata syms = new KernelMetadata("6.1.0-test",
                "ffffffffc0a00000 t dummy_xmit\t[dummy]\n".getBytes(StandardCharsets.UTF_8), null);
        t.accept(text(Hook.MODULE_LOAD, 0xffffffffc0a00000L, "[dummy]", 100, (byte) 1, (byte) 2, (byte) 3), syms);
        t.textPoke(0xffffffffc0a00001L, new byte[] {9}, 150);                       // a jump label in the module
        t.accept(text(Hook.MODULE_FREE, 0xffffffffc0a00000L, "[dummy]", 200, (byte) 1, (byte) 9, (byte) 3), null);
        t.accept(text(Hook.MODULE_LOAD, 0xffffffffc0a00000L, "[dummy]", 300, (byte) 1, (byte) 2, (byte) 3), syms);
        t.accept(text(Hook.MODULE_FREE, 0xffffffffc0a00000L, "[dummy]", 400, (byte) 1, (byte) 2, (byte) 3), null);
        // a free ends its text once the recorder's records pass it (a poke before it may still be on its way)
        assertEquals(2, t.liveRegions(), "frees wait for the recorder's records: " + w.closed);
        t.sidebandTime(500);
        assertEquals(3, w.opened.size(), "load, poke, load again at the same address: " + w.opened);
        assertEquals(0, t.liveRegions());
        Region first = w.closed.get(0), poked = w.closed.get(1), second = w.closed.get(2);
        assertEquals(RegionKind.MODULE, first.kind());
        assertEquals(100, first.validFrom());
        assertEquals(150, first.validTo());
        assertArrayEquals(new byte[] {1, 9, 3}, w.bytes(poked));
        assertEquals(200, poked.validTo(), "the free ends the poked version");
        assertEquals(300, second.validFrom());
        assertEquals(400, second.validTo());
        assertEquals(syms, first.metadata(), "the module's symbols go with its text");
        assertEquals(syms, poked.metadata());
    }

    @Test
    void theModuleProgramsPassThisKernelsVerifier() throws Exception {
        assumeTrue(Files.isReadable(Btf.VMLINUX) && LiveKernel.canLoadBpf(), LiveKernel.reason());
        ModuleLayout layout;
        try {
            layout = ModuleLayout.from(Btf.vmlinux());
        } catch (RuntimeException e) {
            assumeTrue(false, "this kernel's BTF has no struct module layout: " + e.getMessage());
            return;
        }
        Bpf bpf = Bpf.get();
        try (BpfFd ring = bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, 1 << 20, 0, "t_mod_rb");
             BpfFd stats = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "t_mod_st")) {
            ModulePrograms p = new ModulePrograms(layout, ring.fd(), stats.fd());
            for (byte[] insns : new byte[][] {p.copy(ModulePrograms.KIND_LOAD, true),
                    p.copy(ModulePrograms.KIND_FREE, false)}) {
                bpf.progLoad(new Bpf.ProgLoad(Bpf.PROG_TYPE_RAW_TRACEPOINT, insns, "t_mod")).close();
            }
            if (layout.initfreeText().isPresent()) {
                bpf.progLoad(new Bpf.ProgLoad(Bpf.PROG_TYPE_RAW_TRACEPOINT,
                        p.initFree(0xffffffff81000000L, 0xffffffff82000000L), "t_mod_if")).close();
            }
        }
    }
}

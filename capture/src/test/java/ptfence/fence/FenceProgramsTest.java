package ptfence.fence;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import ptfence.bpf.Btf;
import ptfence.bpf.Kallsyms;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The kernel's verifier accepts every fence program as emitted for this kernel's BTF. */
class FenceProgramsTest {
    static KernelLayout layout;
    static Kallsyms kallsyms;

    @BeforeAll
    static void live() throws Exception {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
        layout = KernelLayout.from(Btf.vmlinux());
        kallsyms = Kallsyms.read();
    }

    @Test
    void verifierAcceptsAllFencePrograms() throws Exception {
        Bpf bpf = Bpf.get();
        try (BpfFd rb = bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, 1 << 20, 0, "t_rb");
             BpfFd stats = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "t_stats");
             BpfFd seen = bpf.mapCreate(Bpf.MAP_TYPE_LRU_HASH, 4, 4, 64, 0, "t_btf_seen")) {
            assertTrue(layout.metadata().isPresent(), "this kernel's BTF has every field the metadata record reads");
            FencePrograms p = new FencePrograms(layout, rb.fd(), stats.fd(), 1 << 20, seen.fd());
            byte[][] programs = {p.load(), p.free(kallsyms.require("bpf_prog_free_deferred")), p.peek(),
                    p.trampolineFree(kallsyms.require("__bpf_tramp_image_put_deferred"))};
            String[] names = {"t_load", "t_free", "t_peek", "t_tramp"};
            for (int i = 0; i < programs.length; i++) {
                try (BpfFd fd = FencePrograms.loadRawTracepoint(programs[i], names[i])) {
                    assertFalse(fd.isClosed());
                }
            }
        }
    }

    /**
     * The dispatcher hook (fexit bpf_dispatcher_change_prog), as emitted for this kernel and with the chunked copy:
     * the verifier accepts both where this kernel takes tracing programs at all (this machine's 6.18 refuses
     * fentry/fexit: skipped with the kernel's answer; the guest runs load it on 6.1 and 6.12).
     */
    @Test
    void verifierAcceptsTheDispatcherHook() throws Exception {
        assertTrue(layout.dispatcher().isPresent(), "this kernel's BTF has struct bpf_dispatcher and its update");
        Bpf bpf = Bpf.get();
        try (BpfFd rb = bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, 1 << 20, 0, "t_rb");
             BpfFd stats = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "t_stats");
             BpfFd scratch = bpf.mapCreate(Bpf.MAP_TYPE_PERCPU_ARRAY, 4, FencePrograms.SCRATCH_VALUE,
                     FencePrograms.SCRATCH_ENTRIES, 0, "t_scratch")) {
            for (KernelLayout l : new KernelLayout[] {layout, layout.withoutKfuncs()}) {
                FencePrograms p = new FencePrograms(l, rb.fd(), stats.fd(), 1 << 20, -1,
                        l.copiesInChunks() ? scratch.fd() : -1);
                try (BpfFd fd = FencePrograms.loadFexit(p.dispatcherSwitched(), "t_dispatch",
                        l.dispatcher().get().changeProgFunc())) {
                    assertFalse(fd.isClosed());
                } catch (ptfence.sys.BpfException e) {
                    assumeTrue(false, "this kernel refuses the fexit program: " + e.getMessage().lines()
                            .limit(3).toList());
                }
            }
        }
    }

    /**
     * The chunked copy (kernels without the iterator and dynptr-read kfuncs: Debian's 6.1 and 6.12) as emitted from
     * this kernel's BTF with the kfuncs taken away, with its loops as bpf_loop callbacks (5.17+) and unrolled (older
     * kernels): the verifier accepts both here too, and says how much it walked (the guest kernels verify it under
     * TCG, where each processed instruction costs far more). The callbacks must walk far less.
     */
    @Test
    void verifierAcceptsTheChunkedPrograms() throws Exception {
        KernelLayout chunked = layout.withoutKfuncs();
        assertTrue(chunked.copiesInChunks());
        assumeTrue(chunked.hasBpfLoop(), "this kernel has no bpf_loop");
        int[] callbacks = VerifierCost.verifiedInsns(chunked, "callbacks");
        int[] unrolled = VerifierCost.verifiedInsns(chunked.withoutBpfLoop(), "unrolled");
        assertTrue(callbacks[0] * 5 < unrolled[0], "the LOAD hook walks at least 5x less with bpf_loop");
        assertTrue(callbacks[1] * 10 < unrolled[1], "the FREE hook too");
    }
}

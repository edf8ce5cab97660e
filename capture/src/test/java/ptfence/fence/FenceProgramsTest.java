package ptfence.fence;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import ptfence.bpf.Btf;
import ptfence.bpf.Kallsyms;
import ptfence.bpf.ProgInfo;
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
        int[] callbacks = verifiedInsns(chunked, "callbacks");
        int[] unrolled = verifiedInsns(chunked.withoutBpfLoop(), "unrolled");
        assertTrue(callbacks[0] * 5 < unrolled[0], "the LOAD hook walks at least 5x less with bpf_loop");
        assertTrue(callbacks[1] * 10 < unrolled[1], "the FREE hook too");
    }

    /** Loads each chunked program; prints and returns verified_insns (OBJ_GET_INFO) of load, free, peek, tramp. */
    private static int[] verifiedInsns(KernelLayout chunked, String how) throws Exception {
        Bpf bpf = Bpf.get();
        try (BpfFd rb = bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, 1 << 20, 0, "t_rb");
             BpfFd stats = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "t_stats");
             BpfFd seen = bpf.mapCreate(Bpf.MAP_TYPE_LRU_HASH, 4, 4, 64, 0, "t_btf_seen");
             BpfFd scratch = bpf.mapCreate(Bpf.MAP_TYPE_PERCPU_ARRAY, 4, FencePrograms.SCRATCH_VALUE,
                     FencePrograms.SCRATCH_ENTRIES, 0, "t_scratch")) {
            FencePrograms p = new FencePrograms(chunked, rb.fd(), stats.fd(), 1 << 20, seen.fd(), scratch.fd());
            byte[][] programs = {p.load(), p.free(kallsyms.require("bpf_prog_free_deferred")), p.peek(),
                    p.trampolineFree(kallsyms.require("__bpf_tramp_image_put_deferred"))};
            String[] names = {"t_cload", "t_cfree", "t_cpeek", "t_ctramp"};
            int[] verified = new int[programs.length];
            for (int i = 0; i < programs.length; i++) {
                long t0 = System.nanoTime();
                try (BpfFd fd = FencePrograms.loadRawTracepoint(programs[i], names[i])) {
                    double ms = (System.nanoTime() - t0) / 1e6;
                    verified[i] = ProgInfo.fetch(fd).verifiedInsns();
                    System.out.printf("%s (%s): %d insns, verified in %.1f ms, verified_insns %d%n", names[i], how,
                            programs[i].length / 8, ms, verified[i]);
                }
            }
            return verified;
        }
    }
}

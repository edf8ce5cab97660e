package ptfence.fence;

import ptfence.bpf.Btf;
import ptfence.bpf.Kallsyms;
import ptfence.bpf.ProgInfo;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

/**
 * What the verifier walks for each chunked fence program (the copy path of kernels without the dynptr-read kfuncs),
 * with its loops as bpf_loop callbacks and unrolled: one line per program, "name how insns ms verified_insns", the
 * last from BPF_OBJ_GET_INFO_BY_FD; first the same for reading /proc/kallsyms and parsing the kernel's BTF
 * ("kallsyms read SYMBOLS ms 0", "btf parse TYPES ms 0"), which ptrec's start does too. Run by {@link FenceProgramsTest} here and in the guest kernels
 * ({@code ptfence.guest.VerifierCostCheck}), where the verifier runs under TCG and its walk dominates ptrec's start.
 * <p>
 * {@code java ptfence.fence.VerifierCost callbacks|unrolled|both}
 */
public final class VerifierCost {
    private VerifierCost() {
    }

    public static void main(String[] args) throws Exception {
        // What else ptrec's start reads, for comparison (each is read more than once there): kallsyms and the BTF.
        long t0 = System.nanoTime();
        int symbols = Kallsyms.read().symbols().size();
        long t1 = System.nanoTime();
        Btf btf = Btf.vmlinux();
        KernelLayout layout = KernelLayout.from(btf);
        long t2 = System.nanoTime();
        System.out.printf("kallsyms read %d %.1f 0%n", symbols, (t1 - t0) / 1e6);
        System.out.printf("btf parse %d %.1f 0%n", btf.typeCount(), (t2 - t1) / 1e6);
        KernelLayout chunked = layout.withoutKfuncs();
        String how = args.length > 0 ? args[0] : "callbacks";
        if (!how.equals("unrolled") && chunked.hasBpfLoop()) verifiedInsns(chunked, "callbacks");
        if (!how.equals("callbacks")) verifiedInsns(chunked.withoutBpfLoop(), "unrolled");
    }

    /** Loads each chunked program; prints and returns verified_insns of load, free, peek, tramp. */
    static int[] verifiedInsns(KernelLayout chunked, String how) throws Exception {
        Bpf bpf = Bpf.get();
        Kallsyms kallsyms = Kallsyms.read();
        try (BpfFd rb = bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, 1 << 20, 0, "t_rb");
             BpfFd stats = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "t_stats");
             BpfFd seen = bpf.mapCreate(Bpf.MAP_TYPE_LRU_HASH, 4, 4, 64, 0, "t_btf_seen");
             BpfFd scratch = bpf.mapCreate(Bpf.MAP_TYPE_PERCPU_ARRAY, 4, FencePrograms.SCRATCH_VALUE,
                     FencePrograms.SCRATCH_ENTRIES, 0, "t_scratch")) {
            FencePrograms p = new FencePrograms(chunked, rb.fd(), stats.fd(), 1 << 20, seen.fd(), scratch.fd());
            byte[][] programs = {p.load(), p.free(kallsyms.require("bpf_prog_free_deferred")), p.peek(),
                    p.trampolineFree(kallsyms.require("__bpf_tramp_image_put_deferred"))};
            String[] names = {"load", "free", "peek", "tramp"};
            int[] verified = new int[programs.length];
            for (int i = 0; i < programs.length; i++) {
                long t0 = System.nanoTime();
                try (BpfFd fd = FencePrograms.loadRawTracepoint(programs[i], "t_c" + names[i])) {
                    double ms = (System.nanoTime() - t0) / 1e6;
                    verified[i] = ProgInfo.fetch(fd).verifiedInsns();
                    System.out.printf("%s %s %d %.1f %d%n", names[i], how, programs[i].length / 8, ms, verified[i]);
                }
            }
            return verified;
        }
    }
}

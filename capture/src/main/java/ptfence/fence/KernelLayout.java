package ptfence.fence;

import ptfence.bpf.Btf;
import ptfence.cli.BadInputException;

import java.util.OptionalInt;

/**
 * Every kernel struct offset and kfunc id the fence programs use, computed from the running kernel's BTF —
 * nothing here is hard-coded, so a kernel whose layout moves still gets a correct fence.
 */
public record KernelLayout(
        int ptRegsOrigAx, int ptRegsDi, int ptRegsBx,
        int taskFiles, int filesFdt, int fdtMaxFds, int fdtFd, int filePrivateData,
        int progAux, int progBpfFunc, int progJitedLen, int progTag,
        int auxProg, int auxId, int auxRealFuncCnt, int auxFunc, int auxKsymName, int auxWork,
        int workFunc,
        OptionalInt trampImage, OptionalInt trampSize, OptionalInt trampKsymName, OptionalInt trampWork,
        int kfuncIterNew, int kfuncIterNext, int kfuncIterDestroy,
        int kfuncReadKernelDynptr, int kfuncReadKernelStrDynptr) {

    public static KernelLayout from(Btf btf) {
        boolean tramp = hasStruct(btf, "bpf_tramp_image");
        return new KernelLayout(
                btf.offsetOf("pt_regs", "orig_ax"), btf.offsetOf("pt_regs", "di"), btf.offsetOf("pt_regs", "bx"),
                btf.offsetOf("task_struct", "files"), btf.offsetOf("files_struct", "fdt"),
                btf.offsetOf("fdtable", "max_fds"), btf.offsetOf("fdtable", "fd"),
                btf.offsetOf("file", "private_data"),
                btf.offsetOf("bpf_prog", "aux"), btf.offsetOf("bpf_prog", "bpf_func"),
                btf.offsetOf("bpf_prog", "jited_len"), btf.offsetOf("bpf_prog", "tag"),
                btf.offsetOf("bpf_prog_aux", "prog"), btf.offsetOf("bpf_prog_aux", "id"),
                btf.offsetOf("bpf_prog_aux", "real_func_cnt"), btf.offsetOf("bpf_prog_aux", "func"),
                btf.offsetOf("bpf_prog_aux", "ksym.name"), btf.offsetOf("bpf_prog_aux", "work"),
                btf.offsetOf("work_struct", "func"),
                tramp ? OptionalInt.of(btf.offsetOf("bpf_tramp_image", "image")) : OptionalInt.empty(),
                tramp ? OptionalInt.of(btf.offsetOf("bpf_tramp_image", "size")) : OptionalInt.empty(),
                tramp ? OptionalInt.of(btf.offsetOf("bpf_tramp_image", "ksym.name")) : OptionalInt.empty(),
                tramp ? OptionalInt.of(btf.offsetOf("bpf_tramp_image", "work")) : OptionalInt.empty(),
                kfunc(btf, "bpf_iter_num_new"), kfunc(btf, "bpf_iter_num_next"), kfunc(btf, "bpf_iter_num_destroy"),
                kfunc(btf, "bpf_probe_read_kernel_dynptr"), kfunc(btf, "bpf_probe_read_kernel_str_dynptr"));
    }

    private static boolean hasStruct(Btf btf, String name) {
        try {
            btf.structId(name);
            return true;
        } catch (BadInputException e) {
            return false;
        }
    }

    private static int kfunc(Btf btf, String name) {
        return btf.funcId(name).orElseThrow(() -> new BadInputException(
                "kernel BTF has no kfunc " + name + " (the in-kernel fence needs Linux 6.4+ iterators and the"
                        + " probe_read_kernel dynptr kfuncs)"));
    }
}

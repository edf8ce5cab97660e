package ptfence.fence;

import ptfence.bpf.Btf;
import ptfence.cli.BadInputException;

import java.util.OptionalInt;

/**
 * Every kernel struct offset and kfunc id the fence programs use, computed from the running kernel's BTF —
 * nothing here is hard-coded, so a kernel whose layout moves still gets a correct fence. Members that moved or were
 * renamed between 5.15 and 6.18 resolve to what the running kernel has (bpf_prog_aux.real_func_cnt, 6.7+, else
 * func_cnt, which counted every function before exception callbacks existed). A kfunc the kernel lacks is -1: the
 * programs then copy by older means ({@link #copiesInChunks}), with bpf_loop callbacks where the kernel has that
 * helper (5.17+; {@code hasBpfLoop}: its FUNC in BTF).
 */
public record KernelLayout(
        int ptRegsOrigAx, int ptRegsDi, int ptRegsBx,
        int taskFiles, int filesFdt, int fdtMaxFds, int fdtFd, int filePrivateData,
        int progAux, int progBpfFunc, int progJitedLen, int progTag,
        int auxProg, int auxId, int auxRealFuncCnt, int auxFunc, int auxKsymName, int auxWork,
        int workFunc,
        OptionalInt trampImage, OptionalInt trampSize, OptionalInt trampKsymName, OptionalInt trampWork,
        int kfuncIterNew, int kfuncIterNext, int kfuncIterDestroy,
        int kfuncReadKernelDynptr, int kfuncReadKernelStrDynptr,
        java.util.Optional<Metadata> metadata, boolean hasBpfLoop, java.util.Optional<Dispatcher> dispatcher,
        java.util.Optional<TrampolineBuild> trampolineBuild, java.util.Optional<TrampolineUpdate> trampolineUpdate) {

    /**
     * What the dispatcher hook reads at the return of {@code bpf_dispatcher_change_prog(d, from, to)} (the half in
     * force is {@code d->image + d->image_off}, none while {@code d->num_progs} is 0), and the BTF id of that
     * function, where a tracing program attaches. Absent where the kernel's struct bpf_dispatcher lacks one of them
     * (before 5.7, no dispatcher; the image_off of two halves since then).
     */
    public record Dispatcher(int numProgs, int image, int imageOff, int ksymName, int changeProgFunc) {
        static java.util.Optional<Dispatcher> from(Btf btf) {
            var func = btf.funcId("bpf_dispatcher_change_prog");
            if (func.isEmpty()) return java.util.Optional.empty();
            try {
                return java.util.Optional.of(new Dispatcher(btf.offsetOf("bpf_dispatcher", "num_progs"),
                        btf.offsetOf("bpf_dispatcher", "image"), btf.offsetOf("bpf_dispatcher", "image_off"),
                        btf.offsetOf("bpf_dispatcher", "ksym.name"), func.getAsInt()));
            } catch (BadInputException e) {
                return java.util.Optional.empty();
            }
        }
    }

    /**
     * What the trampoline hook reads at the return of {@code arch_prepare_bpf_trampoline(im, image, image_end, m,
     * flags, tlinks, func_addr)}: the indexes of {@code im} and {@code image} among its arguments, found by name in
     * the kernel's FUNC_PROTO (6.1's weak default names the first {@code tr} and the last {@code orig_call}; x86's
     * own, which runs, {@code im}), the count of arguments (fexit's context has the return value after them: the
     * bytes written, where positive), the function's BTF id, and the offset of {@code bpf_tramp_image.ksym.name}.
     * Absent where one of them is missing (struct_ops' calls pass no image struct: im is NULL then).
     */
    public record TrampolineBuild(int imArg, int imageArg, int args, int prepareFunc, int ksymName) {
        static final String FUNC = "arch_prepare_bpf_trampoline";

        static java.util.Optional<TrampolineBuild> from(Btf btf) {
            var func = btf.funcId(FUNC);
            int im = btf.paramIndex(FUNC, "im") >= 0 ? btf.paramIndex(FUNC, "im") : btf.paramIndex(FUNC, "tr");
            int image = btf.paramIndex(FUNC, "image"), args = btf.paramCount(FUNC);
            if (func.isEmpty() || im < 0 || image < 0 || args <= 0 || args > 12) return java.util.Optional.empty();
            try {
                return java.util.Optional.of(new TrampolineBuild(im, image, args, func.getAsInt(),
                        btf.offsetOf("bpf_tramp_image", "ksym.name")));
            } catch (BadInputException e) {
                return java.util.Optional.empty();
            }
        }
    }

    /**
     * What the trampoline hook reads where the build hook cannot attach (6.1: its x86 trampolines take at most 6
     * arguments, arch_prepare_bpf_trampoline has 7): at the return of {@code bpf_trampoline_update(tr,
     * lock_direct_mutex)}, still under tr->mutex and after the attach poke, {@code tr->cur_image} is the image in
     * force (NULL after the last detach). Holds the index of {@code tr} among its arguments and their count (fexit's
     * context has the int return value after them), the function's BTF id, and the offsets of {@code
     * bpf_trampoline.cur_image}, {@code bpf_tramp_image.image} and its {@code ksym.start}, {@code ksym.end} (the
     * image's extent as its KSYMBOL says: a page on 6.1) and {@code ksym.name}.
     */
    public record TrampolineUpdate(int trArg, int args, int updateFunc, int curImage, int imImage, int ksymStart,
            int ksymEnd, int ksymName) {
        static final String FUNC = "bpf_trampoline_update";

        static java.util.Optional<TrampolineUpdate> from(Btf btf) {
            var func = btf.funcId(FUNC);
            int tr = btf.paramIndex(FUNC, "tr"), args = btf.paramCount(FUNC);
            if (func.isEmpty() || tr < 0 || args <= 0 || args > 6) return java.util.Optional.empty();
            try {
                return java.util.Optional.of(new TrampolineUpdate(tr, args, func.getAsInt(),
                        btf.offsetOf("bpf_trampoline", "cur_image"), btf.offsetOf("bpf_tramp_image", "image"),
                        btf.offsetOf("bpf_tramp_image", "ksym.start"), btf.offsetOf("bpf_tramp_image", "ksym.end"),
                        btf.offsetOf("bpf_tramp_image", "ksym.name")));
            } catch (BadInputException e) {
                return java.util.Optional.empty();
            }
        }
    }

    /**
     * What the LOAD hook reads besides the code, so a program's metadata is taken in the same window as its bytes
     * (docs/fence.md, Metadata): struct bpf_prog, bpf_prog_aux, btf, bpf_map and user_struct offsets. Absent where
     * the kernel lacks one of them; the fence then falls back to bpf() for metadata.
     */
    public record Metadata(int progType, int progExpectedAttachType, int progLen, int progInsnsi, long progGplBit,
            int auxUsedMapCnt, int auxUsedMaps, int auxAttachBtfId, int auxAttachBtf, int auxDstProg,
            int auxAttachFuncName, int auxLoadTime, int auxVerifiedInsns, int auxName, int auxBtf, int auxFuncInfo,
            int auxFuncInfoCnt, int auxLinfo, int auxJitedLinfo, int auxNrLinfo, int auxUser, int userUid,
            int btfData, int btfDataSize, int btfId, int mapId, int mapType, int mapMaxEntries, int mapValueSize,
            int arrayValue) {

        /** The member's offset, or -1 where this kernel has none (bpf_prog_aux.verified_insns came in 5.16). */
        private static int optional(Btf btf, String struct, String member) {
            try {
                return btf.offsetOf(struct, member);
            } catch (BadInputException e) {
                return -1;
            }
        }

        static java.util.Optional<Metadata> from(Btf btf) {
            try {
                return java.util.Optional.of(new Metadata(btf.offsetOf("bpf_prog", "type"),
                        btf.offsetOf("bpf_prog", "expected_attach_type"), btf.offsetOf("bpf_prog", "len"),
                        btf.offsetOf("bpf_prog", "insnsi"), btf.bitOffsetOf("bpf_prog", "gpl_compatible"),
                        btf.offsetOf("bpf_prog_aux", "used_map_cnt"), btf.offsetOf("bpf_prog_aux", "used_maps"),
                        btf.offsetOf("bpf_prog_aux", "attach_btf_id"), btf.offsetOf("bpf_prog_aux", "attach_btf"),
                        btf.offsetOf("bpf_prog_aux", "dst_prog"), btf.offsetOf("bpf_prog_aux", "attach_func_name"),
                        btf.offsetOf("bpf_prog_aux", "load_time"), optional(btf, "bpf_prog_aux", "verified_insns"),
                        btf.offsetOf("bpf_prog_aux", "name"), btf.offsetOf("bpf_prog_aux", "btf"),
                        btf.offsetOf("bpf_prog_aux", "func_info"), btf.offsetOf("bpf_prog_aux", "func_info_cnt"),
                        btf.offsetOf("bpf_prog_aux", "linfo"), btf.offsetOf("bpf_prog_aux", "jited_linfo"),
                        btf.offsetOf("bpf_prog_aux", "nr_linfo"), btf.offsetOf("bpf_prog_aux", "user"),
                        btf.offsetOf("user_struct", "uid"), btf.offsetOf("btf", "data"),
                        btf.offsetOf("btf", "data_size"), btf.offsetOf("btf", "id"), btf.offsetOf("bpf_map", "id"),
                        btf.offsetOf("bpf_map", "map_type"), btf.offsetOf("bpf_map", "max_entries"),
                        btf.offsetOf("bpf_map", "value_size"), btf.offsetOf("bpf_array", "value")));
            } catch (BadInputException e) {
                return java.util.Optional.empty();
            }
        }
    }

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
                realFuncCnt(btf), btf.offsetOf("bpf_prog_aux", "func"),
                btf.offsetOf("bpf_prog_aux", "ksym.name"), btf.offsetOf("bpf_prog_aux", "work"),
                btf.offsetOf("work_struct", "func"),
                tramp ? OptionalInt.of(btf.offsetOf("bpf_tramp_image", "image")) : OptionalInt.empty(),
                tramp ? member(btf, "bpf_tramp_image", "size") : OptionalInt.empty(), // 6.7+: one page before
                tramp ? OptionalInt.of(btf.offsetOf("bpf_tramp_image", "ksym.name")) : OptionalInt.empty(),
                tramp ? OptionalInt.of(btf.offsetOf("bpf_tramp_image", "work")) : OptionalInt.empty(),
                kfunc(btf, "bpf_iter_num_new"), kfunc(btf, "bpf_iter_num_next"), kfunc(btf, "bpf_iter_num_destroy"),
                kfunc(btf, "bpf_probe_read_kernel_dynptr"), kfunc(btf, "bpf_probe_read_kernel_str_dynptr"),
                Metadata.from(btf), btf.funcId("bpf_loop").isPresent(), Dispatcher.from(btf),
                TrampolineBuild.from(btf), TrampolineUpdate.from(btf));
    }

    /**
     * Whether the programs must copy without the iterator and dynptr-read kfuncs (before Linux 6.4 for the iterators;
     * bpf_probe_read_kernel_dynptr came later still, and Debian's 6.12 lacks it): images and metadata then go into the
     * ring in bounded bpf_probe_read_kernel chunks through a per-CPU scratch buffer, reassembled by the consumer
     * ({@link FragmentAssembler}).
     */
    public boolean copiesInChunks() {
        return kfuncIterNew < 0 || kfuncIterNext < 0 || kfuncIterDestroy < 0 || kfuncReadKernelDynptr < 0
                || kfuncReadKernelStrDynptr < 0;
    }

    /** This layout with the kfuncs taken away: the chunked copy path on any kernel (its tests run it here too). */
    KernelLayout withoutKfuncs() {
        return new KernelLayout(ptRegsOrigAx, ptRegsDi, ptRegsBx, taskFiles, filesFdt, fdtMaxFds, fdtFd,
                filePrivateData, progAux, progBpfFunc, progJitedLen, progTag, auxProg, auxId, auxRealFuncCnt, auxFunc,
                auxKsymName, auxWork, workFunc, trampImage, trampSize, trampKsymName, trampWork, -1, -1, -1, -1, -1,
                metadata, hasBpfLoop, dispatcher, trampolineBuild, trampolineUpdate);
    }

    /** This layout as a kernel without bpf_loop (before 5.17) sees it: the chunked path's loops unrolled. */
    KernelLayout withoutBpfLoop() {
        return new KernelLayout(ptRegsOrigAx, ptRegsDi, ptRegsBx, taskFiles, filesFdt, fdtMaxFds, fdtFd,
                filePrivateData, progAux, progBpfFunc, progJitedLen, progTag, auxProg, auxId, auxRealFuncCnt, auxFunc,
                auxKsymName, auxWork, workFunc, trampImage, trampSize, trampKsymName, trampWork, kfuncIterNew,
                kfuncIterNext, kfuncIterDestroy, kfuncReadKernelDynptr, kfuncReadKernelStrDynptr, metadata, false, dispatcher,
                trampolineBuild, trampolineUpdate);
    }

    /** What this kernel lacks for the newer copy path, for the summary ("" where nothing). */
    public String missingKfuncs() {
        java.util.List<String> missing = new java.util.ArrayList<>();
        if (kfuncIterNew < 0 || kfuncIterNext < 0 || kfuncIterDestroy < 0) missing.add("bpf_iter_num_* (6.4+)");
        if (kfuncReadKernelDynptr < 0 || kfuncReadKernelStrDynptr < 0) {
            missing.add("bpf_probe_read_kernel_dynptr/_str_dynptr");
        }
        return String.join(", ", missing);
    }

    private static OptionalInt member(Btf btf, String struct, String member) {
        try {
            return OptionalInt.of(btf.offsetOf(struct, member));
        } catch (BadInputException e) {
            return OptionalInt.empty();
        }
    }

    /** bpf_prog_aux.real_func_cnt (6.7+, counts the exception callback too), else func_cnt. */
    private static int realFuncCnt(Btf btf) {
        try {
            return btf.offsetOf("bpf_prog_aux", "real_func_cnt");
        } catch (BadInputException e) {
            return btf.offsetOf("bpf_prog_aux", "func_cnt");
        }
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
        return btf.funcId(name).orElse(-1);
    }
}

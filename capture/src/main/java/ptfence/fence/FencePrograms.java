package ptfence.fence;

import ptfence.bpf.BpfAssembler;
import ptfence.bpf.BpfAssembler.Cond;
import ptfence.bpf.BpfAssembler.Reg;

import static ptfence.bpf.BpfAssembler.Reg.*;
import static ptfence.bpf.BpfAssembler.Size.*;
import static ptfence.fence.FenceRecord.*;

/**
 * Emits the fence's BPF programs (raw tracepoints, no libbpf, no clang):
 * <ul>
 * <li>LOAD, on {@code sys_exit}: after a successful bpf(BPF_PROG_LOAD) (64-bit or ia32 compat), in the loading
 *     thread and before it
 *     returns, walks current->files->fdt->fd[ret]->private_data to the new struct bpf_prog;</li>
 * <li>FREE, on {@code workqueue_execute_start}: when the work item is bpf_prog_free_deferred — immediately before
 *     that function frees the JIT text — takes the prog from container_of(work, struct bpf_prog_aux, work);</li>
 * <li>TRAMP_FREE, same tracepoint, for the trampoline image put work (copies image[0..size));</li>
 * <li>PEEK, run on demand with BPF_PROG_TEST_RUN and ctx {addr, len}: copies any kernel range.</li>
 * </ul>
 * Each copies every JITed function's exact bytes into one ring-buffer record (reserve_dynptr + the
 * probe_read_kernel_dynptr kfunc), synchronously. A failed reserve is counted in the stats map.
 */
final class FencePrograms {
    /** Slots of the stats array map. */
    static final int STAT_RESERVE_FAILED = 0, STAT_SUBMITTED = 1, STAT_FUNCS_TRUNCATED = 2, STATS = 4;

    private static final int HELPER_MAP_LOOKUP = 1, HELPER_KTIME_NS = 5, HELPER_PID_TGID = 14,
            HELPER_CURRENT_TASK = 35, HELPER_PROBE_READ_KERNEL = 113, HELPER_RINGBUF_QUERY = 134,
            HELPER_RESERVE_DYNPTR = 198, HELPER_SUBMIT_DYNPTR = 199, HELPER_DISCARD_DYNPTR = 200,
            HELPER_DYNPTR_DATA = 203;
    /** bpf(2) on x86-64, and through the ia32 compat entry (int 0x80), where the first argument is in bx. */
    private static final int NR_BPF = 321, NR_BPF_IA32 = 357, BPF_PROG_LOAD = 5;
    private static final int RB_NO_WAKEUP = 1, RB_FORCE_WAKEUP = 2;

    // Stack slots (r10-relative).
    private static final int TMP = -8, ITER = -16, DYNPTR = -32, P = -40, AUX = -48, FUNCS = -56, N = -64, ID = -72,
            CNT = -80, FCNT = -88, START = -96, SIZE = -104, NAMEP = -112, CLEN = -120, FLAGS = -128;

    private final KernelLayout k;
    private final int ringFd, statsFd, ringSize;

    FencePrograms(KernelLayout layout, int ringFd, int statsFd, int ringSize) {
        this.k = layout;
        this.ringFd = ringFd;
        this.statsFd = statsFd;
        this.ringSize = ringSize;
    }

    /** raw_tp/sys_exit: ctx = {struct pt_regs *regs, long ret}. */
    byte[] load() {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 0).load(DW, R7, R1, 8)
                .jumpIf(Cond.SLT, R7, 0, "out");
        read64(a, TMP, R6, k.ptRegsOrigAx());
        a.load(DW, R1, R10, TMP).jumpIf(Cond.EQ, R1, NR_BPF, "native").jumpIf(Cond.NE, R1, NR_BPF_IA32, "out");
        read64(a, TMP, R6, k.ptRegsBx());
        a.jump("cmd");
        a.label("native");
        read64(a, TMP, R6, k.ptRegsDi());
        a.label("cmd").load(DW, R1, R10, TMP)
                .alu(BpfAssembler.Alu.LSH, R1, 32).alu(BpfAssembler.Alu.RSH, R1, 32)   // int cmd: the low 32 bits
                .jumpIf(Cond.NE, R1, BPF_PROG_LOAD, "out");
        a.call(HELPER_CURRENT_TASK).mov(R8, R0);
        deref(a, R8, k.taskFiles());
        deref(a, R8, k.filesFdt());
        read32(a, TMP, R8, k.fdtMaxFds());
        a.load(DW, R1, R10, TMP).jumpIf(Cond.GE, R7, R1, "out");
        deref(a, R8, k.fdtFd());
        a.mov(R6, R7).alu(BpfAssembler.Alu.LSH, R6, 3).add(R6, R8);
        deref(a, R6, 0);                       // struct file *
        deref(a, R6, k.filePrivateData());     // struct bpf_prog *
        captureProgram(a, KIND_LOAD);
        return a.assemble();
    }

    /** raw_tp/workqueue_execute_start: ctx = {struct work_struct *work}. */
    byte[] free(long bpfProgFreeDeferred) {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 0);
        read64(a, TMP, R6, k.workFunc());
        a.load(DW, R1, R10, TMP).loadImm64(R2, bpfProgFreeDeferred).jumpIf(Cond.NE, R1, R2, "out");
        a.add(R6, -k.auxWork());
        deref(a, R6, k.auxProg());
        captureProgram(a, KIND_FREE);
        return a.assemble();
    }

    /** raw_tp/workqueue_execute_start for the trampoline image put work: copies image[0..size). */
    byte[] trampolineFree(long trampImagePutDeferred) {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 0);
        read64(a, TMP, R6, k.workFunc());
        a.load(DW, R1, R10, TMP).loadImm64(R2, trampImagePutDeferred).jumpIf(Cond.NE, R1, R2, "out");
        a.add(R6, -k.trampWork().orElseThrow());   // struct bpf_tramp_image *
        a.store(DW, R10, P, 0).store(DW, R10, ID, 0).store(DW, R10, FLAGS, 0)
                .store(DW, R10, FCNT, 1).store(DW, R10, CNT, 1);
        read64(a, START, R6, k.trampImage().orElseThrow());
        read32(a, SIZE, R6, k.trampSize().orElseThrow());
        a.mov(R1, R6).add(R1, k.trampKsymName().orElseThrow()).store(DW, R10, NAMEP, R1);
        a.mov(R8, 0);
        emitRecord(a, KIND_TRAMP_FREE, false, "out");
        a.label("out").mov(R0, 0).exit();
        return a.assemble();
    }

    /** Run by BPF_PROG_TEST_RUN with ctx {u64 addr, u64 len}: one record of kind PEEK, no name. */
    byte[] peek() {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R2, R1, 0).store(DW, R10, START, R2);
        a.load(DW, R2, R1, 8).store(DW, R10, SIZE, R2);
        a.store(DW, R10, P, 0).store(DW, R10, ID, 0).store(DW, R10, FLAGS, 0)
                .store(DW, R10, FCNT, 1).store(DW, R10, CNT, 1).store(DW, R10, NAMEP, 0);
        a.mov(R8, 0);
        emitRecord(a, KIND_PEEK, false, "out");
        a.label("out").mov(R0, 0).exit();
        return a.assemble();
    }

    /** r6 = struct bpf_prog *: one record per JITed function, then "out: return 0". */
    private void captureProgram(BpfAssembler a, int kind) {
        a.store(DW, R10, P, R6);
        read64(a, TMP, R6, k.progAux());
        a.load(DW, R7, R10, TMP).jumpIf(Cond.EQ, R7, 0, "out");
        read64(a, TMP, R7, k.auxProg());
        a.load(DW, R1, R10, TMP).jumpIf(Cond.NE, R1, R6, "out");     // not a bpf_prog after all
        a.store(DW, R10, AUX, R7);
        read32(a, ID, R7, k.auxId());
        read32(a, N, R7, k.auxRealFuncCnt());
        read64(a, FUNCS, R7, k.auxFunc());
        a.store(DW, R10, FLAGS, 0);
        a.load(DW, R1, R10, N).jumpIf(Cond.NE, R1, 0, "have_cnt").mov(R1, 1).label("have_cnt");
        a.store(DW, R10, FCNT, R1);
        a.jumpIf(Cond.LE, R1, MAX_FUNCS, "cnt_ok").mov(R1, MAX_FUNCS).store(DW, R10, FLAGS, F_FTRUNC);
        countStat(a, STAT_FUNCS_TRUNCATED);
        a.mov(R1, MAX_FUNCS);
        a.label("cnt_ok").store(DW, R10, CNT, R1);
        a.mov(R1, R10).add(R1, ITER).mov(R2, 0).load(DW, R3, R10, CNT).callKfunc(k.kfuncIterNew());

        a.label("loop");
        a.mov(R1, R10).add(R1, ITER).callKfunc(k.kfuncIterNext()).jumpIf(Cond.EQ, R0, 0, "done");
        a.load(W, R8, R0, 0);                                          // i
        a.load(DW, R9, R10, P);                                        // f = prog ...
        a.load(DW, R1, R10, N).jumpIf(Cond.EQ, R1, 0, "have_f");
        a.mov(R3, R8).alu(BpfAssembler.Alu.LSH, R3, 3).load(DW, R1, R10, FUNCS).add(R3, R1);   // ... or func[i]
        a.mov(R1, R10).add(R1, TMP).mov(R2, 8).call(HELPER_PROBE_READ_KERNEL);
        a.load(DW, R9, R10, TMP).jumpIf(Cond.EQ, R9, 0, "loop");
        a.label("have_f");
        read64(a, START, R9, k.progBpfFunc());
        read32(a, SIZE, R9, k.progJitedLen());
        // Function 0 has no ksym of its own: the program's ksym names it.
        a.load(DW, R1, R10, AUX).jumpIf(Cond.EQ, R8, 0, "have_aux");
        read64(a, TMP, R9, k.progAux());
        a.load(DW, R1, R10, TMP);
        a.label("have_aux").add(R1, k.auxKsymName()).store(DW, R10, NAMEP, R1);
        emitRecord(a, kind, true, "loop");
        a.label("done").mov(R1, R10).add(R1, ITER).callKfunc(k.kfuncIterDestroy());
        a.label("out").mov(R0, 0).exit();
    }

    /**
     * Reserve, fill and submit one record from the slots START, SIZE, NAMEP, ID, P, FCNT, CNT, FLAGS and r8 = the
     * function index; jumps to {@code next} when done (or after counting a failed reserve).
     */
    private void emitRecord(BpfAssembler a, int kind, boolean withTag, String next) {
        String discard = "discard_" + kind, named = "named_" + kind;
        a.load(DW, R1, R10, SIZE).jumpIf(Cond.LE, R1, MAX_IMAGE, "clen_" + kind).mov(R1, MAX_IMAGE)
                .label("clen_" + kind).store(DW, R10, CLEN, R1);
        a.loadMapFd(R1, ringFd).load(DW, R2, R10, CLEN).add(R2, IMAGE).mov(R3, 0)
                .mov(R4, R10).add(R4, DYNPTR).call(HELPER_RESERVE_DYNPTR).jumpIf(Cond.NE, R0, 0, discard);
        a.mov(R1, R10).add(R1, DYNPTR).mov(R2, 0).mov(R3, IMAGE).call(HELPER_DYNPTR_DATA)
                .jumpIf(Cond.EQ, R0, 0, discard);
        a.mov(R7, R0);                                                  // header, IMAGE bytes
        a.load(DW, R1, R10, START).store(DW, R7, FenceRecord.START, R1)
                .load(DW, R2, R10, SIZE).add(R1, R2).store(DW, R7, END, R1);
        a.call(HELPER_KTIME_NS).store(DW, R7, TS, R0);
        a.store(W, R7, KIND, kind).store(W, R7, OFF, 0);
        a.load(DW, R1, R10, CLEN).store(W, R7, LEN, R1).store(W, R7, CAP, R1);
        a.store(W, R7, NAME_LEN, 0).store(W, R7, ERR, 0);
        a.call(HELPER_PID_TGID).store(W, R7, TID, R0).alu(BpfAssembler.Alu.RSH, R0, 32).store(W, R7, PID, R0);
        a.load(DW, R1, R10, ID).store(W, R7, PROG_ID, R1);
        a.store(H, R7, FUNC_IDX, R8).load(DW, R1, R10, FCNT).store(H, R7, FUNC_CNT, R1);
        a.load(DW, R1, R10, FLAGS);
        a.load(DW, R2, R10, CNT).add(R2, -1).jumpIf(Cond.NE, R8, R2, "notlast_" + kind)
                .alu(BpfAssembler.Alu.OR, R1, F_LAST).label("notlast_" + kind);
        a.load(DW, R2, R10, CLEN).load(DW, R3, R10, SIZE).jumpIf(Cond.EQ, R2, R3, "whole_" + kind)
                .alu(BpfAssembler.Alu.OR, R1, F_TRUNC).label("whole_" + kind);
        a.store(W, R7, FenceRecord.FLAGS, R1).store(W, R7, PAD, 0).store(DW, R7, TAG, 0);
        if (withTag) {
            a.mov(R1, R7).add(R1, TAG).mov(R2, 8).load(DW, R3, R10, P).add(R3, k.progTag())
                    .call(HELPER_PROBE_READ_KERNEL);
        }
        a.load(DW, R4, R10, NAMEP).jumpIf(Cond.EQ, R4, 0, named);
        a.mov(R1, R10).add(R1, DYNPTR).mov(R2, NAME).mov(R3, NAME_MAX).callKfunc(k.kfuncReadKernelStrDynptr())
                .store(W, R7, NAME_LEN, R0);
        a.label(named);
        a.mov(R1, R10).add(R1, DYNPTR).mov(R2, IMAGE).load(DW, R3, R10, CLEN).load(DW, R4, R10, START)
                .callKfunc(k.kfuncReadKernelDynptr()).store(W, R7, ERR, R0);
        // Wake the consumer only when the ring is a quarter full: a wakeup per record costs ~15 µs per program.
        a.loadMapFd(R1, ringFd).mov(R2, 0).call(HELPER_RINGBUF_QUERY)
                .mov(R2, RB_NO_WAKEUP).jumpIf(Cond.LE, R0, ringSize / 4, "quiet_" + kind).mov(R2, RB_FORCE_WAKEUP)
                .label("quiet_" + kind);
        a.mov(R1, R10).add(R1, DYNPTR).call(HELPER_SUBMIT_DYNPTR);
        countStat(a, STAT_SUBMITTED);
        a.jump(next);
        // A failed reserve still hands back a dynptr that must be discarded; then the loss is counted.
        a.label(discard).mov(R1, R10).add(R1, DYNPTR).mov(R2, 0).call(HELPER_DISCARD_DYNPTR);
        countStat(a, STAT_RESERVE_FAILED);
        a.jump(next);
    }

    private int stat = 0;

    /** stats[slot] += 1 (clobbers r0-r5). */
    private void countStat(BpfAssembler a, int slot) {
        String skip = "stat_" + (stat++);
        a.store(W, R10, TMP, slot).store(W, R10, TMP + 4, 0)
                .loadMapFd(R1, statsFd).mov(R2, R10).add(R2, TMP).call(HELPER_MAP_LOOKUP)
                .jumpIf(Cond.EQ, R0, 0, skip).mov(R1, 1).atomicAdd64(R0, 0, R1).label(skip);
    }

    /** slot = *(u64 *)(reg + off), via bpf_probe_read_kernel (zero on fault). */
    private static void read64(BpfAssembler a, int slot, Reg reg, int off) {
        a.mov(R1, R10).add(R1, slot).mov(R2, 8).mov(R3, reg).add(R3, off).call(HELPER_PROBE_READ_KERNEL);
    }

    /** slot = (u64) *(u32 *)(reg + off). */
    private static void read32(BpfAssembler a, int slot, Reg reg, int off) {
        a.store(DW, R10, slot, 0);
        a.mov(R1, R10).add(R1, slot).mov(R2, 4).mov(R3, reg).add(R3, off).call(HELPER_PROBE_READ_KERNEL);
    }

    /** reg = *(u64 *)(reg + off); goto out if that is NULL. */
    private static void deref(BpfAssembler a, Reg reg, int off) {
        read64(a, TMP, reg, off);
        a.load(DW, reg, R10, TMP).jumpIf(Cond.EQ, reg, 0, "out");
    }
}

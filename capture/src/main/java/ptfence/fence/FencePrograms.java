package ptfence.fence;

import ptfence.bpf.BpfAssembler;
import ptfence.bpf.BpfAssembler.Cond;
import ptfence.bpf.BpfAssembler.Reg;
import ptfence.bpf.BtfWriter;
import ptfence.sys.Bpf;
import ptfence.sys.BpfException;
import ptfence.sys.BpfFd;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

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
 * <p>
 * On a kernel without those kfuncs (before 6.4; Debian's 6.12 too: {@link KernelLayout#copiesInChunks}) the same
 * records are written in fragments instead ({@link FenceRecord#KIND_FRAG}): each range is copied in bounded
 * bpf_probe_read_kernel chunks into a per-CPU scratch buffer and sent with bpf_ringbuf_output (5.8+), the header last;
 * loops are bpf_loop callbacks (5.17+: the verifier walks each body once, or until its states converge, instead of
 * unrolling every iteration) or, without bpf_loop, bounded counters (5.3+) that the verifier unrolls.
 * {@link FragmentAssembler} puts them back together.
 */
final class FencePrograms {
    /** Slots of the stats array map. */
    static final int STAT_RESERVE_FAILED = 0, STAT_SUBMITTED = 1, STAT_FUNCS_TRUNCATED = 2, STAT_META_SUBMITTED = 3,
            STATS = 4;

    private static final int HELPER_MAP_LOOKUP = 1, HELPER_KTIME_NS = 5, HELPER_PID_TGID = 14,
            HELPER_CURRENT_TASK = 35, HELPER_PROBE_READ_KERNEL = 113, HELPER_RINGBUF_QUERY = 134,
            HELPER_RESERVE_DYNPTR = 198, HELPER_SUBMIT_DYNPTR = 199, HELPER_DISCARD_DYNPTR = 200,
            HELPER_DYNPTR_DATA = 203, HELPER_MAP_UPDATE = 2, HELPER_MAP_DELETE = 3, HELPER_DYNPTR_WRITE = 202, HELPER_PROBE_READ_KERNEL_STR = 115;
    private static final int BPF_NOEXIST = 1, HELPER_RINGBUF_RESERVE = 131, HELPER_RINGBUF_SUBMIT = 132,
            HELPER_SMP_PROCESSOR_ID = 8, HELPER_RINGBUF_OUTPUT = 130, HELPER_LOOP = 181;
    /**
     * The chunked path's per-CPU scratch map (value {@link #SCRATCH_VALUE} bytes, the most a per-CPU value may be):
     * one entry per hook so that no two programs share one. A value holds a fragment header and the logical record's
     * header at 0, a chunk's fragment header at {@link #CHUNK_AT} and up to {@link #CHUNK} bytes of data after it.
     */
    static final int SCRATCH_VALUE = 32768, SCRATCH_ENTRIES = 5, SCRATCH_LOAD = 0, SCRATCH_FREE = 1,
            SCRATCH_OTHER = 2, SCRATCH_DISPATCHER = 3, SCRATCH_TRAMPOLINE = 4;
    /** The most a trampoline build may have written and still be copied (x86: one page; a sanity bound). */
    static final int TRAMPOLINE_MAX = 1 << 16;
    /** A dispatcher's page is PAGE_SIZE (x86-64: 4096) in two halves; a version is one half. */
    static final int DISPATCHER_HALF = 2048;
    /** bpf_prog_type BPF_PROG_TYPE_TRACING and bpf_attach_type BPF_TRACE_FEXIT. */
    static final int PROG_TYPE_TRACING = 26, TRACE_FEXIT = 25;
    private static final int CHUNK_AT = 640, CHUNK = SCRATCH_VALUE - CHUNK_AT - FenceRecord.FRAG_HEADER;
    /**
     * Bounds of the chunked path's loops where they are bounded counters (no bpf_loop): functions per program, chunks
     * per range. The verifier unrolls every such loop, nested ones multiplied: 8 x 8 verifies the LOAD hook in ~1 s
     * here (32 x 32 passed the 1M-instruction limit), and far slower under an emulated guest. With bpf_loop the
     * bounds are the unchunked path's ({@link FenceRecord#MAX_FUNCS}, {@link FenceRecord#MAX_IMAGE}).
     */
    static final int CHUNKED_FUNCS = 8, CHUNKS = 8;
    /** The largest range the chunked path copies whole at least (~256 KB): a larger image may be flagged F_TRUNC. */
    static final int CHUNKED_MAX = CHUNKS * CHUNK;
    /** bpf commands that attach or detach programs: BPF_PROG_ATTACH, _DETACH, BPF_LINK_CREATE, _UPDATE, _DETACH. */
    private static final int[] ATTACH_COMMANDS = {8, 9, 28, 29, 34};
    /** bpf(2) on x86-64, and through the ia32 compat entry (int 0x80), where the first argument is in bx. */
    private static final int NR_BPF = 321, NR_BPF_IA32 = 357, BPF_PROG_LOAD = 5;
    private static final int RB_NO_WAKEUP = 1, RB_FORCE_WAKEUP = 2, TRAMP_PAGE = 4096;

    // Stack slots (r10-relative).
    private static final int TMP = -8, ITER = -16, DYNPTR = -32, P = -40, AUX = -48, FUNCS = -56, N = -64, ID = -72,
            CNT = -80, FCNT = -88, START = -96, SIZE = -104, NAMEP = -112, CLEN = -120, FLAGS = -128;
    // The metadata record's slots.
    private static final int M_AUX = -136, M_LEN = -144, M_NLINFO = -152, M_NFINFO = -160, M_NMAPS = -168,
            M_LINFO = -176, M_JLINFO = -184, M_FINFO = -192, M_MAPS = -200, M_FUNCS = -208, M_FCNT = -216,
            M_BTF = -224, M_BTFID = -232, M_BTFSZ = -240, M_L0 = -248, M_TOTAL = -304, M_MFLAGS = -312,
            M_KEY = -320, M_VAL = -328, M_O4 = -336, M_O5 = -344, M_PTR = -352, M_NREAL = -360;
    // The chunked path's slots: scratch value, fragment key (ktime) and CPU, logical record length, accumulated read
    // error, and the range being copied (source, length, offset in the record, this chunk's length).
    private static final int SCR = -368, FKEY = -376, FCPU = -384, FTOTAL = -392, FERR = -400, LSRC = -408,
            LLEN = -416, LOFF = -424, LN = -432, FOFFS = -440, FOUT = -448;

    /** Caps that keep the record under the dynptr limit: instructions and line records per program. */
    private static final int MAX_META_INSNS = 1 << 20, MAX_MAPS = 64;

    private final KernelLayout k;
    private final int ringFd, statsFd, ringSize, btfSeenFd, scratchFd;
    private final boolean chunks, loops;
    private final int maxFuncs, chunkCount, chunkedMax;
    private int uniq;
    /**
     * Where the stack slots are: r10 in the main program; in a bpf_loop callback r6, the main program's frame
     * pointer passed as the callback's context (every body reads and writes the main program's slots).
     */
    private Reg fp = R10;
    /** The callbacks the program being emitted calls, by label: emitted after it by {@link #finish}. */
    private final Map<String, Consumer<BpfAssembler>> callbacks = new LinkedHashMap<>();

    /**
     * @param btfSeenFd an LRU hash map (u32 BTF id -> u32) of the BTF objects already sent, or -1 for none
     * @param scratchFd the chunked path's per-CPU array ({@link #SCRATCH_ENTRIES} x {@link #SCRATCH_VALUE}), needed
     *                  where {@link KernelLayout#copiesInChunks}
     */
    FencePrograms(KernelLayout layout, int ringFd, int statsFd, int ringSize, int btfSeenFd, int scratchFd) {
        this.k = layout;
        this.ringFd = ringFd;
        this.statsFd = statsFd;
        this.ringSize = ringSize;
        this.btfSeenFd = btfSeenFd;
        this.scratchFd = scratchFd;
        this.chunks = layout.copiesInChunks();
        this.loops = chunks && layout.hasBpfLoop();
        if (chunks && scratchFd < 0) throw new IllegalArgumentException("the chunked copy needs a scratch map");
        this.maxFuncs = chunks && !loops ? CHUNKED_FUNCS : MAX_FUNCS;
        this.chunkCount = loops ? (MAX_IMAGE + CHUNK - 1) / CHUNK : CHUNKS;
        this.chunkedMax = loops ? MAX_IMAGE : CHUNKED_MAX;
    }

    FencePrograms(KernelLayout layout, int ringFd, int statsFd, int ringSize, int btfSeenFd) {
        this(layout, ringFd, statsFd, ringSize, btfSeenFd, -1);
    }

    FencePrograms(KernelLayout layout, int ringFd, int statsFd, int ringSize) {
        this(layout, ringFd, statsFd, ringSize, -1);
    }

    /**
     * Loads a fence program (raw tracepoint). One with bpf_loop callbacks goes with a small program BTF and its
     * func_info, one FUNC per function: the verifier takes no callback without them.
     */
    static BpfFd loadRawTracepoint(byte[] insns, String name) throws BpfException {
        return load(Bpf.PROG_TYPE_RAW_TRACEPOINT, 0, 0, insns, name);
    }

    /** Loads a tracing program (fexit) for the kernel function with BTF id {@code attachBtfId}, the same way. */
    static BpfFd loadFexit(byte[] insns, String name, int attachBtfId) throws BpfException {
        return load(PROG_TYPE_TRACING, TRACE_FEXIT, attachBtfId, insns, name);
    }

    private static BpfFd load(int type, int attachType, int attachBtfId, byte[] insns, String name)
            throws BpfException {
        Bpf bpf = Bpf.get();
        int[] starts = BpfAssembler.functionStarts(insns);
        if (starts.length == 1) {
            return bpf.progLoad(new Bpf.ProgLoad(type, insns, "GPL", name, attachType, attachBtfId));
        }
        BtfWriter btf = new BtfWriter();
        String[] names = new String[starts.length];
        for (int f = 0; f < starts.length; f++) names[f] = f == 0 ? "fence_main" : "fence_cb" + f;
        int[] types = btf.intFunctions(names);
        ByteBuffer funcInfo = ByteBuffer.allocate(8 * starts.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int f = 0; f < starts.length; f++) funcInfo.putInt(starts[f]).putInt(types[f]);
        try (BpfFd btfFd = bpf.btfLoad(btf.bytes())) {
            return bpf.progLoad(new Bpf.ProgLoad(type, insns, "GPL", name, attachType, attachBtfId, btfFd,
                    funcInfo.array()));
        }
    }

    /**
     * fexit/bpf_dispatcher_change_prog(struct bpf_dispatcher *d, from, to): ctx = {d, from, to}. At its return the
     * update has switched to the half it wrote and waited an RCU grace period, and only then set d->image_off, so
     * d->image + d->image_off is the half in force (none while d->num_progs is 0: the switch went to the nop). One
     * record of kind DISPATCHER with that half, copied before the next update can write it (that one writes the
     * other half; the one after it, this half, only after a switch away and another grace period).
     */
    byte[] dispatcherSwitched() {
        KernelLayout.Dispatcher d = k.dispatcher().orElseThrow();
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 0);                                        // struct bpf_dispatcher *
        a.store(DW, fp, P, 0).store(DW, fp, ID, 0).store(DW, fp, FLAGS, 0)
                .store(DW, fp, FCNT, 1).store(DW, fp, CNT, 1);
        read32(a, TMP, R6, d.numProgs());
        a.load(DW, R1, fp, TMP).jumpIf(Cond.EQ, R1, 0, "out");
        read64(a, START, R6, d.image());
        a.load(DW, R1, fp, START).jumpIf(Cond.EQ, R1, 0, "out");
        read32(a, TMP, R6, d.imageOff());
        a.load(DW, R2, fp, TMP).jumpIf(Cond.GT, R2, DISPATCHER_HALF, "out");  // a half's offset: 0 or PAGE/2
        a.load(DW, R1, fp, START).add(R1, R2).store(DW, fp, START, R1);
        a.store(DW, fp, SIZE, DISPATCHER_HALF);
        a.mov(R1, R6).add(R1, d.ksymName()).store(DW, fp, NAMEP, R1);
        if (chunks) scratch(a, SCRATCH_DISPATCHER);
        a.mov(R8, 0);
        emitRecord(a, KIND_DISPATCHER, false, "out");
        a.label("out").mov(R0, 0).exit();
        return finish(a);
    }

    /**
     * fexit/arch_prepare_bpf_trampoline(im, image, image_end, m, flags, tlinks, func_addr): ctx = the arguments as
     * u64s, then the return value, the bytes written where positive ({@link KernelLayout.TrampolineBuild} finds the
     * slots by name), at most im->size where the kernel has it. At its return the image is complete (6.8+: copied from the scratch buffer it was written in)
     * and not yet reachable: the attach poke that calls it comes after. One record of kind TRAMP_BUILT with
     * image[0..ret) named by im->ksym.name; none where im is NULL (struct_ops builds its own images) or the build
     * failed.
     */
    byte[] trampolineBuilt() {
        KernelLayout.TrampolineBuild t = k.trampolineBuild().orElseThrow();
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 8 * t.imArg()).load(DW, R7, R1, 8 * t.imageArg()).load(DW, R8, R1, 8 * t.args());
        a.store(DW, fp, P, 0).store(DW, fp, ID, 0).store(DW, fp, FLAGS, 0)
                .store(DW, fp, FCNT, 1).store(DW, fp, CNT, 1);
        a.jumpIf(Cond.EQ, R6, 0, "out").jumpIf(Cond.EQ, R7, 0, "out");
        a.alu(BpfAssembler.Alu.LSH, R8, 32).alu(BpfAssembler.Alu.RSH, R8, 32);  // int: a negative one is > the bound
        a.jumpIf(Cond.EQ, R8, 0, "out").jumpIf(Cond.GT, R8, TRAMPOLINE_MAX, "out");
        a.store(DW, fp, START, R7).store(DW, fp, SIZE, R8);
        capAtImageSize(a);
        a.mov(R1, R6).add(R1, t.ksymName()).store(DW, fp, NAMEP, R1);
        if (chunks) scratch(a, SCRATCH_TRAMPOLINE);
        a.mov(R8, 0);
        emitRecord(a, KIND_TRAMP_BUILT, false, "out");
        a.label("out").mov(R0, 0).exit();
        return finish(a);
    }

    /**
     * fexit/bpf_trampoline_update(tr, lock_direct_mutex), where the build hook cannot attach (6.1): ctx = the
     * arguments as u64s, then the int return value. At a successful return the attach poke (or modify) to the new
     * image is done and tr->cur_image is that image; tr->mutex is still held, so no later update can have retired
     * it (its only poke inside, the retirement's jump) or freed it: the copy is the image as the attach poke made it
     * reachable. One record of kind TRAMP_UPDATED with image[0..ksym.end - ksym.start) (a page on 6.1; at most
     * im->size where the kernel has it) named by im->ksym.name; none where the update failed or left no image (the
     * last detach).
     */
    byte[] trampolineUpdated() {
        KernelLayout.TrampolineUpdate t = k.trampolineUpdate().orElseThrow();
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 8 * t.trArg()).load(DW, R8, R1, 8 * t.args());
        a.store(DW, fp, P, 0).store(DW, fp, ID, 0).store(DW, fp, FLAGS, 0)
                .store(DW, fp, FCNT, 1).store(DW, fp, CNT, 1);
        a.alu(BpfAssembler.Alu.LSH, R8, 32).jumpIf(Cond.NE, R8, 0, "out");  // the int: 0 or -errno
        a.jumpIf(Cond.EQ, R6, 0, "out");
        deref(a, R6, t.curImage());                                          // r6 = tr->cur_image
        read64(a, START, R6, t.imImage());
        read64(a, TMP, R6, t.ksymStart());
        read64(a, SIZE, R6, t.ksymEnd());
        a.load(DW, R1, fp, START).jumpIf(Cond.EQ, R1, 0, "out");
        a.load(DW, R2, fp, SIZE).load(DW, R3, fp, TMP).jumpIf(Cond.LE, R2, R3, "out")
                .alu(BpfAssembler.Alu.SUB, R2, R3).jumpIf(Cond.GT, R2, TRAMPOLINE_MAX, "out").store(DW, fp, SIZE, R2);
        capAtImageSize(a);
        a.mov(R1, R6).add(R1, t.ksymName()).store(DW, fp, NAMEP, R1);
        if (chunks) scratch(a, SCRATCH_TRAMPOLINE); // the build hook's entry: only one of the two is attached
        a.mov(R8, 0);
        emitRecord(a, KIND_TRAMP_UPDATED, false, "out");
        a.label("out").mov(R0, 0).exit();
        return finish(a);
    }

    /**
     * SIZE = min(SIZE, im->size) where the kernel has im->size (6.7+), r6 = im: no more than the image's allocation
     * (6.12's build returns the code plus BPF_INSN_SAFETY, which can reach into the next chunk of the pack: another
     * image's).
     */
    private void capAtImageSize(BpfAssembler a) {
        if (k.trampSize().isEmpty()) return;
        read32(a, TMP, R6, k.trampSize().getAsInt());
        a.load(DW, R1, fp, TMP).jumpIf(Cond.EQ, R1, 0, "sized").load(DW, R2, fp, SIZE)
                .jumpIf(Cond.LE, R2, R1, "sized").store(DW, fp, SIZE, R1).label("sized");
    }

    /** raw_tp/sys_exit: ctx = {struct pt_regs *regs, long ret}. */
    byte[] load() {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 0).load(DW, R7, R1, 8)
                .jumpIf(Cond.SLT, R7, 0, "out");
        read64(a, TMP, R6, k.ptRegsOrigAx());
        a.load(DW, R1, fp, TMP).jumpIf(Cond.EQ, R1, NR_BPF, "native").jumpIf(Cond.NE, R1, NR_BPF_IA32, "out");
        read64(a, TMP, R6, k.ptRegsBx());
        a.jump("cmd");
        a.label("native");
        read64(a, TMP, R6, k.ptRegsDi());
        a.label("cmd").load(DW, R1, fp, TMP)
                .alu(BpfAssembler.Alu.LSH, R1, 32).alu(BpfAssembler.Alu.RSH, R1, 32);  // int cmd: the low 32 bits
        for (int attach : ATTACH_COMMANDS) a.jumpIf(Cond.EQ, R1, attach, "attach");
        a.jumpIf(Cond.NE, R1, BPF_PROG_LOAD, "out");
        a.call(HELPER_CURRENT_TASK).mov(R8, R0);
        deref(a, R8, k.taskFiles());
        deref(a, R8, k.filesFdt());
        read32(a, TMP, R8, k.fdtMaxFds());
        a.load(DW, R1, fp, TMP).jumpIf(Cond.GE, R7, R1, "out");
        deref(a, R8, k.fdtFd());
        a.mov(R6, R7).alu(BpfAssembler.Alu.LSH, R6, 3).add(R6, R8);
        deref(a, R6, 0);                       // struct file *
        deref(a, R6, k.filePrivateData());     // struct bpf_prog *
        if (chunks) scratch(a, SCRATCH_LOAD);
        if (k.metadata().isPresent() && btfSeenFd >= 0) captureMetadata(a, k.metadata().get());
        captureProgram(a, KIND_LOAD);
        // An attachment changed (the XDP dispatcher is rewritten then): a header-only ATTACH record, the bpf command
        // in prog_id, tells the consumer to copy the dispatchers again, stamped with this time.
        a.label("attach").store(DW, fp, CLEN, R1);
        a.loadMapFd(R1, ringFd).mov(R2, HEADER).mov(R3, 0).call(HELPER_RINGBUF_RESERVE)
                .jumpIf(Cond.EQ, R0, 0, "attach_lost").mov(R7, R0);
        a.store(DW, R7, FenceRecord.START, 0).store(DW, R7, END, 0);
        a.call(HELPER_KTIME_NS).store(DW, R7, TS, R0);
        a.store(W, R7, KIND, KIND_ATTACH).store(W, R7, OFF, 0).store(W, R7, LEN, 0).store(W, R7, CAP, 0)
                .store(W, R7, NAME_LEN, 0).store(W, R7, ERR, 0);
        a.call(HELPER_PID_TGID).store(W, R7, TID, R0).alu(BpfAssembler.Alu.RSH, R0, 32).store(W, R7, PID, R0);
        a.load(DW, R1, fp, CLEN).store(W, R7, PROG_ID, R1);
        a.store(H, R7, FUNC_IDX, 0).store(H, R7, FUNC_CNT, 0).store(DW, R7, TAG, 0)
                .store(W, R7, FenceRecord.FLAGS, F_LAST).store(W, R7, PAD, 0);
        a.mov(R1, R7).mov(R2, RB_FORCE_WAKEUP).call(HELPER_RINGBUF_SUBMIT);
        countStat(a, STAT_SUBMITTED);
        a.jump("out");
        a.label("attach_lost");
        countStat(a, STAT_RESERVE_FAILED);
        a.jump("out");
        return finish(a);
    }

    /** raw_tp/workqueue_execute_start: ctx = {struct work_struct *work}. */
    byte[] free(long bpfProgFreeDeferred) {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 0);
        read64(a, TMP, R6, k.workFunc());
        a.load(DW, R1, fp, TMP).loadImm64(R2, bpfProgFreeDeferred).jumpIf(Cond.NE, R1, R2, "out");
        a.add(R6, -k.auxWork());
        deref(a, R6, k.auxProg());
        if (chunks) scratch(a, SCRATCH_FREE);
        captureProgram(a, KIND_FREE);
        return finish(a);
    }

    /** raw_tp/workqueue_execute_start for the trampoline image put work: copies image[0..size). */
    byte[] trampolineFree(long trampImagePutDeferred) {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 0);
        read64(a, TMP, R6, k.workFunc());
        a.load(DW, R1, fp, TMP).loadImm64(R2, trampImagePutDeferred).jumpIf(Cond.NE, R1, R2, "out");
        a.add(R6, -k.trampWork().orElseThrow());   // struct bpf_tramp_image *
        a.store(DW, fp, P, 0).store(DW, fp, ID, 0).store(DW, fp, FLAGS, 0)
                .store(DW, fp, FCNT, 1).store(DW, fp, CNT, 1);
        read64(a, START, R6, k.trampImage().orElseThrow());
        if (k.trampSize().isPresent()) read32(a, SIZE, R6, k.trampSize().getAsInt());
        else a.store(DW, fp, SIZE, TRAMP_PAGE);   // before 6.7 an image is one page (no size member)
        a.mov(R1, R6).add(R1, k.trampKsymName().orElseThrow()).store(DW, fp, NAMEP, R1);
        if (chunks) scratch(a, SCRATCH_OTHER);
        a.mov(R8, 0);
        emitRecord(a, KIND_TRAMP_FREE, false, "out");
        a.label("out").mov(R0, 0).exit();
        return finish(a);
    }

    /** Run by BPF_PROG_TEST_RUN with ctx {u64 addr, u64 len}: one record of kind PEEK, no name. */
    byte[] peek() {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R2, R1, 0).store(DW, fp, START, R2);
        a.load(DW, R2, R1, 8).store(DW, fp, SIZE, R2);
        a.store(DW, fp, P, 0).store(DW, fp, ID, 0).store(DW, fp, FLAGS, 0)
                .store(DW, fp, FCNT, 1).store(DW, fp, CNT, 1).store(DW, fp, NAMEP, 0);
        if (chunks) scratch(a, SCRATCH_OTHER);
        a.mov(R8, 0);
        emitRecord(a, KIND_PEEK, false, "out");
        a.label("out").mov(R0, 0).exit();
        return finish(a);
    }

    /** r6 = struct bpf_prog *: one record per JITed function, then "out: return 0". */
    private void captureProgram(BpfAssembler a, int kind) {
        a.store(DW, fp, P, R6);
        read64(a, TMP, R6, k.progAux());
        a.load(DW, R7, fp, TMP).jumpIf(Cond.EQ, R7, 0, "out");
        read64(a, TMP, R7, k.auxProg());
        a.load(DW, R1, fp, TMP).jumpIf(Cond.NE, R1, R6, "out");     // not a bpf_prog after all
        a.store(DW, fp, AUX, R7);
        read32(a, ID, R7, k.auxId());
        read32(a, N, R7, k.auxRealFuncCnt());
        read64(a, FUNCS, R7, k.auxFunc());
        a.store(DW, fp, FLAGS, 0);
        a.load(DW, R1, fp, N).jumpIf(Cond.NE, R1, 0, "have_cnt").mov(R1, 1).label("have_cnt");
        a.store(DW, fp, FCNT, R1);
        a.jumpIf(Cond.LE, R1, maxFuncs, "cnt_ok").mov(R1, maxFuncs).store(DW, fp, FLAGS, F_FTRUNC);
        countStat(a, STAT_FUNCS_TRUNCATED);
        a.mov(R1, maxFuncs);
        a.label("cnt_ok").store(DW, fp, CNT, R1);
        if (loops) {
            // bpf_loop(cnt, one function's record, the frame, 0)
            String body = callback("cb_func", b -> {
                b.mov(R8, R1);
                functionRecord(b, kind, "cb_func_next");
                b.label("cb_func_next").mov(R0, 0).exit();
            });
            a.loadFunc(R2, body).mov(R3, fp).mov(R4, 0).call(HELPER_LOOP);
            a.label("out").mov(R0, 0).exit();
            return;
        }
        if (chunks) {
            a.mov(R8, -1);
            a.label("loop").add(R8, 1).jumpIf(Cond.GE, R8, CHUNKED_FUNCS, "done")
                    .load(DW, R1, fp, CNT).jumpIf(Cond.GE, R8, R1, "done");   // i
        } else {
            a.mov(R1, fp).add(R1, ITER).mov(R2, 0).load(DW, R3, fp, CNT).callKfunc(k.kfuncIterNew());
            a.label("loop");
            a.mov(R1, fp).add(R1, ITER).callKfunc(k.kfuncIterNext()).jumpIf(Cond.EQ, R0, 0, "done");
            a.load(W, R8, R0, 0);                                          // i
        }
        functionRecord(a, kind, "loop");
        a.label("done");
        if (!chunks) a.mov(R1, fp).add(R1, ITER).callKfunc(k.kfuncIterDestroy());
        a.label("out").mov(R0, 0).exit();
    }

    /** r8 = i: function i's record (from the slots P, N, FUNCS, AUX), then goto next. */
    private void functionRecord(BpfAssembler a, int kind, String next) {
        a.load(DW, R9, fp, P);                                        // f = prog ...
        a.load(DW, R1, fp, N).jumpIf(Cond.EQ, R1, 0, "have_f");
        a.mov(R3, R8).alu(BpfAssembler.Alu.LSH, R3, 3).load(DW, R1, fp, FUNCS).add(R3, R1);   // ... or func[i]
        a.mov(R1, fp).add(R1, TMP).mov(R2, 8).call(HELPER_PROBE_READ_KERNEL);
        a.load(DW, R9, fp, TMP).jumpIf(Cond.EQ, R9, 0, next);
        a.label("have_f");
        read64(a, START, R9, k.progBpfFunc());
        read32(a, SIZE, R9, k.progJitedLen());
        // Function 0 has no ksym of its own: the program's ksym names it.
        a.load(DW, R1, fp, AUX).jumpIf(Cond.EQ, R8, 0, "have_aux");
        read64(a, TMP, R9, k.progAux());
        a.load(DW, R1, fp, TMP);
        a.label("have_aux").add(R1, k.auxKsymName()).store(DW, fp, NAMEP, R1);
        emitRecord(a, kind, true, next);
    }

    /**
     * Registers a bpf_loop callback body (entered with r1 = the index, r2 = the main frame, which it keeps in r6 as
     * {@link #fp}); returns its label.
     */
    private String callback(String label, Consumer<BpfAssembler> body) {
        callbacks.putIfAbsent(label, b -> {
            b.label(label).mov(R6, R2);
            body.accept(b);
        });
        return label;
    }

    /** Emits the callbacks after the main program (a body may register another) and assembles. */
    private byte[] finish(BpfAssembler a) {
        Set<String> emitted = new HashSet<>();
        for (boolean more = true; more; ) {
            more = false;
            for (var e : Map.copyOf(callbacks).entrySet()) {
                if (!emitted.add(e.getKey())) continue;
                Reg main = fp;
                fp = R6;
                e.getValue().accept(a);
                fp = main;
                more = true;
            }
        }
        callbacks.clear();
        return a.assemble();
    }

    /**
     * r6 = struct bpf_prog *: one META record (layout in {@link MetaRecord}) before the program's images, with
     * everything bpf_prog_info would tell — translated instructions, line and func info, JITed line addresses, the
     * maps, each function's tag and the program's BTF (once per BTF id: {@code btfSeenFd} remembers what was sent).
     * Falls through to the image capture whatever happens; a failed reserve is counted as a loss.
     */
    private void captureMetadata(BpfAssembler a, KernelLayout.Metadata m) {
        a.store(DW, fp, M_MFLAGS, 0).store(DW, fp, P, R6);
        read64(a, M_AUX, R6, k.progAux());
        a.load(DW, R7, fp, M_AUX).jumpIf(Cond.EQ, R7, 0, "meta_done");
        read32(a, M_LEN, R6, m.progLen());
        read32(a, M_NLINFO, R7, m.auxNrLinfo());
        read32(a, M_NFINFO, R7, m.auxFuncInfoCnt());
        read32(a, M_NMAPS, R7, m.auxUsedMapCnt());
        read64(a, M_LINFO, R7, m.auxLinfo());
        read64(a, M_JLINFO, R7, m.auxJitedLinfo());
        read64(a, M_FINFO, R7, m.auxFuncInfo());
        read64(a, M_MAPS, R7, m.auxUsedMaps());
        read64(a, M_FUNCS, R7, k.auxFunc());
        read32(a, M_NREAL, R7, k.auxRealFuncCnt());
        read64(a, M_BTF, R7, m.auxBtf());
        // Section lengths: xlated, line info, JITed line info, func info, maps, function tags, BTF.
        clampTo(a, M_LEN, MAX_META_INSNS, "m_len");
        a.load(DW, R1, fp, M_LEN).alu(BpfAssembler.Alu.LSH, R1, 3).store(DW, fp, len(0), R1);
        clampTo(a, M_NLINFO, MAX_META_INSNS, "m_nl");
        zeroIfNull(a, M_NLINFO, M_LINFO, "m_nl0");
        a.load(DW, R1, fp, M_NLINFO).alu(BpfAssembler.Alu.LSH, R1, 4).store(DW, fp, len(1), R1);
        a.load(DW, R1, fp, M_NLINFO).load(DW, R2, fp, M_JLINFO).jumpIf(Cond.NE, R2, 0, "m_jl").mov(R1, 0)
                .label("m_jl").alu(BpfAssembler.Alu.LSH, R1, 3).store(DW, fp, len(2), R1);
        clampTo(a, M_NFINFO, MAX_META_INSNS, "m_nf");
        zeroIfNull(a, M_NFINFO, M_FINFO, "m_nf0");
        a.load(DW, R1, fp, M_NFINFO).alu(BpfAssembler.Alu.LSH, R1, 3).store(DW, fp, len(3), R1);
        a.load(DW, R1, fp, M_NMAPS).jumpIf(Cond.LE, R1, MAX_MAPS, "m_nm").mov(R1, MAX_MAPS)
                .store(DW, fp, M_NMAPS, R1).load(DW, R2, fp, M_MFLAGS).alu(BpfAssembler.Alu.OR, R2,
                        MetaRecord.F_MAPS_TRUNC).store(DW, fp, M_MFLAGS, R2).label("m_nm");
        zeroIfNull(a, M_NMAPS, M_MAPS, "m_nm0");
        a.load(DW, R1, fp, M_NMAPS).alu(BpfAssembler.Alu.MUL, R1, MetaRecord.MAP_ENTRY).store(DW, fp, len(4), R1);
        a.load(DW, R1, fp, M_NREAL).jumpIf(Cond.NE, R1, 0, "m_fc").mov(R1, 1).label("m_fc")
                .jumpIf(Cond.LE, R1, maxFuncs, "m_fc2").mov(R1, maxFuncs).label("m_fc2").store(DW, fp, M_FCNT, R1)
                .alu(BpfAssembler.Alu.LSH, R1, 3).store(DW, fp, len(5), R1);
        // The BTF, unless a program with the same BTF object sent it already.
        a.store(DW, fp, len(6), 0).store(DW, fp, M_BTFID, 0).store(DW, fp, M_BTFSZ, 0);
        a.load(DW, R8, fp, M_BTF).jumpIf(Cond.EQ, R8, 0, "m_btf_done");
        read32(a, M_BTFID, R8, m.btfId());
        read32(a, M_BTFSZ, R8, m.btfDataSize());
        a.load(DW, R1, fp, M_BTFID).store(DW, fp, M_KEY, R1).store(DW, fp, M_VAL, 0);
        a.loadMapFd(R1, btfSeenFd).mov(R2, fp).add(R2, M_KEY).mov(R3, fp).add(R3, M_VAL).mov(R4, BPF_NOEXIST)
                .call(HELPER_MAP_UPDATE).jumpIf(Cond.EQ, R0, 0, "m_btf_new");
        orFlag(a, MetaRecord.F_BTF_SEEN);
        a.jump("m_btf_done");
        a.label("m_btf_new").load(DW, R1, fp, M_BTFSZ).jumpIf(Cond.LE, R1, MetaRecord.MAX_BTF, "m_btf_fits");
        orFlag(a, MetaRecord.F_BTF_DROPPED);
        forgetBtf(a);
        a.jump("m_btf_done");
        a.label("m_btf_fits").store(DW, fp, len(6), R1);
        orFlag(a, MetaRecord.F_BTF_INCLUDED);
        a.label("m_btf_done");
        if (chunks) {
            // the chunked copy's bound per range: past it the translated instructions, then the BTF, are left out
            a.load(DW, R1, fp, len(0)).jumpIf(Cond.LE, R1, chunkedMax, "m_cx").store(DW, fp, len(0), 0);
            orFlag(a, MetaRecord.F_XLATED_DROPPED);
            a.label("m_cx").load(DW, R1, fp, len(6)).jumpIf(Cond.LE, R1, chunkedMax, "m_cb").store(DW, fp, len(6), 0);
            a.load(DW, R1, fp, M_MFLAGS).alu(BpfAssembler.Alu.AND, R1, ~MetaRecord.F_BTF_INCLUDED)
                    .alu(BpfAssembler.Alu.OR, R1, MetaRecord.F_BTF_DROPPED).store(DW, fp, M_MFLAGS, R1);
            forgetBtf(a);
            a.label("m_cb");
        }
        // Total; over the dynptr limit the translated instructions go first, then the BTF.
        sumTotal(a);
        a.load(DW, R1, fp, M_TOTAL).jumpIf(Cond.LE, R1, MetaRecord.MAX_RECORD, "m_fits");
        a.store(DW, fp, len(0), 0);
        orFlag(a, MetaRecord.F_XLATED_DROPPED);
        sumTotal(a);
        a.load(DW, R1, fp, M_TOTAL).jumpIf(Cond.LE, R1, MetaRecord.MAX_RECORD, "m_fits");
        a.load(DW, R1, fp, M_MFLAGS).jumpIf(Cond.SET, R1, MetaRecord.F_BTF_INCLUDED, "m_drop_btf")
                .jump("m_fits");
        a.label("m_drop_btf").store(DW, fp, len(6), 0);
        a.load(DW, R1, fp, M_MFLAGS).alu(BpfAssembler.Alu.XOR, R1, MetaRecord.F_BTF_INCLUDED)
                .alu(BpfAssembler.Alu.OR, R1, MetaRecord.F_BTF_DROPPED).store(DW, fp, M_MFLAGS, R1);
        forgetBtf(a);
        sumTotal(a);
        a.label("m_fits");
        if (chunks) {
            beginFragments(a, M_TOTAL);
        } else {
            a.loadMapFd(R1, ringFd).load(DW, R2, fp, M_TOTAL).mov(R3, 0).mov(R4, fp).add(R4, DYNPTR)
                    .call(HELPER_RESERVE_DYNPTR).jumpIf(Cond.NE, R0, 0, "m_discard");
            a.mov(R1, fp).add(R1, DYNPTR).mov(R2, 0).mov(R3, MetaRecord.SECTIONS_START).call(HELPER_DYNPTR_DATA)
                    .jumpIf(Cond.EQ, R0, 0, "m_discard");
            a.mov(R7, R0);
        }
        // The common header.
        probeInto(a, FenceRecord.START, 8, R6, k.progBpfFunc());
        a.load(DW, R1, R7, FenceRecord.START).store(DW, R7, END, R1);
        a.call(HELPER_KTIME_NS).store(DW, R7, TS, R0);
        a.store(W, R7, KIND, KIND_META).store(W, R7, OFF, 0);
        a.load(DW, R1, fp, M_TOTAL).store(W, R7, LEN, R1).store(W, R7, CAP, R1);
        a.store(W, R7, NAME_LEN, 0).store(W, R7, ERR, 0);
        a.call(HELPER_PID_TGID).store(W, R7, TID, R0).alu(BpfAssembler.Alu.RSH, R0, 32).store(W, R7, PID, R0);
        a.load(DW, R8, fp, M_AUX);
        probeInto(a, PROG_ID, 4, R8, k.auxId());
        a.store(H, R7, FUNC_IDX, 0).load(DW, R1, fp, M_FCNT).store(H, R7, FUNC_CNT, R1);
        probeInto(a, TAG, 8, R6, k.progTag());
        a.store(W, R7, FenceRecord.FLAGS, F_LAST).store(W, R7, PAD, 0);
        // What bpf_prog_info says.
        probeInto(a, MetaRecord.TYPE, 4, R6, m.progType());
        probeInto(a, MetaRecord.EXPECTED_ATTACH_TYPE, 4, R6, m.progExpectedAttachType());
        probeInto(a, MetaRecord.ATTACH_BTF_ID, 4, R8, m.auxAttachBtfId());
        probeInto(a, MetaRecord.LOAD_TIME, 8, R8, m.auxLoadTime());
        probeInto(a, MetaRecord.NAME, 16, R8, m.auxName());
        if (m.auxVerifiedInsns() >= 0) probeInto(a, MetaRecord.VERIFIED_INSNS, 4, R8, m.auxVerifiedInsns());
        else a.store(W, R7, MetaRecord.VERIFIED_INSNS, 0);
        a.store(W, R7, MetaRecord.ATTACH_BTF_OBJ_ID, 0).store(W, R7, MetaRecord.DST_PROG_ID, 0)
                .store(W, R7, MetaRecord.UID, 0).store(B, R7, MetaRecord.ATTACH_FUNC_NAME, 0);
        readPtr(a, R8, m.auxAttachBtf(), "m_abtf");
        probeInto(a, MetaRecord.ATTACH_BTF_OBJ_ID, 4, R9, m.btfId());
        a.label("m_abtf");
        readPtr(a, R8, m.auxUser(), "m_user");
        probeInto(a, MetaRecord.UID, 4, R9, m.userUid());
        a.label("m_user");
        readPtr(a, R8, m.auxDstProg(), "m_dst");
        readPtr(a, R9, k.progAux(), "m_dst");
        probeInto(a, MetaRecord.DST_PROG_ID, 4, R9, k.auxId());
        a.label("m_dst");
        readPtr(a, R8, m.auxAttachFuncName(), "m_afn");
        a.mov(R1, R7).add(R1, MetaRecord.ATTACH_FUNC_NAME).mov(R2, MetaRecord.ATTACH_FUNC_NAME_MAX).mov(R3, R9)
                .call(HELPER_PROBE_READ_KERNEL_STR);
        a.label("m_afn");
        int gplByte = (int) (m.progGplBit() / 8) & ~3;
        a.store(DW, fp, TMP, 0).mov(R1, fp).add(R1, TMP).mov(R2, 4).mov(R3, R6).add(R3, gplByte)
                .call(HELPER_PROBE_READ_KERNEL);
        a.load(W, R1, fp, TMP).alu(BpfAssembler.Alu.RSH, R1, (int) (m.progGplBit() - 8L * gplByte))
                .alu(BpfAssembler.Alu.AND, R1, 1).store(W, R7, MetaRecord.GPL, R1);
        a.load(DW, R1, fp, len(0)).alu(BpfAssembler.Alu.RSH, R1, 3).store(W, R7, MetaRecord.INSN_CNT, R1);
        a.load(DW, R1, fp, M_NLINFO).store(W, R7, MetaRecord.NR_LINFO, R1);
        a.load(DW, R1, fp, M_NFINFO).store(W, R7, MetaRecord.NR_FINFO, R1);
        a.load(DW, R1, fp, M_NMAPS).store(W, R7, MetaRecord.NR_MAPS, R1);
        a.load(DW, R1, fp, M_BTFID).store(W, R7, MetaRecord.BTF_ID, R1);
        a.load(DW, R1, fp, M_BTFSZ).store(W, R7, MetaRecord.BTF_SIZE, R1);
        a.load(DW, R1, fp, M_FCNT).store(W, R7, MetaRecord.FUNC_CNT, R1);
        a.load(DW, R1, fp, M_MFLAGS).store(W, R7, MetaRecord.META_FLAGS, R1);
        // Section table and the sections, back to back after the header.
        a.mov(R8, MetaRecord.SECTIONS_START);
        for (int i = 0; i < MetaRecord.SECTION_COUNT; i++) {
            int entry = MetaRecord.SECTION_TABLE + 16 * i;
            a.store(W, R7, entry, R8).load(DW, R1, fp, len(i)).store(W, R7, entry + 4, R1)
                    .store(W, R7, entry + 8, 0).store(W, R7, entry + 12, 0);
            if (i == MetaRecord.MAPS) a.store(DW, fp, M_O4, R8);
            if (i == MetaRecord.FUNC_TAGS) a.store(DW, fp, M_O5, R8);
            a.add(R8, R1);
        }
        copySection(a, MetaRecord.XLATED, R6, m.progInsnsi(), -1);
        copySection(a, MetaRecord.LINE_INFO, null, 0, M_LINFO);
        copySection(a, MetaRecord.JITED_LINE_INFO, null, 0, M_JLINFO);
        copySection(a, MetaRecord.FUNC_INFO, null, 0, M_FINFO);
        a.load(DW, R8, fp, M_BTF).jumpIf(Cond.EQ, R8, 0, "m_btf_copied");
        read64(a, M_PTR, R8, m.btfData());
        copySection(a, MetaRecord.BTF, null, 0, M_PTR);
        a.label("m_btf_copied");
        if (chunks) {
            chunkedMapsAndTags(a, m);
            outputHeader(a, MetaRecord.SECTIONS_START);
            countStat(a, STAT_META_SUBMITTED);
            a.label("meta_done");
            return;
        }
        // Maps: {u64 address, u32 id, u32 type, u32 max_entries, u32 value_size} each.
        a.load(DW, R3, fp, M_NMAPS).jumpIf(Cond.EQ, R3, 0, "m_maps_done");
        a.mov(R1, fp).add(R1, ITER).mov(R2, 0).callKfunc(k.kfuncIterNew());
        a.label("m_maps");
        a.mov(R1, fp).add(R1, ITER).callKfunc(k.kfuncIterNext()).jumpIf(Cond.EQ, R0, 0, "m_maps_end");
        a.load(W, R8, R0, 0);
        a.mov(R9, R8).alu(BpfAssembler.Alu.MUL, R9, MetaRecord.MAP_ENTRY).load(DW, R1, fp, M_O4).add(R9, R1);
        a.mov(R3, R8).alu(BpfAssembler.Alu.LSH, R3, 3).load(DW, R1, fp, M_MAPS).add(R3, R1);
        a.mov(R1, fp).add(R1, M_PTR).mov(R2, 8).call(HELPER_PROBE_READ_KERNEL);
        a.load(DW, R4, fp, M_PTR).jumpIf(Cond.EQ, R4, 0, "m_maps");
        a.store(DW, fp, TMP, R4);
        dynptrWriteStack(a, 0, TMP, 8);
        dynptrReadKernel(a, 8, 4, m.mapId());
        dynptrReadKernel(a, 12, 4, m.mapType());
        dynptrReadKernel(a, 16, 4, m.mapMaxEntries());
        dynptrReadKernel(a, 20, 4, m.mapValueSize());
        a.jump("m_maps");
        a.label("m_maps_end").mov(R1, fp).add(R1, ITER).callKfunc(k.kfuncIterDestroy());
        a.label("m_maps_done");
        // Each JITed function's own tag (subprograms are hashed on their own).
        a.load(DW, R3, fp, M_FCNT);
        a.mov(R1, fp).add(R1, ITER).mov(R2, 0).callKfunc(k.kfuncIterNew());
        a.label("m_tags");
        a.mov(R1, fp).add(R1, ITER).callKfunc(k.kfuncIterNext()).jumpIf(Cond.EQ, R0, 0, "m_tags_end");
        a.load(W, R8, R0, 0);
        a.mov(R9, R6).load(DW, R1, fp, M_NREAL).jumpIf(Cond.EQ, R1, 0, "m_tag_f");
        a.mov(R3, R8).alu(BpfAssembler.Alu.LSH, R3, 3).load(DW, R1, fp, M_FUNCS).add(R3, R1);
        a.mov(R1, fp).add(R1, M_PTR).mov(R2, 8).call(HELPER_PROBE_READ_KERNEL);
        a.load(DW, R9, fp, M_PTR).jumpIf(Cond.EQ, R9, 0, "m_tags");
        a.label("m_tag_f");
        a.mov(R2, R8).alu(BpfAssembler.Alu.LSH, R2, 3).load(DW, R1, fp, M_O5).add(R2, R1);
        a.mov(R1, fp).add(R1, DYNPTR).mov(R3, 8).mov(R4, R9).add(R4, k.progTag()).callKfunc(k.kfuncReadKernelDynptr());
        a.jump("m_tags");
        a.label("m_tags_end").mov(R1, fp).add(R1, ITER).callKfunc(k.kfuncIterDestroy());
        a.loadMapFd(R1, ringFd).mov(R2, 0).call(HELPER_RINGBUF_QUERY)
                .mov(R2, RB_NO_WAKEUP).jumpIf(Cond.LE, R0, ringSize / 4, "m_quiet").mov(R2, RB_FORCE_WAKEUP)
                .label("m_quiet");
        a.mov(R1, fp).add(R1, DYNPTR).call(HELPER_SUBMIT_DYNPTR);
        countStat(a, STAT_META_SUBMITTED);
        a.jump("meta_done");
        a.label("m_discard").mov(R1, fp).add(R1, DYNPTR).mov(R2, 0).call(HELPER_DISCARD_DYNPTR);
        a.load(DW, R1, fp, M_MFLAGS).jumpIf(Cond.SET, R1, MetaRecord.F_BTF_INCLUDED, "m_unsee").jump("m_count");
        a.label("m_unsee");
        forgetBtf(a);
        a.label("m_count");
        countStat(a, STAT_RESERVE_FAILED);
        a.label("meta_done");
    }

    private static int len(int section) {
        return M_L0 - 8 * section;
    }

    private void clampTo(BpfAssembler a, int slot, int max, String label) {
        a.load(DW, R1, fp, slot).jumpIf(Cond.LE, R1, max, label).mov(R1, max).store(DW, fp, slot, R1).label(label);
    }

    /** slot = 0 when the pointer in ptrSlot is NULL. */
    private void zeroIfNull(BpfAssembler a, int slot, int ptrSlot, String label) {
        a.load(DW, R1, fp, ptrSlot).jumpIf(Cond.NE, R1, 0, label).store(DW, fp, slot, 0).label(label);
    }

    private void orFlag(BpfAssembler a, int flag) {
        a.load(DW, R1, fp, M_MFLAGS).alu(BpfAssembler.Alu.OR, R1, flag).store(DW, fp, M_MFLAGS, R1);
    }

    /** Takes this BTF id out of the sent set again: a later program of the same object must send it. */
    private void forgetBtf(BpfAssembler a) {
        a.loadMapFd(R1, btfSeenFd).mov(R2, fp).add(R2, M_KEY).call(HELPER_MAP_DELETE);
    }

    private void sumTotal(BpfAssembler a) {
        a.mov(R1, MetaRecord.SECTIONS_START);
        for (int i = 0; i < MetaRecord.SECTION_COUNT; i++) a.load(DW, R2, fp, len(i)).add(R1, R2);
        a.store(DW, fp, M_TOTAL, R1);
    }

    /** *(record r7 + at) = size bytes at (reg + off), via bpf_probe_read_kernel (zeros on fault). */
    private void probeInto(BpfAssembler a, int at, int size, Reg reg, int off) {
        a.mov(R1, R7).add(R1, at).mov(R2, size).mov(R3, reg).add(R3, off).call(HELPER_PROBE_READ_KERNEL);
    }

    /** r9 = *(u64 *)(reg + off); goto skip if NULL. */
    private void readPtr(BpfAssembler a, Reg reg, int off, String skip) {
        read64(a, M_PTR, reg, off);
        a.load(DW, R9, fp, M_PTR).jumpIf(Cond.EQ, R9, 0, skip);
    }

    /**
     * Copies section i's bytes from kernel memory: from reg + off, or from the pointer in srcSlot; records the
     * kfunc's result in the section table. Skips an empty section.
     */
    private void copySection(BpfAssembler a, int section, Reg reg, int off, int srcSlot) {
        int entry = MetaRecord.SECTION_TABLE + 16 * section;
        String skip = "m_sec_" + section;
        a.load(W, R3, R7, entry + 4).jumpIf(Cond.EQ, R3, 0, skip);
        if (chunks) {
            a.store(DW, fp, LLEN, R3);
            a.load(W, R2, R7, entry).store(DW, fp, LOFF, R2);
            if (reg != null) a.mov(R4, reg).add(R4, off);
            else a.load(DW, R4, fp, srcSlot);
            a.store(DW, fp, LSRC, R4).mov(R1, 0).store(DW, fp, FERR, R1);
            copyInChunks(a);
            a.load(DW, R1, fp, FERR).store(W, R7, entry + 8, R1);
            a.label(skip);
            return;
        }
        a.load(W, R2, R7, entry);
        if (reg != null) a.mov(R4, reg).add(R4, off);
        else a.load(DW, R4, fp, srcSlot);
        a.mov(R1, fp).add(R1, DYNPTR).callKfunc(k.kfuncReadKernelDynptr()).store(W, R7, entry + 8, R0);
        a.label(skip);
    }

    /** record[r9 + at] = size bytes at (*(u64 *)TMP + off) — a field of the map in TMP. */
    private void dynptrReadKernel(BpfAssembler a, int at, int size, int off) {
        a.mov(R1, fp).add(R1, DYNPTR).mov(R2, R9).add(R2, at).mov(R3, size).load(DW, R4, fp, TMP).add(R4, off)
                .callKfunc(k.kfuncReadKernelDynptr());
    }

    /** record[r9 + at] = size bytes of the stack slot (bpf_dynptr_write). */
    private void dynptrWriteStack(BpfAssembler a, int at, int slot, int size) {
        a.mov(R1, fp).add(R1, DYNPTR).mov(R2, R9).add(R2, at).mov(R3, fp).add(R3, slot).mov(R4, size).mov(R5, 0)
                .call(HELPER_DYNPTR_WRITE);
    }

    /**
     * Reserve, fill and submit one record from the slots START, SIZE, NAMEP, ID, P, FCNT, CNT, FLAGS and r8 = the
     * function index; jumps to {@code next} when done (or after counting a failed reserve).
     */
    private void emitRecord(BpfAssembler a, int kind, boolean withTag, String next) {
        if (chunks) {
            emitRecordInChunks(a, kind, withTag, next);
            return;
        }
        String discard = "discard_" + kind, named = "named_" + kind;
        a.load(DW, R1, fp, SIZE).jumpIf(Cond.LE, R1, MAX_IMAGE, "clen_" + kind).mov(R1, MAX_IMAGE)
                .label("clen_" + kind).store(DW, fp, CLEN, R1);
        a.loadMapFd(R1, ringFd).load(DW, R2, fp, CLEN).add(R2, IMAGE).mov(R3, 0)
                .mov(R4, fp).add(R4, DYNPTR).call(HELPER_RESERVE_DYNPTR).jumpIf(Cond.NE, R0, 0, discard);
        a.mov(R1, fp).add(R1, DYNPTR).mov(R2, 0).mov(R3, IMAGE).call(HELPER_DYNPTR_DATA)
                .jumpIf(Cond.EQ, R0, 0, discard);
        a.mov(R7, R0);                                                  // header, IMAGE bytes
        recordHeader(a, kind, withTag);
        a.load(DW, R4, fp, NAMEP).jumpIf(Cond.EQ, R4, 0, named);
        a.mov(R1, fp).add(R1, DYNPTR).mov(R2, NAME).mov(R3, NAME_MAX).callKfunc(k.kfuncReadKernelStrDynptr())
                .store(W, R7, NAME_LEN, R0);
        a.label(named);
        a.mov(R1, fp).add(R1, DYNPTR).mov(R2, IMAGE).load(DW, R3, fp, CLEN).load(DW, R4, fp, START)
                .callKfunc(k.kfuncReadKernelDynptr()).store(W, R7, ERR, R0);
        // Wake the consumer only when the ring is a quarter full: a wakeup per record costs ~15 µs per program.
        a.loadMapFd(R1, ringFd).mov(R2, 0).call(HELPER_RINGBUF_QUERY)
                .mov(R2, RB_NO_WAKEUP).jumpIf(Cond.LE, R0, ringSize / 4, "quiet_" + kind).mov(R2, RB_FORCE_WAKEUP)
                .label("quiet_" + kind);
        a.mov(R1, fp).add(R1, DYNPTR).call(HELPER_SUBMIT_DYNPTR);
        countStat(a, STAT_SUBMITTED);
        a.jump(next);
        // A failed reserve still hands back a dynptr that must be discarded; then the loss is counted.
        a.label(discard).mov(R1, fp).add(R1, DYNPTR).mov(R2, 0).call(HELPER_DISCARD_DYNPTR);
        countStat(a, STAT_RESERVE_FAILED);
        a.jump(next);
    }

    /** r7 = a record's header: every field but the name and the read's result (both paths write it alike). */
    private void recordHeader(BpfAssembler a, int kind, boolean withTag) {
        a.load(DW, R1, fp, START).store(DW, R7, FenceRecord.START, R1)
                .load(DW, R2, fp, SIZE).add(R1, R2).store(DW, R7, END, R1);
        a.call(HELPER_KTIME_NS).store(DW, R7, TS, R0);
        a.store(W, R7, KIND, kind).store(W, R7, OFF, 0);
        a.load(DW, R1, fp, CLEN).store(W, R7, LEN, R1).store(W, R7, CAP, R1);
        a.store(W, R7, NAME_LEN, 0).store(W, R7, ERR, 0);
        a.call(HELPER_PID_TGID).store(W, R7, TID, R0).alu(BpfAssembler.Alu.RSH, R0, 32).store(W, R7, PID, R0);
        a.load(DW, R1, fp, ID).store(W, R7, PROG_ID, R1);
        a.store(H, R7, FUNC_IDX, R8).load(DW, R1, fp, FCNT).store(H, R7, FUNC_CNT, R1);
        a.load(DW, R1, fp, FLAGS);
        a.load(DW, R2, fp, CNT).add(R2, -1).jumpIf(Cond.NE, R8, R2, "notlast_" + kind)
                .alu(BpfAssembler.Alu.OR, R1, F_LAST).label("notlast_" + kind);
        a.load(DW, R2, fp, CLEN).load(DW, R3, fp, SIZE).jumpIf(Cond.EQ, R2, R3, "whole_" + kind)
                .alu(BpfAssembler.Alu.OR, R1, F_TRUNC).label("whole_" + kind);
        a.store(W, R7, FenceRecord.FLAGS, R1).store(W, R7, PAD, 0).store(DW, R7, TAG, 0);
        if (withTag) {
            a.mov(R1, R7).add(R1, TAG).mov(R2, 8).load(DW, R3, fp, P).add(R3, k.progTag())
                    .call(HELPER_PROBE_READ_KERNEL);
        }
    }

    /** {@link #emitRecord} by the chunked path: the image in fragments, then the header (with the read's result). */
    private void emitRecordInChunks(BpfAssembler a, int kind, boolean withTag, String next) {
        String named = "named_" + kind;
        a.load(DW, R1, fp, SIZE).jumpIf(Cond.LE, R1, chunkedMax, "clen_" + kind).mov(R1, chunkedMax)
                .label("clen_" + kind).store(DW, fp, CLEN, R1);
        a.add(R1, IMAGE).store(DW, fp, M_TOTAL, R1);
        beginFragments(a, M_TOTAL);
        recordHeader(a, kind, withTag);
        a.load(DW, R3, fp, NAMEP).jumpIf(Cond.EQ, R3, 0, named);
        a.mov(R1, R7).add(R1, NAME).mov(R2, NAME_MAX).call(HELPER_PROBE_READ_KERNEL_STR).store(W, R7, NAME_LEN, R0);
        a.label(named);
        a.load(DW, R1, fp, START).store(DW, fp, LSRC, R1).load(DW, R1, fp, CLEN).store(DW, fp, LLEN, R1)
                .store(DW, fp, LOFF, IMAGE).mov(R1, 0).store(DW, fp, FERR, R1);
        copyInChunks(a);
        a.load(DW, R1, fp, FERR).store(W, R7, ERR, R1);
        outputHeader(a, IMAGE);
        a.jump(next);
    }

    /** r0-r5 clobbered; SCR = this hook's per-CPU scratch value, or goto out. */
    private void scratch(BpfAssembler a, int entry) {
        a.store(W, fp, TMP, entry).loadMapFd(R1, scratchFd).mov(R2, fp).add(R2, TMP).call(HELPER_MAP_LOOKUP)
                .jumpIf(Cond.EQ, R0, 0, "out").store(DW, fp, SCR, R0);
    }

    /** A new logical record of totalSlot bytes: its fragment key and CPU; r7 = its header in the scratch value. */
    private void beginFragments(BpfAssembler a, int totalSlot) {
        a.load(DW, R1, fp, totalSlot).store(DW, fp, FTOTAL, R1);
        a.mov(R1, 0).store(DW, fp, FOUT, R1);
        a.call(HELPER_KTIME_NS).store(DW, fp, FKEY, R0);
        a.call(HELPER_SMP_PROCESSOR_ID).store(DW, fp, FCPU, R0);
        a.load(DW, R7, fp, SCR).add(R7, FenceRecord.FRAG_HEADER);
    }

    /** Fills the fragment header at r1 (scratch + at): key, CPU, total, FOFFS, LN. Clobbers r2. */
    private void fragmentHeader(BpfAssembler a) {
        a.load(DW, R2, fp, FKEY).store(DW, R1, FenceRecord.FRAG_KEY, R2)
                .load(DW, R2, fp, FCPU).store(W, R1, FenceRecord.FRAG_CPU, R2)
                .load(DW, R2, fp, FTOTAL).store(W, R1, FenceRecord.FRAG_TOTAL, R2)
                .load(DW, R2, fp, FOFFS).store(W, R1, FenceRecord.FRAG_OFF, R2)
                .load(DW, R2, fp, LN).store(W, R1, FenceRecord.FRAG_LEN, R2)
                .store(W, R1, KIND, KIND_FRAG).store(W, R1, FenceRecord.FRAG_PAD, 0);
    }

    /** Sends the logical record's header (its first hdrLen bytes, at scratch + FRAG_HEADER) as the last fragment. */
    private void outputHeader(BpfAssembler a, int hdrLen) {
        a.store(DW, fp, FOFFS, 0).store(DW, fp, LN, hdrLen);
        a.load(DW, R1, fp, SCR);
        fragmentHeader(a);
        a.mov(R2, R1).mov(R3, FenceRecord.FRAG_HEADER + hdrLen);
        output(a);
        String sent = "hs_" + uniq, done = "hd_" + uniq++;
        a.load(DW, R1, fp, FOUT).jumpIf(Cond.EQ, R1, 0, sent);
        countStat(a, STAT_RESERVE_FAILED);
        a.jump(done);
        a.label(sent);
        countStat(a, STAT_SUBMITTED);
        a.label(done);
    }

    /**
     * bpf_ringbuf_output(ring, r2, r3) without a wakeup (the consumer polls); a refusal is ORed into FOUT, counted
     * once per record by {@link #outputHeader}. No branch: the verifier walks this once per loop iteration.
     */
    private void output(BpfAssembler a) {
        a.loadMapFd(R1, ringFd).mov(R4, RB_NO_WAKEUP).call(HELPER_RINGBUF_OUTPUT);
        a.load(DW, R1, fp, FOUT).alu(BpfAssembler.Alu.OR, R1, R0).store(DW, fp, FOUT, R1);
    }

    /**
     * Copies LLEN bytes at LSRC into the record at offset LOFF, in chunks of at most {@link #CHUNK} (at most
     * {@link #chunkCount} of them); a failed read leaves its error in FERR. Keeps r6-r8; clobbers r9 (the chunk index)
     * where it is an unrolled loop.
     */
    private void copyInChunks(BpfAssembler a) {
        if (loops) {
            // bpf_loop(chunks, one chunk, the frame, 0): keeps r6-r9
            String body = callback("cb_chunk", b -> {
                b.mov(R9, R1);
                oneChunk(b, "cb_chunk_last", "cb_chunk_next");
                b.label("cb_chunk_next").mov(R0, 0).exit();
                b.label("cb_chunk_last").mov(R0, 1).exit();
            });
            a.mov(R1, chunkCount).loadFunc(R2, body).mov(R3, fp).mov(R4, 0).call(HELPER_LOOP);
            return;
        }
        String loop = "cl_" + uniq, done = "cd_" + uniq;
        a.mov(R9, 0);
        a.label(loop).jumpIf(Cond.GE, R9, CHUNKS, done);
        oneChunk(a, done, loop);
        a.label(done);
    }

    /**
     * r9 = the chunk's index: copies and sends it, then goto next, or goto done when the range has no more. In a
     * callback the chunk's length, a helper's size argument that the verifier must know exactly, goes through the
     * scratch value and is bounded again after it: the verifier does not trace a value loaded from a map back, so
     * the exactness stops there instead of reaching the callback's index and the bpf_loop call (where 6.1's verifier
     * gives up and marks every scalar of the caller exact: no later state would match an earlier one then).
     */
    private void oneChunk(BpfAssembler a, String done, String next) {
        String full = "cf_" + uniq++;
        a.mov(R4, R9).alu(BpfAssembler.Alu.MUL, R4, CHUNK);
        a.load(DW, R1, fp, LLEN).alu(BpfAssembler.Alu.SUB, R1, R4).jumpIf(Cond.SLE, R1, 0, done);
        a.jumpIf(Cond.LE, R1, CHUNK, full).mov(R1, CHUNK).label(full);
        a.store(DW, fp, LN, R1);
        if (loops) {
            a.load(DW, R2, fp, SCR).store(W, R2, CHUNK_AT + FenceRecord.FRAG_LEN, R1)
                    .load(W, R1, R2, CHUNK_AT + FenceRecord.FRAG_LEN).jumpIf(Cond.GT, R1, CHUNK, done);
        }
        a.load(DW, R2, fp, LOFF).add(R2, R4).store(DW, fp, FOFFS, R2);
        a.load(DW, R3, fp, LSRC).add(R3, R4);
        a.mov(R2, R1).load(DW, R1, fp, SCR).add(R1, CHUNK_AT + FenceRecord.FRAG_HEADER)
                .call(HELPER_PROBE_READ_KERNEL);
        a.load(DW, R1, fp, FERR).alu(BpfAssembler.Alu.OR, R1, R0).store(DW, fp, FERR, R1);
        a.load(DW, R1, fp, SCR).add(R1, CHUNK_AT);
        fragmentHeader(a);
        a.mov(R2, R1);
        if (loops) a.load(W, R3, R1, FenceRecord.FRAG_LEN).jumpIf(Cond.GT, R3, CHUNK, done);
        else a.load(DW, R3, fp, LN);
        a.add(R3, FenceRecord.FRAG_HEADER);
        output(a);
        if (!loops) a.add(R9, 1);
        a.jump(next);
    }

    /** The chunked path's maps and function tags sections: one small fragment per entry. */
    private void chunkedMapsAndTags(BpfAssembler a, KernelLayout.Metadata m) {
        if (loops) {
            a.load(DW, R1, fp, M_NMAPS).loadFunc(R2, callback("cb_map", b -> {
                b.mov(R8, R1);
                mapEntry(b, m, "cb_map_next");
                b.label("cb_map_next").mov(R0, 0).exit();
            })).mov(R3, fp).mov(R4, 0).call(HELPER_LOOP);
            a.load(DW, R1, fp, M_FCNT).loadFunc(R2, callback("cb_tag", b -> {
                b.mov(R8, R1);
                functionTag(b, "cb_tag_next");
                b.label("cb_tag_next").mov(R0, 0).exit();
            })).mov(R3, fp).mov(R4, 0).call(HELPER_LOOP);
            return;
        }
        a.mov(R8, -1);
        a.label("mc_maps").add(R8, 1).jumpIf(Cond.GE, R8, MAX_MAPS, "mc_maps_end")
                .load(DW, R1, fp, M_NMAPS).jumpIf(Cond.GE, R8, R1, "mc_maps_end");
        mapEntry(a, m, "mc_maps");
        a.jump("mc_maps");
        a.label("mc_maps_end");
        a.mov(R8, -1);
        a.label("mc_tags").add(R8, 1).jumpIf(Cond.GE, R8, CHUNKED_FUNCS, "mc_tags_end")
                .load(DW, R1, fp, M_FCNT).jumpIf(Cond.GE, R8, R1, "mc_tags_end");
        functionTag(a, "mc_tags");
        a.jump("mc_tags");
        a.label("mc_tags_end");
    }

    /**
     * r8 = i: map i's entry {u64 address, u32 id, u32 type, u32 max_entries, u32 value_size}, built in the chunk
     * area and sent as a fragment; goto next early where the map pointer is NULL.
     */
    private void mapEntry(BpfAssembler a, KernelLayout.Metadata m, String next) {
        a.mov(R3, R8).alu(BpfAssembler.Alu.LSH, R3, 3).load(DW, R1, fp, M_MAPS).add(R3, R1);
        a.mov(R1, fp).add(R1, M_PTR).mov(R2, 8).call(HELPER_PROBE_READ_KERNEL);
        a.load(DW, R9, fp, M_PTR).jumpIf(Cond.EQ, R9, 0, next);
        a.load(DW, R1, fp, SCR).store(DW, R1, CHUNK_AT + FenceRecord.FRAG_HEADER, R9);
        int[][] fields = {{8, m.mapId()}, {12, m.mapType()}, {16, m.mapMaxEntries()}, {20, m.mapValueSize()}};
        for (int[] f : fields) {
            a.load(DW, R1, fp, SCR).add(R1, CHUNK_AT + FenceRecord.FRAG_HEADER + f[0]).mov(R2, 4).mov(R3, R9)
                    .add(R3, f[1]).call(HELPER_PROBE_READ_KERNEL);
        }
        a.mov(R1, R8).alu(BpfAssembler.Alu.MUL, R1, MetaRecord.MAP_ENTRY).load(DW, R2, fp, M_O4).add(R1, R2)
                .store(DW, fp, FOFFS, R1).store(DW, fp, LN, MetaRecord.MAP_ENTRY);
        smallFragment(a, MetaRecord.MAP_ENTRY);
    }

    /** r8 = i: JITed function i's own tag, sent as a fragment; goto next early where func[i] is NULL. */
    private void functionTag(BpfAssembler a, String next) {
        String prog = "mc_tag_f" + uniq++;
        a.load(DW, R9, fp, P).load(DW, R1, fp, M_NREAL).jumpIf(Cond.EQ, R1, 0, prog);
        a.mov(R3, R8).alu(BpfAssembler.Alu.LSH, R3, 3).load(DW, R1, fp, M_FUNCS).add(R3, R1);
        a.mov(R1, fp).add(R1, M_PTR).mov(R2, 8).call(HELPER_PROBE_READ_KERNEL);
        a.load(DW, R9, fp, M_PTR).jumpIf(Cond.EQ, R9, 0, next);
        a.label(prog);
        a.load(DW, R1, fp, SCR).add(R1, CHUNK_AT + FenceRecord.FRAG_HEADER).mov(R2, 8).mov(R3, R9)
                .add(R3, k.progTag()).call(HELPER_PROBE_READ_KERNEL);
        a.mov(R1, R8).alu(BpfAssembler.Alu.LSH, R1, 3).load(DW, R2, fp, M_O5).add(R1, R2)
                .store(DW, fp, FOFFS, R1).store(DW, fp, LN, 8);
        smallFragment(a, 8);
    }

    /** Sends the chunk area's first len bytes as a fragment at FOFFS. */
    private void smallFragment(BpfAssembler a, int len) {
        a.load(DW, R1, fp, SCR).add(R1, CHUNK_AT);
        fragmentHeader(a);
        a.mov(R2, R1).mov(R3, FenceRecord.FRAG_HEADER + len);
        output(a);
    }

    private int stat = 0;

    /** stats[slot] += 1 (clobbers r0-r5). */
    private void countStat(BpfAssembler a, int slot) {
        String skip = "stat_" + (stat++);
        a.store(W, fp, TMP, slot).store(W, fp, TMP + 4, 0)
                .loadMapFd(R1, statsFd).mov(R2, fp).add(R2, TMP).call(HELPER_MAP_LOOKUP)
                .jumpIf(Cond.EQ, R0, 0, skip).mov(R1, 1).atomicAdd64(R0, 0, R1).label(skip);
    }

    /** slot = *(u64 *)(reg + off), via bpf_probe_read_kernel (zero on fault). */
    private void read64(BpfAssembler a, int slot, Reg reg, int off) {
        a.mov(R1, fp).add(R1, slot).mov(R2, 8).mov(R3, reg).add(R3, off).call(HELPER_PROBE_READ_KERNEL);
    }

    /** slot = (u64) *(u32 *)(reg + off). */
    private void read32(BpfAssembler a, int slot, Reg reg, int off) {
        a.store(DW, fp, slot, 0);
        a.mov(R1, fp).add(R1, slot).mov(R2, 4).mov(R3, reg).add(R3, off).call(HELPER_PROBE_READ_KERNEL);
    }

    /** reg = *(u64 *)(reg + off); goto out if that is NULL. */
    private void deref(BpfAssembler a, Reg reg, int off) {
        read64(a, TMP, reg, off);
        a.load(DW, reg, fp, TMP).jumpIf(Cond.EQ, reg, 0, "out");
    }
}

package ptfence.fence;

import ptfence.bpf.BpfAssembler;
import ptfence.bpf.BpfAssembler.Alu;
import ptfence.bpf.BpfAssembler.Cond;

import static ptfence.bpf.BpfAssembler.Reg.*;
import static ptfence.bpf.BpfAssembler.Size.*;
import static ptfence.fence.FenceRecord.*;

/**
 * The module fence's BPF programs (raw tracepoints, our own assembler). They use only helpers every kernel since
 * 5.8 has (ring buffer reserve/submit, bpf_probe_read_kernel{,_str}) — no kfuncs, no loops the verifier must
 * bound: a module's text is copied in {@link #CHUNK}-byte records, the chunk sequence unrolled here.
 * <ul>
 * <li>LOAD on {@code module_load} (ctx {struct module *}): traced in load_module() just before do_init_module(), so
 *     core and init text are complete and init has not run yet;</li>
 * <li>FREE on {@code module_free}: first thing in free_module(), before the text is freed;</li>
 * <li>SCAN, the LOAD program run with BPF_PROG_TEST_RUN on a loaded module's {@code __this_module};</li>
 * <li>INIT_FREE on {@code workqueue_execute_start} when the work is {@code do_free_init}: a header-only record per
 *     init text on {@code init_free_list}, which that work frees (after an RCU grace period).</li>
 * </ul>
 * Chunk records use {@link FenceRecord}'s header: start/end the whole text, off/len the chunk, func_idx 0 for core
 * text, 1 for init text and 2 for the symbol table (LOAD and SCAN, first; prog_id its symbol count, func_cnt 1 where
 * it is the full table with init symbols), name the module's, F_LAST on a text's last chunk (with F_TRUNC past
 * {@link #MAX_TEXT}).
 */
final class ModulePrograms {
    static final int KIND_LOAD = 20, KIND_FREE = 21, KIND_SCAN = 22, KIND_INIT_FREE = 23;
    /** Bytes per chunk record, and chunks per text (a 4 MiB module text; the largest in-tree ones are ~2 MiB). */
    static final int CHUNK = 64 << 10, MAX_CHUNKS = 64, MAX_TEXT = CHUNK * MAX_CHUNKS;
    /** Init texts per do_free_init run that are reported (more are left to the module's free). */
    static final int MAX_INIT_FREE = 32;

    private static final int HELPER_MAP_LOOKUP = 1, HELPER_KTIME_NS = 5, HELPER_PID_TGID = 14,
            HELPER_PROBE_READ_KERNEL = 113, HELPER_PROBE_READ_KERNEL_STR = 115, HELPER_RINGBUF_RESERVE = 131,
            HELPER_RINGBUF_SUBMIT = 132;
    /** func_idx of the symbol table's chunks (0 core text, 1 init text). */
    static final int PART_SYMBOLS = 2;
    /**
     * Chunks for the symbol table (1 MiB: the largest in-tree modules have ~10k core symbols, ~0.5 MiB; a full
     * table past it gives way to the core one).
     */
    static final int SYMBOL_CHUNKS = 16, MAX_SYMBOLS = 1 << 16, ELF64_SYM = 24;
    private static final int BASE = -8, SIZE = -16, TS = -24, TMP = -32, NODE = -40, NSYM = -48, STRTAB = -56,
            TYPETAB = -64, TABLE = -72, FULL = -80;

    private final ModuleLayout m;
    private final int ringFd, statsFd;
    private int labels;

    ModulePrograms(ModuleLayout layout, int ringFd, int statsFd) {
        this.m = layout;
        this.ringFd = ringFd;
        this.statsFd = statsFd;
    }

    /** raw_tp module_load / module_free (ctx[0] = struct module *); {@code initToo} copies init text as well. */
    byte[] copy(int kind, boolean initToo) {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 0).jumpIf(Cond.EQ, R6, 0, "out");
        a.call(HELPER_KTIME_NS).store(DW, R10, TS, R0);
        // symbols first: the consumer has them when the load's texts complete
        if (kind != KIND_FREE) m.symbols().ifPresent(t -> copySymbols(a, kind, t));
        copyText(a, kind, 0, m.coreBase(), m.coreSize());
        if (initToo) copyText(a, kind, 1, m.initBase(), m.initSize());
        a.label("out").mov(R0, 0).exit();
        return a.assemble();
    }

    /** r6 = struct module *: the text at *(r6 + baseOff), *(u32 *)(r6 + sizeOff) bytes, in chunk records. */
    private void copyText(BpfAssembler a, int kind, int part, int baseOff, int sizeOff) {
        String done = "done_" + part;
        read(a, BASE, 8, baseOff);
        a.store(DW, R10, SIZE, 0);
        read(a, SIZE, 4, sizeOff);
        a.load(DW, R1, R10, BASE).jumpIf(Cond.EQ, R1, 0, done);
        a.load(DW, R1, R10, SIZE).jumpIf(Cond.EQ, R1, 0, done);
        chunks(a, kind, part, MAX_CHUNKS, false);
    }

    /**
     * r6 = struct module *: its symbol table (symtab, strtab, typetab back to back, {@link ModuleLayout.SymbolTable})
     * as one blob in chunk records of part {@link #PART_SYMBOLS}, prog_id the symbol count. The table {@code
     * module.kallsyms} points at first: at load the full one, init symbols too (func_cnt 1); after init (a scan)
     * {@code core_kallsyms} itself. Where the full one is not laid out that way or past {@link #SYMBOL_CHUNKS}, the
     * core table (func_cnt 0); where neither is, nothing (the consumer then reads /proc/kallsyms).
     */
    private void copySymbols(BpfAssembler a, int kind, ModuleLayout.SymbolTable t) {
        String core = "sym_core", go = "sym_go";
        a.store(DW, R10, FULL, 1);
        read(a, TABLE, 8, t.current());
        a.load(DW, R3, R10, TABLE).jumpIf(Cond.EQ, R3, 0, core);
        a.mov(R1, R6).add(R1, t.core()).jumpIf(Cond.EQ, R3, R1, core);
        tableFields(a, t, core);
        a.jump(go);
        a.label(core).store(DW, R10, FULL, 0).mov(R1, R6).add(R1, t.core()).store(DW, R10, TABLE, R1);
        tableFields(a, t, "done_" + PART_SYMBOLS);
        a.label(go);
        chunks(a, kind, PART_SYMBOLS, SYMBOL_CHUNKS, true);
    }

    /**
     * The struct mod_kallsyms at TABLE into BASE (symtab), NSYM, STRTAB, TYPETAB and SIZE (the blob's length); to
     * {@code fail} where the three are not back to back, or the blob is past the chunk budget.
     */
    private void tableFields(BpfAssembler a, ModuleLayout.SymbolTable t, String fail) {
        a.store(DW, R10, NSYM, 0);
        int[][] fields = {{BASE, 8, t.symtab()}, {NSYM, 4, t.numSymtab()}, {STRTAB, 8, t.strtab()},
                {TYPETAB, 8, t.typetab()}};
        for (int[] f : fields) {
            a.mov(R1, R10).add(R1, f[0]).mov(R2, f[1]).load(DW, R3, R10, TABLE).add(R3, f[2])
                    .call(HELPER_PROBE_READ_KERNEL);
        }
        a.load(DW, R1, R10, NSYM).jumpIf(Cond.EQ, R1, 0, fail).jumpIf(Cond.GT, R1, MAX_SYMBOLS, fail);
        a.load(DW, R3, R10, BASE).jumpIf(Cond.EQ, R3, 0, fail);
        // strtab right after the n Elf64_Syms, typetab after strtab: then size = typetab + n - symtab
        a.mov(R2, R1).alu(Alu.MUL, R2, ELF64_SYM).add(R2, R3).load(DW, R4, R10, STRTAB).jumpIf(Cond.NE, R2, R4, fail);
        a.load(DW, R5, R10, TYPETAB).jumpIf(Cond.LT, R5, R4, fail);
        a.add(R5, R1).alu(Alu.SUB, R5, R3).jumpIf(Cond.GT, R5, SYMBOL_CHUNKS * CHUNK, fail).store(DW, R10, SIZE, R5);
    }

    /** BASE and SIZE on the stack: up to {@code max} chunk records of part {@code part} (func_idx). */
    private void chunks(BpfAssembler a, int kind, int part, int max, boolean symbolCount) {
        String done = "done_" + part;
        for (int i = 0; i < max; i++) {
            int off = i * CHUNK;
            String l = "c" + part + "_" + i;
            a.load(DW, R1, R10, SIZE).jumpIf(Cond.LE, R1, off, done);
            a.loadMapFd(R1, ringFd).mov(R2, IMAGE + CHUNK).mov(R3, 0).call(HELPER_RINGBUF_RESERVE)
                    .jumpIf(Cond.EQ, R0, 0, "lost_" + part).mov(R7, R0);
            a.load(DW, R1, R10, BASE).store(DW, R7, START, R1)
                    .load(DW, R2, R10, SIZE).add(R1, R2).store(DW, R7, END, R1);
            a.load(DW, R1, R10, TS).store(DW, R7, FenceRecord.TS, R1);
            a.store(W, R7, KIND, kind).store(W, R7, OFF, off).store(W, R7, CAP, CHUNK)
                    .store(W, R7, PROG_ID, 0).store(H, R7, FUNC_IDX, part).store(H, R7, FUNC_CNT, 0)
                    .store(DW, R7, TAG, 0).store(W, R7, PAD, 0);
            if (symbolCount) {
                a.load(DW, R1, R10, NSYM).store(W, R7, PROG_ID, R1).load(DW, R1, R10, FULL).store(H, R7, FUNC_CNT, R1);
            }
            a.call(HELPER_PID_TGID).store(W, R7, TID, R0).alu(Alu.RSH, R0, 32).store(W, R7, PID, R0);
            // flags: LAST when this chunk reaches the end; at the last chunk a longer text is cut (TRUNC)
            a.mov(R1, 0).load(DW, R2, R10, SIZE).jumpIf(Cond.GT, R2, off + CHUNK, l + "_more")
                    .mov(R1, F_LAST).label(l + "_more");
            if (i == max - 1) {
                a.jumpIf(Cond.LE, R2, off + CHUNK, l + "_whole").mov(R1, F_LAST | F_TRUNC).label(l + "_whole");
            }
            a.store(W, R7, FenceRecord.FLAGS, R1);
            a.mov(R1, R7).add(R1, NAME).mov(R2, ModuleLayout.NAME_LEN).mov(R3, R6).add(R3, m.name())
                    .call(HELPER_PROBE_READ_KERNEL_STR).store(W, R7, NAME_LEN, R0);
            // len = min(size - off, CHUNK), bounded where the verifier can see it
            a.load(DW, R2, R10, SIZE).add(R2, -off).jumpIf(Cond.LE, R2, CHUNK, l + "_len").mov(R2, CHUNK)
                    .label(l + "_len");
            a.store(W, R7, LEN, R2);
            a.mov(R1, R7).add(R1, IMAGE).load(DW, R3, R10, BASE).add(R3, off).call(HELPER_PROBE_READ_KERNEL)
                    .store(W, R7, ERR, R0);
            a.mov(R1, R7).mov(R2, 0).call(HELPER_RINGBUF_SUBMIT);
            countStat(a, FencePrograms.STAT_SUBMITTED);
        }
        a.jump(done);
        a.label("lost_" + part);
        countStat(a, FencePrograms.STAT_RESERVE_FAILED);
        a.label(done);
    }

    /** raw_tp workqueue_execute_start: when the work is do_free_init, one record per init text on the list. */
    byte[] initFree(long doFreeInit, long initFreeList) {
        BpfAssembler a = new BpfAssembler();
        a.load(DW, R6, R1, 0);
        read(a, TMP, 8, m.workFunc());
        a.load(DW, R1, R10, TMP).loadImm64(R2, doFreeInit).jumpIf(Cond.NE, R1, R2, "out");
        a.call(HELPER_KTIME_NS).store(DW, R10, TS, R0);
        a.loadImm64(R6, initFreeList);
        read(a, NODE, 8, 0);                                     // llist_head.first
        for (int i = 0; i < MAX_INIT_FREE; i++) {
            a.load(DW, R6, R10, NODE).jumpIf(Cond.EQ, R6, 0, "out");
            read(a, BASE, 8, m.initfreeText().orElseThrow());
            a.loadMapFd(R1, ringFd).mov(R2, IMAGE).mov(R3, 0).call(HELPER_RINGBUF_RESERVE)
                    .jumpIf(Cond.EQ, R0, 0, "lost").mov(R7, R0);
            a.load(DW, R1, R10, BASE).store(DW, R7, START, R1).store(DW, R7, END, R1);
            a.load(DW, R1, R10, TS).store(DW, R7, FenceRecord.TS, R1);
            a.store(W, R7, KIND, KIND_INIT_FREE).store(W, R7, OFF, 0).store(W, R7, LEN, 0).store(W, R7, CAP, 0)
                    .store(W, R7, NAME_LEN, 0).store(W, R7, ERR, 0).store(W, R7, PID, 0).store(W, R7, TID, 0)
                    .store(W, R7, PROG_ID, 0).store(H, R7, FUNC_IDX, 1).store(H, R7, FUNC_CNT, 0)
                    .store(DW, R7, TAG, 0).store(W, R7, FenceRecord.FLAGS, F_LAST).store(W, R7, PAD, 0);
            a.mov(R1, R7).mov(R2, 0).call(HELPER_RINGBUF_SUBMIT);
            read(a, NODE, 8, 0);                                 // llist_node.next
        }
        a.jump("out");
        a.label("lost");
        countStat(a, FencePrograms.STAT_RESERVE_FAILED);
        a.label("out").mov(R0, 0).exit();
        return a.assemble();
    }

    /** slot = size bytes at (r6 + off) via bpf_probe_read_kernel (zeros on a fault). */
    private static void read(BpfAssembler a, int slot, int size, int off) {
        a.mov(R1, R10).add(R1, slot).mov(R2, size).mov(R3, R6).add(R3, off).call(HELPER_PROBE_READ_KERNEL);
    }

    /** stats[slot] += 1 (clobbers r0-r5). */
    private void countStat(BpfAssembler a, int slot) {
        String skip = "stat_" + (labels++);
        a.store(W, R10, TMP, slot).store(W, R10, TMP + 4, 0)
                .loadMapFd(R1, statsFd).mov(R2, R10).add(R2, TMP).call(HELPER_MAP_LOOKUP)
                .jumpIf(Cond.EQ, R0, 0, skip).mov(R1, 1).atomicAdd64(R0, 0, R1).label(skip);
    }
}

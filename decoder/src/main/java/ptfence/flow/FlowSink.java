package ptfence.flow;

import ptfence.insn.CodeCache;
import ptfence.insn.TntPaths;
import ptfence.insn.X86Decoder;

/** Receives the reconstructed flow: instructions (one at a time or as straight-line runs), events, errors. */
public interface FlowSink {
    /** One instruction (instruction-flow decoder). */
    void insn(long ip, int size, int cls, int mode, boolean speculative);

    /**
     * A straight-line run of {@code count} instructions (block decoder): the first at {@code ip}, which is
     * {@code off} in {@code code}; each next one follows the previous. {@code code} may be null when the
     * run is a single instruction decoded outside any cache.
     */
    void block(long ip, int count, CodeCache code, int off, int mode, boolean speculative);

    void event(Event ev);

    /** An error: {@code kind} is "error", "sync error" or "resync error" as in ptxed. */
    void error(String kind, int code, long offset, long ip);

    /** The trace ended while tracing was enabled. */
    void endOfTrace();

    /** A new block starts (one call of libipt's pt_blk_next). */
    default void beginBlock() {
    }

    /** True if the sink ignores instructions (then the decoder may skip over them in bulk). */
    default boolean countsOnly() {
        return false;
    }

    /**
     * True if the sink wants edges, not instructions one by one inside TNT paths (coverage): the decoder may then
     * apply whole TNT packets through its memo and report each path with {@link #path}, and of a straight-line run of
     * instructions (a cached block: none but the last is a branch) report only the first and the last to {@link #insn}.
     */
    default boolean edgesOnly() {
        return false;
    }

    /**
     * A TNT path of an {@link #edgesOnly} sink: its first instruction at {@code first}, its last (a branch) at
     * {@code last}, the content it runs in mapped at {@code base}. {@code paths} is the decoder's memo, which names the
     * path ({@link TntPaths#pathKey}, {@link TntPaths#pathTable}: the same each time it runs) and gives its edges as
     * offset pairs from {@code base} ({@link TntPaths#pathEdges}); both only during this call. The instructions
     * themselves are counted by the decoder.
     */
    default void path(long base, TntPaths paths, long first, long last) {
    }

    /**
     * True if the sink looks at branches only (perf's call and branch views): the instruction decoder may then report
     * a cached straight-line run's instructions but the last (a branch or not) with one {@link #straight}.
     */
    default boolean branchesOnly() {
        return false;
    }

    /**
     * {@code count} instructions ran, none a branch, the first at {@code ip}, which is {@code off} in {@code code};
     * each next one follows the previous (a {@link #branchesOnly} sink; the run's last instruction comes to
     * {@link #insn} next).
     */
    default void straight(long ip, int count, CodeCache code, int off, int mode, boolean speculative) {
        throw new UnsupportedOperationException("straight runs are for sinks that look at branches only");
    }

    /**
     * A straight run given to {@link #insn} one instruction at a time, for a {@link #straight} that needs each one
     * (its lengths and classes from the code cache, decoded with {@code x86} where not cached yet).
     */
    default void insnEach(long ip, int count, CodeCache code, int off, int mode, boolean speculative, X86Decoder x86) {
        long a = ip;
        int o = off;
        for (int i = 0; i < count; i++) {
            int len = code.length(o, x86);
            insn(a, len, code.cls(o), mode, speculative);
            a += len;
            o += len;
        }
    }

    /**
     * True if the sink looks at calls and returns only, beside branches as a clock (perf's call views): a {@link
     * #branchesOnly} sink that may be given whole TNT paths, those with direct calls and compressed returns too, through
     * {@link #plainPath}.
     */
    default boolean plainPaths() {
        return false;
    }

    /**
     * A path of a {@link #plainPaths} sink, made of straight-line code, conditional branches and direct jumps, and in a
     * TNT packet's path direct calls and compressed returns ({@link TntPaths#lookupCarrying}, {@link
     * TntPaths#lookupTail}): it starts at {@code first} and runs {@code paths.insns} instructions, its last (a
     * conditional branch or a return that took the TNT packet's last bit, an indirect jump a TIP is for, or a direct
     * jump out of the content) at {@code base + paths.last}; where it holds a call or a return, every branch before
     * that that moved the flow is in {@code paths.moves}, else the last one is {@code paths.taken} (offsets from {@code
     * base} in {@code code}). The sink takes it as
     * the instructions one by one and returns true, or returns false and is given them one by one (nothing changed).
     */
    default boolean plainPath(long base, CodeCache code, TntPaths paths, long first) {
        return false;
    }

    /**
     * True if the sink shows every branch taken (perf's branch view): a {@link #branchesOnly} sink, not a {@link
     * #plainPaths} one, that may be given whole paths through {@link #plainPath} (a TNT packet's, the code up to a
     * TIP), each with every branch in it that moved the flow in {@code paths.moves} ({@link TntPaths#lookupMoving},
     * {@link TntPaths#lookupTailMoving}).
     */
    default boolean movingPaths() {
        return false;
    }

    /** A state of perf's quick decode at an IP alone: an instruction there (a TIP; the IP a trace begin or interrupt went to). */
    int HOP_IP = 0;
    /** The PSB+ just read ends: its state, {@code from} its FUP's IP (0: none; else an instruction there too). */
    int HOP_PSB = 1;
    /**
     * An asynchronous branch (FUP then TIP or TIP.PGD) as perf's quick decode makes it: one state that is an
     * instruction at {@code from} (the FUP's IP) and the branch to {@code to} (0: a trace end); the branch follows as
     * its event.
     */
    int HOP_ASYNC = 2;
    /** A trace begin found by perf's scan for an IP (no IP since the sync, the overflow): at {@code from}. */
    int HOP_BEGIN = 3;
    /** A TIP.PGD alone with an IP, {@code from}: perf's state from 0 to it, a trace end (no instruction). */
    int HOP_END = 4;
    /** An instruction at {@code from} that perf samples with the state before it, at that state's time (its "resample"). */
    int HOP_RESAMPLE = 5;
    /** A MODE.TSX that is no abort, bound to the FUP at {@code from}: an instruction there ({@code to} 1: in a transaction). */
    int HOP_TX = 6;
    /** A transaction's abort: its FUP at {@code from} and the TIP to {@code to} (0: a TIP.PGD) are one branch. */
    int HOP_ABORT = 7;

    /**
     * perf's quick decode (itrace {@code q}, its decoder's "hop" mode): no code is read and TNT packets are ignored;
     * each IP packet is a state of its own ({@code kind}: one of HOP_*). Only {@link FlowDecoder#run} in that mode
     * calls it, between the events it passes on as usual (trace begins, interrupts, PSB+, power, errors).
     */
    default void hop(int kind, long from, long to) {
    }

    /**
     * perf's recovery: the flow stands at {@code ip}, where there is no code, and is about to fail there; {@code tsc}
     * is the time it resumed at {@code ip} after an earlier error (-1: unknown, now). A trace begin not yet reported
     * is reported now, before the error.
     */
    default void noCode(long ip, long tsc) {
    }

    /** perf's recovery: the scan after an error met a PSB; perf reports its PSB event there, no trace begin. */
    default void resumedAtPsb() {
    }

    /** Resynchronized after an error at a point where tracing is disabled (ptxed prints "[disabled]"). */
    default void disabledAfterResync() {
    }
}

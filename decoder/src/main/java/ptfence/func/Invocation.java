package ptfence.func;

import java.util.List;

/**
 * One run of a traced function on one CPU: where it was entered, every instruction it executed (following
 * bpf-to-bpf calls and tail calls into other programs), the calls it made out to code it does not own (BPF
 * helpers, kfuncs), and how it ended. Times are perf time (ns) when the trace has timing, else -1.
 *
 * @param cpu        CPU it ran on
 * @param pid        process id at entry (-1 when the sideband does not say)
 * @param tid        thread id at entry (-1 when the sideband does not say)
 * @param function   the name the invocation was matched by (the program's or symbol's full name)
 * @param entryTime  perf time of the first instruction
 * @param exitTime   perf time of the last instruction (or of the event that ended it)
 * @param end        how the invocation ended
 * @param path       address of each instruction executed inside the function and followed programs, in order
 * @param steps      per instruction of {@code path}: one of the {@code STEP_*} kinds
 * @param calls      calls out of the function, in order
 * @param programs   the programs the path ran through, in order of first entry (the function first)
 * @param outputs    the bpf-output samples written during it, in time order, each at its place in the path
 */
public record Invocation(int cpu, int pid, int tid, String function, long entryTime, long exitTime, End end,
        long[] path, byte[] steps, List<Call> calls, List<String> programs, List<Output> outputs) {

    public Invocation(int cpu, int pid, int tid, String function, long entryTime, long exitTime, End end,
            long[] path, byte[] steps, List<Call> calls, List<String> programs) {
        this(cpu, pid, tid, function, entryTime, exitTime, end, path, steps, calls, programs, List.of());
    }

    /**
     * A bpf-output sample the invocation wrote: its time fell between two of the invocation's instructions (or in a
     * call out between them, bpf_perf_event_output's), and its IP is in no other BPF program.
     *
     * @param index  how many instructions of {@link #path()} ran before it
     */
    public record Output(int index, ptfence.sideband.BpfOutputs.Sample sample) {
    }

    /** An instruction that does not branch (or a branch whose direction is not recorded). */
    public static final byte STEP_PLAIN = 0;
    /** A conditional branch that was taken. */
    public static final byte STEP_TAKEN = 1;
    /** A conditional branch that was not taken. */
    public static final byte STEP_NOT_TAKEN = 2;
    /** A call whose callee is summarized in {@link #calls()} (helper, kfunc). */
    public static final byte STEP_CALL_OUT = 3;
    /** A call followed into the callee (bpf-to-bpf). */
    public static final byte STEP_CALL = 4;
    /** A return inside the function (from a followed call). */
    public static final byte STEP_RETURN = 5;
    /** A jump into another program that is then followed (tail call). */
    public static final byte STEP_TAIL_CALL = 6;
    /** Any other taken control transfer (jump, indirect jump). */
    public static final byte STEP_JUMP = 7;

    public enum End {
        /** Returned to its caller. */
        RETURN,
        /** Tracing stopped inside it (filter, context switch, end of the traced window). */
        DISABLED,
        /** The trace ended inside it. */
        TRACE_END,
        /** A decode error (overflow, missing code) cut it short. */
        ERROR
    }

    /**
     * A call out of the function to code it does not own.
     *
     * @param index   position in {@link #path()} of the call instruction
     * @param from    address of the call instruction
     * @param target  address called
     * @param name    symbol of the target ("bpf_map_lookup_elem"), or its address in hex when unknown
     * @param enter   perf time of the call (-1 unknown)
     * @param exit    perf time of the return into the function (-1 unknown)
     * @param insns   instructions executed in the callee while it was traced (0 when it ran untraced)
     */
    public record Call(int index, long from, long target, String name, long enter, long exit, long insns) {
        public long duration() {
            return enter < 0 || exit < 0 ? -1 : exit - enter;
        }
    }

    public long duration() {
        return entryTime < 0 || exitTime < 0 ? -1 : exitTime - entryTime;
    }

    public int instructions() {
        return path.length;
    }
}

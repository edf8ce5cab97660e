package ptfence.calls;

/**
 * What one CPU's flow says about control transfers, in trace order: taken branches (with the instructions run since
 * the previous item), events worth showing, and the points where the flow was lost.
 */
public sealed interface FlowItem permits FlowItem.Branch, FlowItem.Mark, FlowItem.Loss {
    int cpu();

    /** Perf time (ns), or -1 without timing. */
    long time();

    /** Instructions run on this CPU since its previous item (the branch instruction included). */
    long insns();

    /**
     * A taken branch, or the start or end of tracing: {@code from} 0 for a trace begin, {@code to} 0 when the
     * target is not traced. {@code insnLen} is the branch instruction's length (0 for an asynchronous transfer), so
     * a call's return address is {@code from + insnLen}. {@code cycles}: the core cycles the trace's CYC packets
     * counted since the previous branch (0 without CYC). {@code stateInsns}/{@code stateCycles}: perf's IPC counts of
     * the state its sample is made of ({@link ptfence.flow.SampleCycles}: instructions so far, the cycle count the
     * state took; {@code stateCycles} -1 where the state carries no IPC or none is counted).
     */
    record Branch(int cpu, long time, long from, long to, int flags, int insnLen, long insns, long cycles,
            long stateInsns, long stateCycles) implements FlowItem {
    }

    /**
     * An event the trace carries besides control flow (cbr, psb, ptwrite, mwait, pwre, pwrx, exstop, tsx):
     * {@code ip} 0 when it has none; {@code keys}/{@code values} its numbers, in order. {@code flags}: the branch
     * flags perf shows it with where its decoder state is known here (a ratio shown at a branch's state), else -1
     * (the view shows its CPU's last branch kind). {@code sampleIp}, {@code sampleAddr}, {@code insnIp},
     * {@code insnLen}, {@code insnTime}: see {@link #sampledAt}.
     */
    record Mark(int cpu, long time, String name, long ip, String[] keys, long[] values, long insns, int flags,
            long sampleIp, long sampleAddr, long insnIp, int insnLen, long insnTime) implements FlowItem {
        public Mark(int cpu, long time, String name, long ip, String[] keys, long[] values, long insns) {
            this(cpu, time, name, ip, keys, values, insns, -1, 0, 0, 0, 0, -1);
        }

        /** This mark shown with the flags {@code f}. */
        public Mark withFlags(int f) {
            return new Mark(cpu, time, name, ip, keys, values, insns, f, sampleIp, sampleAddr, insnIp, insnLen,
                    insnTime);
        }

        /**
         * This mark as perf's sample of it: at {@code at}, its state's IP (a psb's and its cbr's the PSB+'s FUP), which
         * perf's --dsos and -S filter it by; {@code addr} its state's address (-F addr); the instruction its state
         * carries (-F insn) at {@code insnIp}, {@code insnLen} bytes: the one its decoder walked last (length 0: none
         * since an asynchronous transfer, perf then reads the one at {@code at}), walked at perf time
         * {@code insnTime} (perf keeps its bytes as they were then: code reloaded since does not change them).
         */
        public Mark sampledAt(long at, long addr, long insnIp, int insnLen, long insnTime) {
            return new Mark(cpu, time, name, ip, keys, values, insns, flags, at, addr, insnIp, insnLen, insnTime);
        }
    }

    /**
     * The flow was lost here (an overflow or a decode error): what came before on this CPU is not continued.
     * {@code code} is the decoder's error ({@link ptfence.flow.PtError}; {@code PtError.OVERFLOW} for an overflow),
     * {@code ip} where it happened (0 when unknown); {@code mapsAt} the time of the sideband perf's session had
     * delivered then, which its lookup of {@code ip} sees ({@link ptfence.flow.SampleClock#delivered}; -1: none).
     */
    record Loss(int cpu, long time, String reason, int code, long ip, long insns, long mapsAt) implements FlowItem {
    }
}

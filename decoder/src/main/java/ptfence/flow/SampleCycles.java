package ptfence.flow;

import ptfence.insn.InsnClass;
import ptfence.timing.PerfClock;

/**
 * perf's IPC counts of the states its decoder returns, for the sinks that make perf's samples (the sample views'
 * {@code ptfence.script.SampleSink}, the call views' {@code ptfence.calls.BranchSink}): each state carries the
 * instructions walked so far and the cycle count it took from {@link PerfClock} (whether it carries an IPC at all:
 * perf's INTEL_PT_SAMPLE_IPC). Which states take a moved count is the clock's rule; which instructions make a state is
 * this class's: a branch that takes a packet (TNT bit, TIP) is returned between packets, a not-taken conditional
 * branch that is not sampled is no state, any other branch or sampled instruction is returned while walking. A sample
 * then counts from the last sample of its kind ({@link Since}).
 */
public final class SampleCycles {
    private FlowDecoder decoder;

    /** The state now: whether it carries an IPC, its cycle count and instruction total. */
    private boolean ipc;
    private long cyc;
    private long insn;
    /** The state of the branch held until its target is known. */
    private boolean hIpc;
    private long hCyc;
    private long hInsn;
    /** A conditional branch just run: its state (taken, or sampled) is known at the next instruction. */
    private boolean condOpen;
    private long condIp;
    private int condSize;
    private long condInsn;

    /** The decoder now reporting (its clock counts the cycles). */
    public void decoder(FlowDecoder d) {
        decoder = d;
    }

    private PerfClock clock() {
        return decoder == null ? null : decoder.perfClock();
    }

    /**
     * A state perf's decoder returns now, after {@code insnTotal} instructions: between packets ({@code sampleTime}:
     * it takes a moved cycle count, as an event's) or while walking to one.
     */
    public void state(boolean sampleTime, long insnTotal) {
        PerfClock pc = clock();
        if (pc == null) {
            ipc = false;
            return;
        }
        ipc = sampleTime ? pc.cycSampleTime() : pc.cycState();
        cyc = pc.sampleCycles();
        insn = insnTotal;
    }

    /**
     * The trace begin state at the full IP perf's scan after an error found ({@link PerfClock#stateAtIp}): its count
     * is the IP packet's, not the failing walk's.
     */
    public void stateAtIp(long insnTotal) {
        PerfClock pc = clock();
        if (pc == null) {
            ipc = false;
            return;
        }
        ipc = pc.stateAtIp();
        cyc = pc.sampleCycles();
        insn = insnTotal;
    }

    /** A decode error: perf's state takes the count as it is ({@code walkFailed}: a walk in missing code failed). */
    public void error(boolean walkFailed) {
        PerfClock pc = clock();
        if (pc != null) {
            pc.cycError();
            if (walkFailed) {
                pc.walkFailed();
            }
        }
    }

    /**
     * The instruction just counted ({@code insnTotal} so far; {@code sample}: an instruction sample is made of it):
     * the state perf returns for it, where it returns one (a not-taken conditional branch that is not sampled waits
     * for {@link #closeCond}).
     */
    public void insn(long ip, int size, int cls, boolean sample, long insnTotal) {
        if (cls == InsnClass.COND_JUMP && !sample) {
            condOpen = true;
            condIp = ip;
            condSize = size;
            condInsn = insnTotal;
            PerfClock pc = clock();
            if (pc != null) {
                pc.condState();
            }
        } else if (SampleClock.takesPacket(cls)) {
            state(true, insnTotal);
        } else if (sample || InsnClass.isBranch(cls)) {
            state(false, insnTotal);
        }
    }

    /** Whether a conditional branch waits for the next instruction to say whether it was taken. */
    public boolean condOpen() {
        return condOpen;
    }

    /**
     * The conditional branch before the instruction at {@code ip}: taken (perf returned its state, which the held
     * branch takes where {@code held} it is that branch), or not (no state: perf drops the moved count).
     */
    public void closeCond(long ip, boolean held) {
        condOpen = false;
        PerfClock pc = clock();
        if (pc == null) {
            return;
        }
        if (ip != condIp + condSize) {
            ipc = pc.condTaken();
            cyc = pc.sampleCycles();
            insn = condInsn;
            if (held) {
                hold();
            }
            return;
        }
        pc.condNotTaken();
    }

    /** Whether the open conditional branch is at {@code ip}. */
    public boolean condAt(long ip) {
        return condIp == ip;
    }

    /** The branch whose state is now is held until its target is known. */
    public void hold() {
        hIpc = ipc;
        hCyc = cyc;
        hInsn = insn;
    }

    /** The held branch's state is the one its sample is made of. */
    public void held() {
        ipc = hIpc;
        cyc = hCyc;
        insn = hInsn;
    }

    /** Whether the state now carries an IPC. */
    public boolean ipc() {
        return ipc;
    }

    /** The state's cycle count (perf's tot_cyc_cnt as the state took it). */
    public long cycles() {
        return cyc;
    }

    /** The state's instruction total. */
    public long insns() {
        return insn;
    }

    /**
     * The counts of samples of one kind (perf's last_br_insn_cnt/last_br_cyc_cnt for branches, last_in_* for
     * instructions): a sample whose state carries an IPC and a cycle count other than the last such sample's counts
     * what ran since it; any other carries none (0, 0) and moves nothing.
     */
    public static final class Since {
        private long lastInsn;
        private long lastCyc;
        private long insns;
        private long cycles;

        /** A sample of this kind made of a state ({@code ipc}, {@code stInsn}, {@code stCyc}). */
        public void sample(boolean ipc, long stInsn, long stCyc) {
            insns = 0;
            cycles = 0;
            if (ipc && stCyc != lastCyc) {
                cycles = stCyc - lastCyc;
                insns = stInsn - lastInsn;
                lastInsn = stInsn;
                lastCyc = stCyc;
            }
        }

        /** The sample's insn_cnt (0: none). */
        public long insns() {
            return insns;
        }

        /** The sample's cyc_cnt (0: none). */
        public long cycles() {
            return cycles;
        }
    }
}

package ptfence.func;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;
import ptfence.flow.Event;
import ptfence.flow.FlowSink;
import ptfence.insn.CodeCache;
import ptfence.insn.InsnClass;
import ptfence.sideband.CodeMap;
import ptfence.sideband.Sideband;

/**
 * Finds the invocations of one function in one CPU's instruction flow (docs/func.md gives the rules): entry from
 * outside, calls out summarized, bpf-to-bpf calls and tail calls followed, exit by return, by a jump that is not a
 * tail call, by tracing stopping, or at the end of the trace.
 */
public final class InvocationTracker implements FlowSink {
    /** At most this many instructions between leaving by a jump and entering another program make a tail call. */
    private static final int TAIL_CALL_WINDOW = 64;

    private enum State { OUTSIDE, INSIDE, CALLED_OUT, LEFT_BY_JUMP }

    private final int cpu;
    private final List<CodeMap.Function> target;
    private final CodeMap code;
    private final Sideband sideband;
    private final java.util.function.Consumer<Invocation> done;
    private LongSupplier clock = () -> -1;
    // this CPU's bpf-output samples (time order), the next one not yet passed, and those of the open invocation
    private List<ptfence.sideband.BpfOutputs.Sample> samples = List.of();
    private long nextSampleTime = Long.MAX_VALUE;
    private int nextSample;
    private final List<Invocation.Output> outputs = new ArrayList<>();

    private State state = State.OUTSIDE;
    // the invocation being built
    private long[] path = new long[256];
    private byte[] steps = new byte[256];
    private int n;
    private final List<Invocation.Call> calls = new ArrayList<>();
    private final List<String> programs = new ArrayList<>();
    private final List<long[]> outFrames = new ArrayList<>(); // {return address, call index in calls}
    private String function;
    private long entryTime;
    private long lastTime;
    private int pid;
    private int tid;
    // the previous instruction seen (inside or not)
    private long prevIp;
    private int prevSize;
    private int prevCls;
    private boolean havePrev;
    private long prevInsideIp;
    private int prevInsideCls;
    private int prevInsideSize;
    private long expectReturn = -1;
    private long outsideCount;
    private long jumpTarget = -1;
    private long[] retStack = new long[16];
    private int retDepth;
    private boolean startedInBpf;
    private long exitTime;

    /**
     * @param target the function's code over time (perf time); {@code code} tells which BPF program holds an address
     */
    public InvocationTracker(int cpu, List<CodeMap.Function> target, CodeMap code, Sideband sideband,
            java.util.function.Consumer<Invocation> done) {
        this.cpu = cpu;
        this.target = target;
        this.code = code;
        this.sideband = sideband;
        this.done = done;
    }

    /** The perf time of the instruction being reported (the decoder's TSC, converted); -1 without timing. */
    public void clock(LongSupplier perfTime) {
        this.clock = perfTime;
    }

    /**
     * This CPU's bpf-output samples, earliest first: each goes into the invocation open where the merged flow
     * places it, before the first instruction {@code placeClock} (perf's sample clock, as the flow's lines have it)
     * times later, {@code toPerf} converting its TSC.
     */
    public void samples(List<ptfence.sideband.BpfOutputs.Sample> onThisCpu, ptfence.flow.SampleClock placeClock,
            java.util.function.LongUnaryOperator toPerf) {
        samples = onThisCpu;
        nextSample = 0;
        nextSampleTime = samples.isEmpty() ? Long.MAX_VALUE : samples.get(0).time();
        this.placeClock = samples.isEmpty() ? null : placeClock;
        this.toPerf = toPerf;
    }

    private ptfence.flow.SampleClock placeClock;
    private java.util.function.LongUnaryOperator toPerf;
    private long placeTsc = -1;
    private long placePerf = -1;

    /** The flow's time of what is reported now (TSC {@code tsc} from the sample clock), as perf time. */
    private long placeTime(long tsc) {
        if (tsc != placeTsc) {
            placeTsc = tsc;
            placePerf = tsc < 0 ? -1 : toPerf.applyAsLong(tsc);
        }
        return placePerf;
    }

    /** The samples earlier than {@code t}: placed after the instructions so far if an invocation is open. */
    private void passSamples(long t) {
        while (nextSampleTime < t) {
            ptfence.sideband.BpfOutputs.Sample s = samples.get(nextSample++);
            nextSampleTime = nextSample < samples.size() ? samples.get(nextSample).time() : Long.MAX_VALUE;
            if (state != State.OUTSIDE && n > 0) {
                outputs.add(new Invocation.Output(n, s));
            }
        }
    }

    private boolean inTarget(long ip, long t) {
        for (CodeMap.Function f : target) {
            if (f.covers(ip, t == -1 ? f.from() : t)) {
                return true;
            }
        }
        return false;
    }

    /** True if {@code ip} is code this invocation follows: the function, or a program it tail-called into. */
    private boolean followed(long ip, long t) {
        if (inTarget(ip, t)) {
            return true;
        }
        if (programs.size() <= 1) {
            return false;
        }
        CodeMap.Program p = code.programAt(ip, t == -1 ? Long.MIN_VALUE + 1 : t);
        return p != null && programs.contains(p.fullName());
    }

    @Override
    public void insn(long ip, int size, int cls, int mode, boolean speculative) {
        long t = clock.getAsLong();
        if (placeClock != null) {
            long p = placeTime(placeClock.insn(cls));
            if (p > nextSampleTime) {
                passSamples(p);
            }
        }
        switch (state) {
            case OUTSIDE -> {
                if (inTarget(ip, t)) {
                    boolean viaCall = havePrev && (prevCls == InsnClass.CALL || prevCls == InsnClass.CALL_INDIRECT)
                            && !inTarget(prevIp, t);
                    expectReturn = viaCall ? prevIp + prevSize : -1;
                    begin(ip, t);
                    append(ip, size, cls, t);
                }
            }
            case INSIDE -> {
                if (followed(ip, t)) {
                    stepInside(ip, t);
                    append(ip, size, cls, t);
                } else {
                    leave(ip, size, cls, t);
                }
            }
            case CALLED_OUT -> {
                long[] top = outFrames.get(outFrames.size() - 1);
                if (ip == top[0] && followed(ip, t)) {
                    finishCall(top, t);
                    outFrames.remove(outFrames.size() - 1);
                    state = State.INSIDE;
                    append(ip, size, cls, t);
                } else if (followed(ip, t)) {
                    state = State.INSIDE; // a callback of the callee (bpf_loop, for_each_map_elem)
                    append(ip, size, cls, t);
                } else {
                    countCallee();
                }
            }
            case LEFT_BY_JUMP -> {
                if (continuesAt(ip, t)) {
                    state = State.INSIDE;
                    append(ip, size, cls, t);
                } else if (++outsideCount > TAIL_CALL_WINDOW || code.programAt(ip, t == -1 ? Long.MIN_VALUE + 1 : t)
                        != null || inTarget(ip, t)) {
                    endAfterJump();
                    state = State.OUTSIDE;
                    insn(ip, size, cls, mode, speculative);
                    return;
                }
            }
        }
        prevIp = ip;
        prevSize = size;
        prevCls = cls;
        havePrev = true;
    }

    private void pushReturn(long address) {
        if (retDepth == retStack.length) {
            retStack = Arrays.copyOf(retStack, retDepth * 2);
        }
        retStack[retDepth++] = address;
    }

    private void begin(long ip, long t) {
        n = 0;
        retDepth = 0;
        outputs.clear();
        calls.clear();
        programs.clear();
        outFrames.clear();
        CodeMap.Program p = code.programAt(ip, t == -1 ? Long.MIN_VALUE + 1 : t);
        function = p != null ? p.fullName() : nameOf(ip, t);
        startedInBpf = p != null;
        programs.add(function);
        entryTime = t;
        Sideband.Task task = t == -1 ? null : sideband.taskAt(cpu, t);
        pid = task == null ? -1 : task.pid();
        tid = task == null ? -1 : task.tid();
        state = State.INSIDE;
    }

    private String nameOf(long ip, long t) {
        for (CodeMap.Function f : target) {
            if (f.covers(ip, t == -1 ? f.from() : t)) {
                return f.name();
            }
        }
        return "0x" + Long.toHexString(ip);
    }

    private void append(long ip, int size, int cls, long t) {
        if (n == path.length) {
            path = Arrays.copyOf(path, n * 2);
            steps = Arrays.copyOf(steps, n * 2);
        }
        path[n] = ip;
        steps[n] = Invocation.STEP_PLAIN;
        n++;
        prevInsideIp = ip;
        prevInsideSize = size;
        prevInsideCls = cls;
        lastTime = t;
    }

    /** The previous instruction inside led to {@code ip}, also inside: record how. */
    private void stepInside(long ip, long t) {
        boolean fallThrough = ip == prevInsideIp + prevInsideSize;
        byte step = switch (prevInsideCls) {
            case InsnClass.COND_JUMP -> fallThrough ? Invocation.STEP_NOT_TAKEN : Invocation.STEP_TAKEN;
            case InsnClass.CALL, InsnClass.CALL_INDIRECT -> {
                pushReturn(prevInsideIp + prevInsideSize);
                yield Invocation.STEP_CALL;
            }
            case InsnClass.RETURN, InsnClass.FAR_RETURN -> {
                retDepth = Math.max(0, retDepth - 1);
                yield Invocation.STEP_RETURN;
            }
            case InsnClass.JUMP, InsnClass.JUMP_INDIRECT, InsnClass.FAR_JUMP -> jumpStep(ip, t);
            default -> Invocation.STEP_PLAIN;
        };
        steps[n - 1] = step;
    }

    private byte jumpStep(long ip, long t) {
        long tt = t == -1 ? Long.MIN_VALUE + 1 : t;
        CodeMap.Program from = code.programAt(prevInsideIp, tt);
        CodeMap.Program to = code.programAt(ip, tt);
        if (to != null && from != to && (from == null || !from.fullName().equals(to.fullName()))) {
            if (!programs.contains(to.fullName())) {
                programs.add(to.fullName());
            }
            return Invocation.STEP_TAIL_CALL;
        }
        return Invocation.STEP_JUMP;
    }

    /** The flow left the followed code at {@code ip}. */
    private void leave(long ip, int size, int cls, long t) {
        switch (prevInsideCls) {
            case InsnClass.CALL, InsnClass.CALL_INDIRECT -> {
                steps[n - 1] = Invocation.STEP_CALL_OUT;
                callOut(prevInsideIp, ip, prevInsideIp + prevInsideSize, t);
                countCallee();
            }
            case InsnClass.RETURN, InsnClass.FAR_RETURN -> {
                steps[n - 1] = Invocation.STEP_RETURN;
                if (outFrames.isEmpty()) {
                    finish(Invocation.End.RETURN, lastTime);
                    state = State.OUTSIDE;
                } else {
                    state = State.CALLED_OUT; // a callback returned into the helper that called it
                    countCallee();
                }
            }
            default -> {
                steps[n - 1] = prevInsideCls == InsnClass.COND_JUMP ? (ip == prevInsideIp + prevInsideSize
                        ? Invocation.STEP_NOT_TAKEN : Invocation.STEP_TAKEN) : Invocation.STEP_JUMP;
                if (leftByJump(ip, t)) {
                    append(ip, size, cls, t);
                }
            }
        }
    }

    /**
     * The flow left by a jump to {@code ip} (-1: unknown, tracing stopped). Returns true if it went on in code this
     * invocation follows (a return through a thunk, a tail call), false if that is still open.
     */
    private boolean leftByJump(long ip, long t) {
        state = State.LEFT_BY_JUMP;
        exitTime = lastTime;
        outsideCount = 0;
        jumpTarget = ip;
        if (ip != -1 && continuesAt(ip, t)) {
            state = State.INSIDE;
            return true;
        }
        outsideCount = ip == -1 ? 0 : 1;
        return false;
    }

    /**
     * After a jump out, the flow is at {@code ip}: back at a followed call's return address (the jump was a return
     * through a return thunk, as retbleed/SRSO-mitigated kernels JIT every return), or in another program past its
     * entry (a tail call, direct or through a retpoline thunk). Marks the jump and returns true for either.
     */
    private boolean continuesAt(long ip, long t) {
        if (retDepth > 0 && ip == retStack[retDepth - 1]) {
            retDepth--;
            steps[n - 1] = Invocation.STEP_RETURN;
            return true;
        }
        CodeMap.Program p = code.programAt(ip, t == -1 ? Long.MIN_VALUE + 1 : t);
        if (p != null && p.functions().get(0).address() != ip && ip != expectReturn) {
            steps[n - 1] = Invocation.STEP_TAIL_CALL;
            if (!programs.contains(p.fullName())) {
                programs.add(p.fullName());
            }
            return true;
        }
        return false;
    }

    /**
     * The invocation ended with the jump it left by: a jump out of a BPF program that lands in no program is its
     * return through the return thunk (the JIT leaves a function no other way); elsewhere only a jump to a return
     * thunk is.
     */
    private void endAfterJump() {
        String target = jumpTarget == -1 ? null : code.describe(jumpTarget, exitTime);
        boolean thunk = target != null && target.contains("return_thunk");
        if (thunk || (target == null || !target.startsWith("__x86_indirect")) && startedInBpf) {
            steps[n - 1] = Invocation.STEP_RETURN;
        }
        finish(Invocation.End.RETURN, exitTime);
    }

    private void callOut(long from, long targetIp, long ret, long t) {
        String name = code.describe(targetIp, t);
        if (name == null) {
            name = "0x" + Long.toHexString(targetIp);
        }
        calls.add(new Invocation.Call(n - 1, from, targetIp, name, t, -1, 0));
        outFrames.add(new long[] {ret, calls.size() - 1});
        state = State.CALLED_OUT;
    }

    private void countCallee() {
        if (!outFrames.isEmpty()) {
            int i = (int) outFrames.get(outFrames.size() - 1)[1];
            Invocation.Call c = calls.get(i);
            calls.set(i, new Invocation.Call(c.index(), c.from(), c.target(), c.name(), c.enter(), c.exit(),
                    c.insns() + 1));
        }
    }

    private void finishCall(long[] frame, long t) {
        int i = (int) frame[1];
        Invocation.Call c = calls.get(i);
        // the callee's first instruction was counted when the flow left; it ran outside, so it is the callee's
        calls.set(i, new Invocation.Call(c.index(), c.from(), c.target(), c.name(), c.enter(), t, c.insns()));
    }

    private void finish(Invocation.End end, long exit) {
        done.accept(new Invocation(cpu, pid, tid, function, entryTime, exit, end, Arrays.copyOf(path, n),
                Arrays.copyOf(steps, n), List.copyOf(calls), List.copyOf(programs), written(exit)));
        n = 0;
        outputs.clear();
    }

    /**
     * The open invocation's samples whose IP is in no other BPF program. Not cut at the exit time: the trace's
     * times lag the instructions by up to a timing packet's period, so a sample passed inside the invocation may be
     * later than its last instruction's time.
     */
    private List<Invocation.Output> written(long exit) {
        if (outputs.isEmpty()) {
            return List.of();
        }
        List<Invocation.Output> out = new ArrayList<>(outputs.size());
        for (Invocation.Output o : outputs) {
            ptfence.sideband.BpfOutputs.Sample s = o.sample();
            CodeMap.Program p = code.programAt(s.ip(), s.time());
            if (p == null || programs.contains(p.fullName()) || inTarget(s.ip(), s.time())) {
                out.add(new Invocation.Output(Math.min(o.index(), n), s));
            }
        }
        return List.copyOf(out);
    }

    @Override
    public void block(long ip, int count, CodeCache cc, int off, int mode, boolean speculative) {
        throw new UnsupportedOperationException("--func follows single instructions (the instruction decoder)");
    }

    @Override
    public void event(Event ev) {
        long t = clock.getAsLong();
        if (placeClock != null && ev.type != Event.TIP && ev.type != Event.TNT && ev.type != Event.IGNORE) {
            long p = placeTime(placeClock.event()); // as the merged flow times its event lines
            if (p > nextSampleTime) {
                passSamples(p);
            }
        }
        switch (ev.type) {
            case Event.DISABLED, Event.ASYNC_DISABLED -> {
                if (state == State.INSIDE) {
                    // tracing stopped without a transfer out (filter edge by a jump, context switch)
                    if (ev.type == Event.DISABLED && isJump(prevInsideCls)) {
                        steps[n - 1] = Invocation.STEP_JUMP;
                        leftByJump(-1, t);
                        jumpTarget = ev.ipSuppressed ? -1 : ev.ip;
                        outsideCount = 1;
                    } else if (isCall(prevInsideCls) && ev.type == Event.DISABLED) {
                        steps[n - 1] = Invocation.STEP_CALL_OUT;
                        callOut(prevInsideIp, ev.ip, prevInsideIp + prevInsideSize, t);
                    } else if (isReturn(prevInsideCls) && ev.type == Event.DISABLED && outFrames.isEmpty()) {
                        steps[n - 1] = Invocation.STEP_RETURN;
                        finish(Invocation.End.RETURN, lastTime);
                        state = State.OUTSIDE;
                    } else {
                        finish(Invocation.End.DISABLED, t);
                        state = State.OUTSIDE;
                    }
                }
                havePrev = false;
            }
            case Event.ASYNC_BRANCH -> {
                if (state == State.INSIDE && followed(ev.from, t)) {
                    calls.add(new Invocation.Call(n - 1, ev.from, ev.ip, "interrupt", t, -1, 0));
                    outFrames.add(new long[] {ev.from, calls.size() - 1});
                    state = State.CALLED_OUT;
                }
                havePrev = false;
            }
            case Event.OVERFLOW -> {
                endWith(Invocation.End.ERROR, t);
                havePrev = false;
            }
            default -> {
            }
        }
    }

    private static boolean isJump(int cls) {
        return cls == InsnClass.JUMP || cls == InsnClass.JUMP_INDIRECT || cls == InsnClass.FAR_JUMP;
    }

    private static boolean isCall(int cls) {
        return cls == InsnClass.CALL || cls == InsnClass.CALL_INDIRECT;
    }

    private static boolean isReturn(int cls) {
        return cls == InsnClass.RETURN || cls == InsnClass.FAR_RETURN;
    }

    private void endWith(Invocation.End end, long t) {
        if (state == State.LEFT_BY_JUMP) {
            endAfterJump();
        } else if (state != State.OUTSIDE) {
            finish(end, t);
        }
        state = State.OUTSIDE;
    }

    @Override
    public void error(String kind, int code, long offset, long ip) {
        endWith(Invocation.End.ERROR, clock.getAsLong());
        havePrev = false;
    }

    @Override
    public void endOfTrace() {
        endWith(Invocation.End.TRACE_END, clock.getAsLong());
    }

    /** Call when this CPU's trace is done (also after errors ended the decode). */
    public void close() {
        endWith(Invocation.End.TRACE_END, lastTime);
    }
}

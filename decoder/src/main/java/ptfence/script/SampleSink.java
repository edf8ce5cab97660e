package ptfence.script;

import ptfence.calls.BranchFlags;
import ptfence.flow.Event;
import ptfence.flow.FlowDecoder;
import ptfence.flow.FlowSink;
import ptfence.flow.PtError;
import ptfence.flow.SampleClock;
import ptfence.flow.SampleCycles;
import ptfence.image.CodeSpace;
import ptfence.image.Image;
import ptfence.insn.CodeCache;
import ptfence.insn.InsnClass;
import ptfence.insn.X86Decoder;
import ptfence.sideband.Sideband;
import ptfence.sideband.TaskCursor;
import ptfence.symbol.Symbolizer;

/**
 * One CPU's flow as the samples perf's Intel PT decoder synthesizes from it (tools/perf/util/intel-pt.c), written as
 * perf script prints them: instructions (every N instructions, or every N ns or TSC ticks of trace time), branches
 * (all, calls, returns), power and PSB events, ptwrite, transactions, and errors.
 *
 * <p>Times follow perf's rule for a sample's timestamp: the trace time perf's decoder had when it last returned a
 * sample while between packets. An instruction run while the decoder waits for the packet its next branch needs gets
 * the time from before the timing packets that came ahead of that packet; the branch that takes the packet, and what
 * follows, the time after them. (ptfence.flow follows libipt, which gives those instructions the later time: one MTC
 * step apart, on a few instructions per thousand.) A CPU's times never go back, as perf keeps them per queue.
 *
 * <p>One file past 1k lines: which samples perf synthesizes, at which time, with which call chain and last branches, is
 * one state machine over the flow's callbacks, and each callback reads all of it. How a sample is written is
 * {@link SampleLines}; the clock rule is {@link SampleClock}.
 */
public final class SampleSink implements FlowSink {
    private static final int FLAG_BRANCH = BranchFlags.BRANCH;

    private final ScriptConfig cfg;
    /** --time is given (a field: asked at every sample) */
    private final boolean timeRanged;
    private final int cpu;
    private final ScriptMerge.Producer out;
    /** The merge orders this CPU's lines among other CPUs' by the states it is told ({@link #queueState}). */
    private final boolean statesOrderTies;
    private final CodeSpace space;
    private final TaskCursor task;
    private final SampleLines lines;
    private FlowDecoder decoder;
    private java.util.function.LongUnaryOperator toPerf = t -> t;

    private final SampleClock clock = new SampleClock();
    /** The time of the sample being written (TSC): the clock's, or a held branch's own. */
    private long queueTsc = -1;

    // the instruction whose sample (or branch) waits for where it went
    private boolean pending;
    private long pIp;
    private int pSize;
    private int pCls;
    private long pTsc;
    private boolean pSample;
    private long pPeriod;
    private final byte[] pBytes = new byte[16];
    private int pLen;
    private final ptfence.flow.PerfResync resync = new ptfence.flow.PerfResync();
    private boolean inPsb;
    private boolean psbOpen;
    private long psbOffset;
    private long psbIp;
    /**
     * A PSB+ read while the flow still walks to its FUP's IP: the instructions before that IP ran before the PSB (the
     * FUP says where the CPU stood), so they keep the earlier time, and the PSB event, its time and its CBR take
     * effect when the flow reaches that IP (perf returns them there too).
     */
    private boolean psbAhead;
    // code calling between a dozen files needs a dozen pieces (4 missed on most branches: a space lookup each)
    private static final int PIECES = 32;
    private final Image.Piece[] pieces = new Image.Piece[PIECES];
    private final long[] pieceFrom = new long[PIECES];
    private final long[] pieceTo = new long[PIECES];
    private int nextPiece;
    private int lastPiece;
    private long psbAheadTsc;
    private int psbAheadCbr = -1;
    /** The core:bus ratio (0 until a CBR packet) and the last one shown: perf starts with none shown, so it shows 0. */
    private int cbr;
    private int cbrSeen = -1;
    private boolean inTx;
    private long lastIp;
    private int lastCls;
    private int lastSize;
    /** When the last instruction was walked (its code is read as it was then). */
    private long lastTsc = -1;
    /**
     * Whether perf's walk returned a state at the last instruction (a branch, an instruction period's end), so that a
     * PSB+ whose FUP is the next IP finds the flow there and walks nothing (intel_pt_fup_in_psb).
     */
    private boolean walkStop;
    private int lastMode = ptfence.insn.ExecMode.BITS64;
    private final X86Decoder x86 = new X86Decoder();
    private final byte[] fetched = new byte[16];
    /** Where perf's decoder stands while tracing is off: the branch that left (-1: tracing is on). */
    private long offIp = -1;

    // instruction sampling
    private final boolean sampleInsns;
    /** perf's quick decode (itrace q): its states come from {@link #hop} too. */
    private final boolean quick;
    private final boolean wantBranches;
    private final int branchFilter;
    private final boolean holdForTarget;
    private long insnTotal;
    private long insnAtLastSample;
    private long periodCount;
    // tick periods (i...ns, i...t): perf's intel_pt_next_period
    private final boolean tickPeriod;
    private long periodMask;
    private long periodTicksPow2;
    private long lastMasked;
    private boolean continuous;
    private long ticksLeft = -1;
    private long timestampInsnCnt;
    private long lastDecoderTsc = Long.MIN_VALUE;

    private final byte[] code = new byte[16];
    /** Branch lines show or hand on the instruction's bytes (-F insn, --dlfilter, -s): read them for every branch. */
    private final boolean branchBytes;

    // perf's IPC (insn_cnt/cyc_cnt of instruction and branch samples): each state perf's decoder returns carries the
    // instructions walked so far and the cycle count it last took; a sample counts from its kind's last sample
    private final boolean countIpc;
    /** perf's thread stacks, for callindent (null without it); the trace run perf numbers them by. */
    private final CallDepth calls;
    /** perf's stacks are per thread: where threads move between CPUs, what crosses (null: each CPU's own). */
    private ThreadStacks.Cpu moved;
    private final boolean fixedThread;
    private long traceNr;
    /** --itrace=g: the call chain of the instruction sample being written (perf's thread_stack__sample). */
    private final long[] chain;
    private int chainLen;
    /** --itrace=l: the last branches of the instruction sample being written (perf's brstack), newest first. */
    private long[] brFrom;
    private long[] brTo;
    private int[] brFlags;
    private int brLen;
    /** The states' counts ({@link SampleCycles}: the rule the call views' sink shares). */
    private final SampleCycles cycles = new SampleCycles();
    /** Counts since the last branch sample, and since the last instruction sample. */
    private final SampleCycles.Since lastBr = new SampleCycles.Since();
    private final SampleCycles.Since lastIn = new SampleCycles.Since();
    /** The counts of the sample being written (0: none, as perf leaves them). */
    private long sampleInsnCnt;
    private long sampleCycCnt;

    /** perf's time filter inside its decoder loop (intel_pt_time_filter): none until {@link #tscRanges}. */
    private PerfTimeFilter filter = new PerfTimeFilter();

    public SampleSink(ScriptConfig cfg, int cpu, int fixedTid, Sideband sideband, Symbolizer symbols,
            CodeSpace space, ScriptMerge.Producer out) {
        this.cfg = cfg;
        this.timeRanged = !cfg.time.isEmpty();
        this.cpu = cpu;
        this.out = out;
        this.statesOrderTies = out.tiesWithCpus();
        this.space = space;
        this.task = new TaskCursor(sideband, cpu, fixedTid);
        this.fixedThread = fixedTid >= 0;
        this.lines = new SampleLines(cfg, symbols);
        ItraceOptions it = cfg.itrace;
        this.quick = it.quick > 0;
        this.sampleInsns = it.instructions && cfg.events.of(PerfEvents.Kind.INSTRUCTIONS) != null;
        this.wantBranches = it.branches && cfg.events.of(PerfEvents.Kind.BRANCHES) != null;
        this.branchFilter = it.branchFilter();
        FieldSet f = cfg.fields;
        this.holdForTarget = wantBranches || it.callchain || it.lastBranch
                || f.has(FieldSet.Type.HW, FieldSet.CALLINDENT)
                || sampleInsns && (f.flags() || f.has(FieldSet.Type.HW, FieldSet.ADDR));
        this.countIpc = cfg.fields.has(FieldSet.Type.HW, FieldSet.IPC) || cfg.dlfilter != null || cfg.script != null;
        this.branchBytes = f.has(FieldSet.Type.HW, FieldSet.INSN) || cfg.dlfilter != null || cfg.script != null;
        this.calls = cfg.fields.has(FieldSet.Type.HW, FieldSet.CALLINDENT) || it.callchain || it.lastBranch
                ? new CallDepth(it.lastBranch ? it.lastBranchSize : 0, it.callchain) : null;
        if (it.lastBranch) {
            brFrom = new long[it.lastBranchSize];
            brTo = new long[it.lastBranchSize];
            brFlags = new int[it.lastBranchSize];
        }
        this.chain = it.callchain ? new long[it.callchainSize + 1] : null; // perf: the size and one for the context
        this.tickPeriod = it.periodType != ItraceOptions.PeriodType.INSTRUCTIONS;
        if (tickPeriod) {
            long p = Math.max(1, cfg.periodTicks);
            periodTicksPow2 = Long.highestOneBit(p);
            periodMask = ~(periodTicksPow2 - 1);
        }
    }

    /**
     * The filter perf applies inside its decoder for --time: a sample before a range's start is not made and the
     * decoder fast-forwards to the last PSB before the start (the instructions before it are never counted); past
     * the last end it stops.
     */
    public void timeFilter(PerfTimeFilter f) {
        filter = f;
    }

    /**
     * A trace begin state: perf checks the ratio with it too (its IP, from_ip, is 0), before its branch sample; a
     * ratio still unseen here is one whose PSB state --time left out.
     */
    private void traceBegin(long ip) {
        if (stateOut) {
            return; // perf's filter made no sample of the state (its time may lie in an earlier range, after an error)
        }
        maybeCbr(0, ip);
        branch(0, ip, FLAG_BRANCH | BranchFlags.TRACE_BEGIN, 0, null, 0);
    }

    /**
     * perf runs its time filter on every state its decoder returns (an event, a trace begin), not only on
     * instructions: where code is missing there are no others, and past the last end the queue stops, its errors too.
     */
    private void stateTime() {
        stateOut = filter.active() && timeFiltered(queueTsc);
    }

    /** The last state {@link #stateTime} judged: perf's filter made no sample of it. */
    private boolean stateOut;

    /** Whether perf's decoder loop makes no sample at TSC {@code ts} (intel_pt_time_filter). */
    private boolean timeFiltered(long ts) {
        return timeFiltered(ts, true);
    }

    /** {@link #timeFiltered(long)} for an instruction that may be no state of perf's ({@code state} false). */
    private boolean timeFiltered(long ts, boolean state) {
        boolean out = filter.filtered(ts, decoder == null ? -1 : queuePos(decoder.offset()), decoderTsc(),
                decoder == null ? null : decoder.perfClock(), clock, state);
        noteJump();
        return out;
    }

    /** A conditional branch {@link #insn} judged turned out taken: a state of perf's after all. */
    private void takenState() {
        filter.stateSeen(decoder == null ? null : decoder.perfClock(), clock);
        noteJump();
    }

    /**
     * A later --time start's fast forward was taken at this state: perf's decoder walks nothing more before the PSB it
     * jumps to, so its instruction counts then are those it goes on from there ({@link #closePsb}).
     */
    private void noteJump() {
        if (filter.jumpStates() != jumpStates) {
            jumpStates = filter.jumpStates();
            insnAtJump = insnTotal;
            periodAtJump = periodCount;
        }
    }

    private long jumpStates;
    /** The instructions and the period's count at the state a later start's fast forward was taken (-1: none). */
    private long insnAtJump = -1;
    private long periodAtJump;

    /** Where offset {@code offset} of the current decoder lies in the CPU's queue (-1: not known). */
    private long queuePos(long offset) {
        PerfFastForward p = filter.psbs();
        return p == null ? -1 : p.queuePos(traceNr - 1, offset);
    }

    /**
     * The stacks of threads that move between CPUs ({@link ThreadStacks}), shared by every CPU's sink of the run (not
     * for a per-thread trace, whose one queue is its thread's).
     */
    public void threadStacks(ThreadStacks shared) {
        if (calls != null && !fixedThread) {
            moved = shared.cpu(cpu, calls, out);
        }
    }

    /** The decoder now reporting here (one per run of AUX buffers) and its TSC → perf time conversion. */
    public void decoder(FlowDecoder d, java.util.function.LongUnaryOperator tscToPerf) {
        this.decoder = d;
        this.toPerf = tscToPerf;
        traceNr++;
        clock.decoder(d);
        cycles.decoder(d);
    }

    // ------------------------------------------------------------------ time

    private long decoderTsc() {
        return decoder == null ? -1 : decoder.time();
    }

    /** A state perf returns after taking a packet (an event): its time is the decoder's now. */
    private void consume() {
        filter.newState();
        queueTsc = clock.event();
        stateTime();
        if (countIpc) {
            cycState(true);
        }
        queueState();
    }

    /**
     * perf's decoder returned a state now, sampled or not: its time goes to the merge, where it can end this CPU's run
     * of equal times among the others' ({@link QueueOrder}); a line at the same time says the same.
     */
    private void queueState() {
        if (statesOrderTies && !filter.stopped()) {
            out.state(perfTime());
        }
    }

    /** A conditional branch not sampled: a state only if taken, known at the next instruction. */
    private boolean condState;
    private long condStateIp;
    private long condStateTsc;

    /**
     * A state perf's decoder returns now: between packets ({@code sampleTime}: it takes a moved cycle count) or while
     * walking to one.
     */
    private void cycState(boolean sampleTime) {
        cycles.state(sampleTime, insnTotal);
    }


    private long perfTime() {
        return queueTsc < 0 || cfg.events.timeless ? -1 : toPerf.applyAsLong(queueTsc);
    }

    /** The time the thread is looked up at ({@link ptfence.sideband.Sideband#taskTime}). */
    private long taskTime() {
        return ptfence.sideband.Sideband.taskTime(perfTime(), cfg.events.timeless);
    }

    // ------------------------------------------------------------------ flow

    @Override
    public void insn(long ip, int size, int cls, int mode, boolean speculative) {
        if (condState) {
            condState = false;
            if (ip != condStateIp) {
                takenState();
            }
            if (ip != condStateIp && statesOrderTies && !filter.stopped() && condStateTsc >= 0
                    && !cfg.events.timeless) {
                out.state(toPerf.applyAsLong(condStateTsc)); // it was taken: perf's state at its time
            }
        }
        settleCbrAt(ip, false);
        if (psbAhead && pending) {
            resolve(ip, 0); // it ran before the PSB+ the flow still walks to: perf returned it before the PSB's state
        }
        closePsb(ip);
        lastIp = ip;
        lastCls = cls;
        lastMode = mode;
        lastSize = size;
        if (cycles.condOpen()) {
            cycles.closeCond(ip, pending && cycles.condAt(pIp));
        }
        if (pending) {
            resolve(ip, 0);
        }
        if (resync.beginHere()) {
            consume();
            traceBegin(ip);
        }
        queueTsc = clock.insn(cls);
        lastTsc = queueTsc;
        filter.newState();
        insnTotal++;
        boolean branch = InsnClass.isBranch(cls);
        boolean due = sampleInsns && due(branch);
        // a branch is perf's state (a conditional one only if taken: takenState), any other instruction only sampled
        boolean filtered = filter.active() ? timeFiltered(queueTsc, due || branch && cls != InsnClass.COND_JUMP)
                : timeSkipped();
        boolean sample = due && !filtered;
        walkStop = branch || due;
        if (cbr != cbrSeen) {
            // perf checks the ratio with every state it returns: a sampled instruction, a branch once it knows where
            // it went (settleCbrAt), no other instruction
            if (sample && !(branch && holdForTarget)) {
                maybeCbr(ip); // (where its line shows no target nor flags, the branch's state is as good)
            } else if (branch) {
                cbrAtSample = sample;
                cbrAt = true;
                cbrAtIp = ip;
                cbrAtSize = size;
                cbrAtCls = cls;
                cbrAtTsc = queueTsc;
            }
        }
        if (countIpc) {
            cycles.insn(ip, size, cls, sample, insnTotal);
        }
        if (!sample && !(branch && (wantBranches || calls != null))) {
            if (branch) {
                if (cls == InsnClass.COND_JUMP) {
                    condState = true;
                    condStateIp = ip + size;
                    condStateTsc = queueTsc;
                } else {
                    queueState();
                }
            }
            return;
        }
        // a branch needs its bytes for its flags where sampled, else only for its line's insn field, a filter, or its
        // far kind; an instruction that is not a branch only for the insn field or a filter (i1i read every one)
        int len = sample && branch || branchBytes || cls == InsnClass.FAR_CALL || cls == InsnClass.FAR_RETURN
                ? read(ip, queueTsc >= 0 && space.timed() ? queueTsc : CodeSpace.ANY_TIME, Math.min(size, code.length))
                : 0;
        if (branch && holdForTarget) {
            hold(ip, size, cls, queueTsc, sample, sample ? insnTotal - insnAtLastSample : 0, len);
            cycles.hold();
            System.arraycopy(code, 0, pBytes, 0, len);
            if (sample) {
                insnAtLastSample = insnTotal;
            }
            return;
        }
        if (sample) {
            long period = insnTotal - insnAtLastSample;
            insnAtLastSample = insnTotal;
            int flags = branch ? insnFlags(cls, code, len) : 0;
            instruction(ip, 0, flags, size, code, len, period);
        }
    }

    /**
     * The instruction's bytes: from one of the last few pieces of code while it answers for this address and time
     * (the flow decoder's rule for its own piece; code calling into another file and back needs more than one), else
     * from the space (a lookup and a new piece each time).
     */
    private int read(long ip, long time, int len) {
        int i = lastPiece;
        if (!pieceHolds(i, ip, time)) {
            i = 0;
            while (i < PIECES && !pieceHolds(i, ip, time)) {
                i++;
            }
        }
        if (i == PIECES) {
            Image.Piece p = space.find(ip, time);
            if (p == null) {
                return 0;
            }
            i = nextPiece;
            nextPiece = (nextPiece + 1) % PIECES;
            pieces[i] = p;
            pieceFrom[i] = p.validFrom();
            pieceTo[i] = p.validTo();
            if (space.timed() && time == CodeSpace.ANY_TIME) {
                pieceFrom[i] = CodeSpace.ANY_TIME; // chosen without a time: ask again once the trace has one
                pieceTo[i] = CodeSpace.ANY_TIME + 1;
            }
        }
        lastPiece = i;
        Image.Piece p = pieces[i];
        if (Long.compareUnsigned(ip + len - p.start, p.end - p.start) > 0) {
            return space.read(ip, time, code, 0, len); // runs into the next piece
        }
        System.arraycopy(p.section.bytes(), (int) (ip - p.section.address()), code, 0, len);
        return len;
    }

    private boolean pieceHolds(int i, long ip, long time) {
        Image.Piece p = pieces[i];
        return p != null && Long.compareUnsigned(ip - p.start, p.end - p.start) < 0 && time >= pieceFrom[i]
                && time < pieceTo[i];
    }

    /** The held branch went to {@code to} (0: not traced on), ending tracing when {@code extra} says so. */
    private void resolve(long to, int extra) {
        if (cycles.condOpen()) {
            cycles.closeCond(to, pending && cycles.condAt(pIp));
        }
        pending = false;
        boolean taken = pCls != InsnClass.COND_JUMP || to != pIp + pSize;
        if (taken) {
            takenState();
        }
        int flags = insnFlags(pCls, pBytes, pLen) | extra;
        long saved = clock.time();
        queueTsc = pTsc;
        settleCbrAt(to, (extra & BranchFlags.TRACE_END) != 0);
        cycles.held();
        if (pSample) {
            instruction(pIp, taken ? to : 0, flags, pSize, pBytes, pLen, pPeriod);
        }
        if ((wantBranches || calls != null) && (taken || (extra & BranchFlags.TRACE_END) != 0)) {
            if ((extra & BranchFlags.TRACE_END) != 0) {
                maybeCbr(pIp, 0, flags); // the trace end's state: perf checks the ratio there too, with its flags
            }
            branch(pIp, to, flags, pSize, pBytes, pLen);
        }
        queueTsc = saved;
    }

    /**
     * Whether the instruction just counted is sampled (perf's period in instructions or in trace time). perf walks to
     * the next branch at most, so it counts the ticks to the next sample again after each branch.
     */
    private boolean due(boolean branch) {
        if (!tickPeriod) {
            if (++periodCount >= cfg.itrace.period) {
                periodCount = 0;
                return true;
            }
            return false;
        }
        long dt = decoderTsc();
        if (dt != lastDecoderTsc) {
            lastDecoderTsc = dt;
            timestampInsnCnt = 0;
            ticksLeft = -1;
        }
        if (ticksLeft < 0) {
            ticksLeft = nextPeriod(dt);
        }
        timestampInsnCnt++;
        if (--ticksLeft > 0) {
            if (branch) {
                ticksLeft = -1;
            }
            return false;
        }
        long ts = dt + timestampInsnCnt;
        long masked = ts & periodMask;
        if (masked > lastMasked) {
            lastMasked = masked;
        } else {
            lastMasked += periodTicksPow2;
        }
        ticksLeft = -1;
        return true;
    }

    /** perf's intel_pt_next_period: instructions (one tick each) until the next sample. */
    private long nextPeriod(long dt) {
        long ts = Math.max(0, dt) + timestampInsnCnt;
        long masked = ts & periodMask;
        if (continuous) {
            if (masked > lastMasked) {
                return 1;
            }
        } else {
            ts += 1;
            masked = ts & periodMask;
            if (masked > lastMasked) {
                lastMasked = masked;
                continuous = true;
            }
        }
        if (masked < lastMasked) {
            return periodTicksPow2;
        }
        return periodTicksPow2 - (ts - masked);
    }

    @Override
    public void block(long ip, int count, CodeCache cc, int off, int mode, boolean speculative) {
        throw new UnsupportedOperationException("perf samples use the instruction decoder");
    }

    /**
     * Without instruction samples, IPC counts or time ranges an instruction that is no branch only counts (once the
     * first of a run settled what waited for it), so the decoder may hand over straight runs whole.
     */
    @Override
    public boolean branchesOnly() {
        return !sampleInsns && !countIpc && cfg.time.isEmpty();
    }

    @Override
    public void straight(long ip, int count, CodeCache cc, int off, int mode, boolean speculative) {
        if (!psbAhead) { // (only an event puts a PSB+ ahead) no branch: its length and class matter to nothing here
            insn(ip, 0, InsnClass.OTHER, mode, speculative);
            insnTotal += count - 1;
            return;
        }
        insnEach(ip, count, cc, off, mode, speculative, x86); // a PSB+ waits for its IP: it may be among these
    }

    /**
     * Branch lines alone (no bytes to read for them: no -F insn, dlfilter or script): the decoder may hand over paths
     * (a TNT packet's, the code up to a TIP) whole, with every branch that moved the flow ({@link #plainPath}).
     */
    @Override
    public boolean movingPaths() {
        return branchesOnly() && !branchBytes && (wantBranches || calls != null);
    }

    /**
     * A path, a TNT packet's or the code up to a TIP (see {@link FlowSink#plainPath}): what {@link #insn} would do for
     * each of its instructions, at once. Its first settles the branch held before it, each branch in it that moved the
     * flow ({@link ptfence.insn.TntPaths#moves}: a taken conditional branch, a direct jump or call, a compressed
     * return) is settled as {@link #insn} would at the next instruction, and its last (the conditional branch or
     * return that took the packet's last bit, the indirect jump the TIP is for, a direct jump out of the content)
     * waits for where it went. Times ({@link SampleClock}): a move ahead of the packet's first conditional branch or
     * return (every move up to a TIP) has the time from before the packet, the rest the packet's. Not taken where
     * something waits for an instruction: a PSB+'s IP, a trace begin after a loss, a ratio not yet shown.
     */
    @Override
    public boolean plainPath(long base, CodeCache cc, ptfence.insn.TntPaths t, long first) {
        if (psbAhead || resync.resuming() || !movingPaths()) {
            return false;
        }
        closePsb(first); // (as insn would first: the walk after a refusal finds it closed)
        if (cbr != cbrSeen) {
            return false; // its line takes the first instruction's time, which the walk gives
        }
        if (pending) {
            resolve(first, 0);
        }
        long ahead = clock.insn(InsnClass.OTHER);
        long lastInsn = t.lastInsn;
        int cls = CodeCache.clsOf(lastInsn);
        long tnt = clock.insn(cls); // (a path's conditional branches and returns all take the one packet's time)
        long[] mv = t.moves;
        for (int i = 0; i < 3 * t.moveCount; i += 3) {
            long w = mv[i];
            long packed = mv[i + 1];
            long to = mv[i + 2];
            long at = base + (int) w;
            queueTsc = (to & 1L << 32) != 0 ? ahead : tnt;
            branch(at, base + (int) to, insnFlags(CodeCache.clsOf(packed), code, 0), CodeCache.lengthOf(packed), code,
                    0);
        }
        queueTsc = tnt;
        insnTotal += t.insns;
        lastIp = base + t.last;
        lastCls = cls;
        lastSize = CodeCache.lengthOf(lastInsn);
        lastTsc = tnt;
        walkStop = true; // (its last instruction is a branch)
        if (decoder != null) {
            lastMode = decoder.mode();
        }
        hold(lastIp, lastSize, cls, tnt, false, 0, 0);
        return true;
    }

    /**
     * Holds the branch at {@code ip} until the flow shows where it went: its size, class, sample time, whether it is
     * an instruction sample (of {@code period}), and how many of its bytes {@link #pBytes} keeps.
     */
    private void hold(long ip, int size, int cls, long tsc, boolean sample, long period, int len) {
        pending = true;
        pIp = ip;
        pSize = size;
        pCls = cls;
        pTsc = tsc;
        pSample = sample;
        pPeriod = period;
        pLen = len;
    }

    @Override
    public void event(Event ev) {
        if (ev.statusUpdate) {
            long at = decoder == null ? 0 : decoder.psbOffset();
            if (inPsb && at != psbOffset) {
                closePsb(0); // the next PSB+ right after the last one: each is an event
            }
            if (!inPsb) {
                if (pending && offIp == -1 && decoder != null) {
                    // the held branch took its packet before the PSB+ (a TIP whose target is where the flow stands):
                    // perf returned it then, before the PSB's state
                    resolve(decoder.ip(), 0);
                }
                inPsb = true;
                psbOpen = true;
                psbOffset = at;
                filter.restart(queuePos(at), decoder, clock);
                // a PSB+ perf's scan for an IP met: its sync_ip then sets from_ip to 0, the PSB event's IP
                psbIp = decoder == null || at == scanPsb ? 0 : decoder.psbIp();
                psbAddr = decoder != null && at == scanPsb ? decoder.psbIp() : 0; // its to_ip stays the FUP's
                scanPsb = -1;
                psbAhead = psbIp != 0 && offIp == -1 && decoder != null && psbIp != decoder.ip();
            }
            if (psbAhead) {
                psbAheadTsc = decoder.psbTime();
                if (ev.type == Event.CBR) {
                    psbAheadCbr = ev.ratio;
                }
                return;
            }
            filter.newState();
            queueTsc = clock.eventAt(decoder == null ? -1 : decoder.psbTime()); // perf's PSB event: its TSC's time
            stateTime();
            if (countIpc) {
                cycState(true);
            }
            if (ev.type == Event.CBR) {
                cbr = ev.ratio;
            }
            return;
        }
        closePsb(0);
        switch (ev.type) {
            case Event.ENABLED -> {
                offIp = -1;
                pending = false;
                resync.inStep();
                consume();
                traceBegin(ev.ip);
            }
            case Event.DISABLED -> {
                continuous = false;
                offIp = ev.ipSuppressed ? lastIp : ev.ip;
                if (pending) {
                    consume();
                    pTsc = queueTsc;
                    resolve(ev.ipSuppressed ? 0 : ev.ip, BranchFlags.TRACE_END);
                } else {
                    consume();
                    settleCbrAt(0, true);
                    // a trace end is a state perf checks the ratio with, before its branch
                    maybeCbr(decoderIp(), 0, FLAG_BRANCH | BranchFlags.ASYNC | BranchFlags.TRACE_END);
                    branch(decoderIp(), 0, FLAG_BRANCH | BranchFlags.ASYNC | BranchFlags.TRACE_END, 0, null, 0);
                }
            }
            case Event.ASYNC_DISABLED -> {
                continuous = false;
                offIp = ev.from;
                if (pending) {
                    resolve(ev.from, 0);
                }
                settleCbrAt(ev.from, false);
                consume();
                lastSize = 0; // an asynchronous state keeps no instruction (perf's insn_len 0)
                maybeCbr(ev.from, 0, FLAG_BRANCH | BranchFlags.ASYNC | BranchFlags.TRACE_END);
                branch(ev.from, 0, FLAG_BRANCH | BranchFlags.ASYNC | BranchFlags.TRACE_END, 0, null, 0);
            }
            case Event.ASYNC_BRANCH -> {
                if (pending) {
                    resolve(ev.from, 0);
                }
                settleCbrAt(ev.from, false);
                resync.inStep();
                consume();
                lastSize = 0; // an asynchronous state keeps no instruction (perf's insn_len 0)
                maybeCbr(ev.from, ev.ip, FLAG_BRANCH | BranchFlags.CALL | BranchFlags.ASYNC | BranchFlags.INTERRUPT);
                branch(ev.from, ev.ip, FLAG_BRANCH | BranchFlags.CALL | BranchFlags.ASYNC | BranchFlags.INTERRUPT, 0,
                        null, 0);
            }
            case Event.OVERFLOW -> {
                if (pending) {
                    // the branch's outcome was known before the overflow: perf returned it (its sample, its branch)
                    resolve(decoderIp(), 0);
                }
                settleCbrAt(decoderIp(), false);
                continuous = false;
                timestampInsnCnt = 0; // perf's intel_pt_overflow: the tick period counts from the last time again
                ticksLeft = -1;
                lastSize = 0; // perf's state after an overflow keeps no instruction
                consume(); // the error's time is perf's at the OVF: after the timing packets before it (an MTC)
                if (!cfg.itrace.suppressesOverflow()) {
                    error(7, decoderIp(), 0);
                }
                if (ev.ipSuppressed) {
                    resync.lost(); // resolved with tracing off: the trace begin is the enable's
                } else {
                    // perf's scan after the overflow stops at its FUP and returns the trace begin there, at the time
                    // it had then: before any packet after the FUP (a CYC's time; a disable right after it)
                    offIp = -1;
                    resync.inStep();
                    traceBegin(ev.ip);
                }
            }
            case Event.CBR -> {
                // perf's decoder returns a state for a CBR packet only when the ratio changes: one giving the same
                // ratio is no state, so a ratio its time filter left unseen waits for the next state
                boolean change = ev.ratio != cbr;
                cbr = ev.ratio;
                consume();
                if (change) {
                    maybeCbr(decoderIp());
                }
            }
            case Event.PTWRITE -> {
                consume();
                if (cfg.events.of(PerfEvents.Kind.PTWRITE) != null) {
                    lines.ptwrite(this, ev.ipSuppressed ? 0 : ev.ip, ev.payload, !ev.ipSuppressed);
                }
            }
            case Event.MWAIT, Event.PWRE, Event.PWRX, Event.EXSTOP -> {
                consume();
                PerfEvents.Kind k = switch (ev.type) {
                    case Event.MWAIT -> PerfEvents.Kind.MWAIT;
                    case Event.PWRE -> PerfEvents.Kind.PWRE;
                    case Event.PWRX -> PerfEvents.Kind.PWRX;
                    default -> PerfEvents.Kind.EXSTOP;
                };
                if (cfg.events.of(k) != null) {
                    lines.power(this, k, ev);
                }
            }
            case Event.TSX -> {
                consume();
                if (quick) {
                    break; // its samples are its FUP's state's (hop); only that state is in a transaction
                }
                if (ev.aborted && pending) {
                    resolve(ev.ip, 0);
                }
                inTx = ev.speculative;
                if (cfg.events.of(PerfEvents.Kind.TRANSACTIONS) != null) {
                    int flags = FLAG_BRANCH | (ev.aborted ? BranchFlags.TX_ABORT : 0) | (ev.speculative
                            ? BranchFlags.IN_TX : 0);
                    lines.transaction(this, ev.ip, flags);
                }
                if (ev.aborted && wantBranches) {
                    branch(ev.ip, 0, FLAG_BRANCH | BranchFlags.TX_ABORT, 0, null, 0);
                }
            }
            default -> { }
        }
    }

    /**
     * perf's quick decode (itrace q): its states from IP packets alone. An instruction sample of such a state has a
     * period of 1 (perf counts no instructions there) and the state's flags: none at a TIP (no instruction was decoded)
     * or an asynchronous branch's at its FUP.
     */
    @Override
    public void hop(int kind, long from, long to) {
        switch (kind) {
            case HOP_PSB -> {
                closePsb(0);
                if (from != 0 && sampleInsns) {
                    instruction(from, 0, 0, 0, null, 0, 1); // the PSB's state is an instruction at its FUP too
                }
            }
            case HOP_BEGIN -> {
                offIp = -1;
                consume();
                traceBegin(from);
                if (sampleInsns) {
                    instruction(from, 0, 0, 0, null, 0, 1);
                }
            }
            case HOP_END -> {
                consume();
                offIp = from;
                // perf's flags of a state from 0: a trace begin, and this one ends the trace too
                branch(0, from, FLAG_BRANCH | BranchFlags.TRACE_BEGIN | BranchFlags.TRACE_END, 0, null, 0);
            }
            case HOP_RESAMPLE -> {
                if (sampleInsns) {
                    instruction(from, 0, 0, 0, null, 0, 1);
                }
            }
            case HOP_TX -> {
                consume();
                inTx = to != 0;
                if (sampleInsns) {
                    instruction(from, 0, 0, 0, null, 0, 1);
                }
                if (cfg.events.of(PerfEvents.Kind.TRANSACTIONS) != null && keep(from)) {
                    lines.transaction(this, from, inTx ? BranchFlags.IN_TX : 0); // the state's flags: no branch
                }
                inTx = false;
            }
            case HOP_ABORT -> {
                consume();
                inTx = false;
                int flags = FLAG_BRANCH | BranchFlags.TX_ABORT | (to == 0 ? BranchFlags.TRACE_END : 0);
                if (sampleInsns) {
                    instruction(from, to, flags, 0, null, 0, 1);
                }
                if (cfg.events.of(PerfEvents.Kind.TRANSACTIONS) != null && keep(from)) {
                    lines.transaction(this, from, to, flags);
                }
                if (wantBranches) {
                    branch(from, to, flags, 0, null, 0);
                }
            }
            case HOP_ASYNC -> {
                consume();
                if (sampleInsns) {
                    int flags = to == 0 ? FLAG_BRANCH | BranchFlags.ASYNC | BranchFlags.TRACE_END
                            : FLAG_BRANCH | BranchFlags.CALL | BranchFlags.ASYNC | BranchFlags.INTERRUPT;
                    instruction(from, to, flags, 0, null, 0, 1);
                }
            }
            default -> {
                consume();
                if (sampleInsns) {
                    instruction(from, 0, 0, 0, null, 0, 1);
                }
            }
        }
    }

    /** The end of a PSB+: perf's PSB event (with the FUP's IP, if tracing was on), then a changed CBR. */
    private void closePsb(long ip) {
        if (psbAhead) {
            if (ip != 0 && ip != psbIp) {
                return; // an instruction before the PSB's IP
            }
            psbAhead = false;
            if (!walkStop) {
                // perf walked on up to the PSB+'s FUP (intel_pt_fup_in_psb): a walk that ends at the IP it was given
                // leaves its state no instruction (insn_len 0), so perf script fetches the one at the PSB's IP
                lastSize = 0;
            }
            queueTsc = clock.eventAt(psbAheadTsc);
            if (psbAheadCbr >= 0) {
                cbr = psbAheadCbr;
                psbAheadCbr = -1;
            }
        }
        inPsb = false;
        if (!psbOpen) {
            return;
        }
        psbOpen = false;
        queueState(); // perf's decoder returns the PSB's state, sampled or not
        if (filter.restartsAt(queuePos(psbOffset), decoderTsc())) {
            // perf's fast forward starts decoding at this PSB: at the first start before it walked anything, at a
            // later one its counts go on from its state at the jump (an instruction sample's period is the
            // instructions walked since the last sample: tot_insn_cnt; the next one is due by period_insn_cnt)
            if (insnAtJump >= 0) {
                insnAtLastSample += insnTotal - insnAtJump;
                periodCount = periodAtJump;
                insnAtJump = -1;
            } else {
                insnAtLastSample = insnTotal;
            }
        }
        if (filter.stopped() || filter.active() && timeFiltered(queueTsc)) {
            return; // perf's time filter: no sample of this state, so its CBR is not seen either
        }
        if (cfg.events.of(PerfEvents.Kind.PSB) != null && !timeSkipped()) {
            lines.psb(this, psbIp, psbAddr, psbOffset);
        }
        maybeCbr(psbIp, psbAddr); // the PSB's state: the cbr sample takes its IP and address as the psb one does
    }

    private void maybeCbr(long ip) {
        maybeCbr(ip, 0);
    }

    /**
     * A state perf checks the ratio with, from {@code ip} to {@code to}: perf's cbr sample takes the state's from_ip
     * as its IP and its to_ip as its address (a trace begin's target: shown where --time left the ratio unseen).
     */
    private void maybeCbr(long ip, long to) {
        maybeCbr(ip, to, -1);
    }

    /**
     * As {@link #maybeCbr(long, long)} at an asynchronous branch's state: perf's cbr sample takes that state's flags
     * ({@code flags}: an interrupt's, an asynchronous trace end's), not the last instruction's kind.
     */
    private void maybeCbr(long ip, long to, int flags) {
        if (cbr != cbrSeen) {
            if (timeSkipped()) {
                if (filter.setUpState()) {
                    cbrSeen = cbr; // sampled by perf's queue set-up, dropped by perf script's --time: seen, unprinted
                }
                return; // perf's time filter made no sample of this state: the ratio stays unseen
            }
            cbrSeen = cbr;
            if (cfg.events.of(PerfEvents.Kind.CBR) != null) {
                stateFlags = flags;
                lines.cbr(this, ip, to, cbr);
                stateFlags = -1;
            }
        }
    }

    /** The flags of the asynchronous state a cbr sample is made at now (-1: none, the last instruction's). */
    private int stateFlags = -1;

    /** A ratio change waits on the branch at {@code cbrAtIp} (its size, class, time): where it went. */
    private boolean cbrAt;
    private long cbrAtIp;
    private int cbrAtSize;
    private int cbrAtCls;
    private long cbrAtTsc;
    /** Whether that branch is an instruction sample: a state even where not taken. */
    private boolean cbrAtSample;

    /**
     * The branch a ratio change waits on went to {@code to} ({@code end}: tracing stopped there). perf's decoder
     * returns a branch's state once it has taken the branch's packet (a not-taken conditional one is no state unless
     * an instruction sample), and checks the ratio there: the cbr sample has the branch's IP, its target as address and its flags (a trace end's
     * included). Checking at the instruction showed a ratio --time left unseen at a not-taken conditional branch
     * (its IP) and without a trace end's flags.
     */
    private void settleCbrAt(long to, boolean end) {
        if (!cbrAt) {
            return;
        }
        cbrAt = false;
        boolean notTaken = !end && cbrAtCls == InsnClass.COND_JUMP && to == cbrAtIp + cbrAtSize;
        if (cbr == cbrSeen || notTaken && !cbrAtSample) {
            return;
        }
        long q = queueTsc;
        queueTsc = cbrAtTsc;
        maybeCbr(cbrAtIp, end || notTaken ? 0 : to, end ? lastFlags(cbrAtIp) | BranchFlags.TRACE_END : -1);
        queueTsc = q;
    }

    /** Where the flow stands (perf's decoder->ip): the next instruction. */
    private long decoderIp() {
        return offIp != -1 ? offIp : decoder == null ? 0 : decoder.ip();
    }

    @Override
    public void error(String kind, int codeNo, long offset, long ip) {
        cbrAt = false;
        closePsb(0); // perf returned the PSB+'s event before the walk after it failed, with its own time
        pending = false;
        continuous = false;
        int perf = switch (codeNo) {
            case PtError.NOMAP, PtError.BAD_INSN -> 5;
            case PtError.BAD_PACKET, PtError.BAD_OPC -> 3;
            case PtError.OVERFLOW -> 7;
            case PtError.BAD_QUERY, PtError.BAD_RETCOMP, PtError.RETSTACK_EMPTY, PtError.NOIP,
                    PtError.IP_SUPPRESSED, PtError.BAD_CONTEXT, PtError.NO_ENABLE, PtError.BAD_STATUS_UPDATE -> 6;
            default -> 9;
        };
        if (resync.beginBeforeError(codeNo)) {
            consume();
            traceBegin(ip);
        }
        queueTsc = clock.error(); // perf's decoder takes the time of the error, its queue does not
        if (countIpc) {
            cycles.error(perf == 5);
        }
        // missing code in a file: whether perf reports it depends on the file's data status, which the merge keeps in
        // time order over every CPU (DsoData); the line carries the file as its gate
        int gate = 0;
        if (codeNo == PtError.NOMAP) {
            // perf looks the IP up in the maps its session has delivered, not at the error's time (early after a
            // fast forward within the buffer: nothing mapped yet)
            // in the thread the line names (the task as of the last sample may be another: a switch between)
            long d = clock.delivered();
            task.at(taskTime());
            String dso = lines.dsoOf(ip, d < 0 || cfg.events.timeless ? -1 : toPerf.applyAsLong(d), task.pid());
            gate = dso == null ? 0 : cfg.dsoData.id(dso);
        }
        if ((perf != 7 || !cfg.itrace.suppressesOverflow()) && !filter.skipped(queuePos(offset))) {
            error(perf, ip, gate);
        }
        resync.lost();
    }

    /** The PSB+ (its offset) where perf's scan after an error stopped (-1: none). */
    private long scanPsb = -1;
    /** The address of the PSB event now open: 0, or where perf's scan met the PSB+, the IP of its FUP. */
    private long psbAddr;

    @Override
    public void resumedAtPsb() {
        resync.inStep();
        scanPsb = decoder == null ? -1 : decoder.psbOffset();
    }

    @Override
    public void noCode(long ip, long tsc) {
        if (resync.beginHere()) {
            closePsb(ip);
            if (pending) {
                resolve(ip, 0);
            }
            queueTsc = tsc >= 0 ? clock.eventAt(tsc) : clock.event();
            stateTime();
            if (countIpc) {
                if (tsc >= 0) {
                    // the full IP's state: its time and its cycle count are the IP packet's, not the failing walk's
                    cycles.stateAtIp(insnTotal);
                } else {
                    cycState(true);
                }
            }
            traceBegin(ip);
        }
    }

    private void error(int code, long ip, int gate) {
        if (!cfg.itrace.errors || filter.stopped()) {
            if (gate != 0) {
                // no line, but perf's walk still read the file: an empty line marks it at its time
                out.line();
                out.gate(gate);
                out.commit(time(), false);
            }
            return;
        }
        task.at(taskTime());
        out.gate(gate);
        lines.error(this, code, ip);
    }

    @Override
    public void endOfTrace() {
        cbrAt = false;
        closePsb(0);
        if (pending) {
            resolve(0, 0);
        }
    }

    // ------------------------------------------------------------------ samples

    private void instruction(long ip, long to, int flags, int size, byte[] bytes, int len, long period) {
        ipcCounts(lastIn);
        if (!keep(ip)) {
            return;
        }
        stacks(ip);
        lines.instruction(this, ip, to, flags | (inTx ? BranchFlags.IN_TX : 0), size, bytes, len, period);
    }

    /**
     * perf's counts of the sample being made from the state now: where the state has a cycle count other than the last
     * sample's of this kind ({@code last}: instructions, cycles), what ran since; else none.
     */
    private void ipcCounts(SampleCycles.Since last) {
        last.sample(countIpc && cycles.ipc(), cycles.insns(), cycles.cycles());
        sampleInsnCnt = last.insns();
        sampleCycCnt = last.cycles();
    }

    private void branch(long from, long to, int flags, int size, byte[] bytes, int len) {
        queueState(); // a branch's state, whether or not its line is made
        int f = flags | (inTx ? BranchFlags.IN_TX : 0);
        if (calls != null) {
            long t = perfTime();
            task.at(ptfence.sideband.Sideband.taskTime(t, cfg.events.timeless));
            int tid = task.tid();
            CallDepth.Stack s = calls.of(tid);
            if (moved != null) {
                moved.branch(s, tid, t, task.runFrom(), task.runTo(), traceNr);
            }
            calls.branch(s, t, traceNr, f, from, to, (f & BranchFlags.ASYNC) != 0 ? 0 : size);
        }
        if (!wantBranches) {
            return;
        }
        if (branchFilter != 0 && (branchFilter & f) == 0) {
            return;
        }
        ipcCounts(lastBr);
        if (!keep(from)) {
            return;
        }
        if (RecordReads.readsBranchCode(from, size)) {
            // a read of that file's data, kept in time order by the merge (DsoData) as a recorded sample's is
            String dso = lines.dsoOf(from, perfTime(), task.pid());
            if (dso != null) {
                out.gate(-cfg.dsoData.id(dso));
            }
        }
        lines.branch(this, from, to, f, size, bytes, len);
    }

    /**
     * Whether --time leaves out a sample now. perf filters time in its decoder's loop, before it synthesizes a sample
     * (so a left-out instruction sample counts into the next one's period); its other filters come after.
     */
    private boolean timeSkipped() {
        long t;
        return timeRanged && (t = perfTime()) >= 0 && cfg.time.skip(t);
    }

    /** The thread, time, CPU and symbol filters of a sample at {@code ip}; moves the task to the sample's time. */
    private boolean keep(long ip) {
        if (filter.stopped()) {
            return false;
        }
        long t = perfTime();
        if (timeRanged && t >= 0 && cfg.time.skip(t)) {
            return false;
        }
        return resolvedKept(ip);
    }

    /** perf's filters of any sample at {@code ip} made now (machine__resolve's): thread, then file and symbol. */
    boolean resolvedKept(long ip) {
        task.at(taskTime());
        return (!cfg.filters.byThread() || cfg.filters.threadKept(task.pid(), task.tid(), comm()))
                && lines.symbolKept(ip, perfTime(), task.pid());
    }

    /** perf's flags on an event's sample: those of the last instruction the decoder walked (0 without an IP). */
    int lastFlags(long ip) {
        if (stateFlags >= 0 && ip != 0) {
            return stateFlags;
        }
        if (ip == 0 || !InsnClass.isBranch(lastCls)) {
            return 0;
        }
        int n = space.read(lastIp, queueTsc >= 0 && space.timed() ? queueTsc : CodeSpace.ANY_TIME, fetched, 0,
                fetched.length);
        return insnFlags(lastCls, fetched, n);
    }

    /**
     * The instruction an event's sample carries: the one perf's decoder walked last, or (before any) the one at
     * {@code ip}, which perf script reads from the file: its bytes
     * into {@link #fetchedBytes()}, returning its length (0 when there is no code there).
     */
    int fetch(long ip) {
        if (lastSize > 0) { // perf's state keeps the instruction its decoder walked last, as the code was then
            int n = space.read(lastIp, lastTsc >= 0 && space.timed() ? lastTsc : CodeSpace.ANY_TIME, fetched, 0,
                    Math.min(lastSize, fetched.length));
            return n < lastSize ? 0 : lastSize;
        }
        if (ip == 0) {
            return 0;
        }
        int n = space.read(ip, queueTsc >= 0 && space.timed() ? queueTsc : CodeSpace.ANY_TIME, fetched, 0,
                fetched.length);
        if (n <= 0 || x86.decode(fetched, 0, n, lastMode) == 0) {
            return 0;
        }
        return x86.length;
    }

    /**
     * -F brstackinsn: up to {@code len} bytes of code from {@code addr} on, as perf reads a block (the code mapped at
     * the sample's time); how many there are.
     */
    int code(long addr, byte[] into, int len) {
        return space.read(addr, queueTsc >= 0 && space.timed() ? queueTsc : CodeSpace.ANY_TIME, into, 0, len);
    }

    /** The execution mode of the code walked last (perf: the dso's, 64-bit for x86-64 files and BPF programs). */
    int codeMode() {
        return lastMode == ptfence.insn.ExecMode.UNKNOWN ? ptfence.insn.ExecMode.BITS64 : lastMode;
    }

    /**
     * perf's intel_pt_prep_sample: the call chain (--itrace=g) and last branches (l) of a sample at {@code ip}, for the
     * instruction samples and the synthesized ones (ptwrite, power, psb, cbr; not branches).
     */
    void stacks(long ip) {
        if (chain == null && brFrom == null) {
            return;
        }
        int tid = task.tid();
        CallDepth.Stack s = moved == null ? calls.find(tid) : moved.sample(tid, perfTime(), task.runFrom());
        if (chain != null) {
            chainLen = CallDepth.chain(s, ip, Long.MIN_VALUE, chain, chain.length); // perf: kernel from 1 << 63
        }
        if (brFrom != null) {
            brLen = CallDepth.lastBranches(s, brFrom, brTo, brFlags);
        }
    }

    /** The call depth callindent shows for a branch with {@code flags} (perf's: after a call, before a return). */
    int callDepth(int flags) {
        int tid = task.tid();
        int d = calls == null ? 0 : calls.depth(tid);
        return calls != null && calls.has(tid) && (flags & BranchFlags.RETURN) != 0 ? d + 1 : d;
    }

    /** The call chain of the instruction sample being written (null without --itrace=g) and its length. */
    long[] chain() {
        return chain;
    }

    int chainLength() {
        return chainLen;
    }

    /** The last branches of the instruction sample being written (0 without --itrace=l); from, to, flags by index. */
    int lastBranchCount() {
        return brFrom == null ? 0 : brLen;
    }

    long lastBranchFrom(int i) {
        return brFrom[i];
    }

    long lastBranchTo(int i) {
        return brTo[i];
    }

    int lastBranchFlags(int i) {
        return brFlags[i];
    }

    /** perf's insn_cnt of the sample being written (0: none). */
    long sampleInsnCnt() {
        return sampleInsnCnt;
    }

    /** perf's cyc_cnt of the sample being written (0: none). */
    long sampleCycCnt() {
        return sampleCycCnt;
    }

    byte[] fetchedBytes() {
        return fetched;
    }

    /** Moves the thread to the time of the line about to be written (events that are not filtered samples). */
    void moveTask() {
        task.at(taskTime());
    }

    /** The thread's name as perf prints it: its comm, "swapper" for the idle task, else ":tid". */
    String comm() {
        String c = task.comm();
        if (c != null) {
            return c;
        }
        return task.tid() == 0 ? "swapper" : ":" + task.tid();
    }

    int cpu() {
        return cpu;
    }

    int pid() {
        return task.pid();
    }

    int tid() {
        return task.tid();
    }

    long time() {
        return perfTime();
    }

    ScriptMerge.Producer out() {
        return out;
    }

    /** perf's flags of a branch instruction of class {@code cls} (far transfers told apart by their opcode). */
    static int insnFlags(int cls, byte[] b, int len) {
        return switch (cls) {
            case InsnClass.COND_JUMP -> FLAG_BRANCH | BranchFlags.CONDITIONAL;
            case InsnClass.CALL, InsnClass.CALL_INDIRECT -> FLAG_BRANCH | BranchFlags.CALL;
            case InsnClass.RETURN -> FLAG_BRANCH | BranchFlags.RETURN;
            case InsnClass.JUMP, InsnClass.JUMP_INDIRECT -> FLAG_BRANCH;
            case InsnClass.FAR_CALL -> farCall(b, len);
            case InsnClass.FAR_RETURN -> farReturn(b, len);
            case InsnClass.FAR_JUMP -> FLAG_BRANCH;
            default -> 0;
        };
    }

    private static int opcodeAt(byte[] b, int len) {
        int i = 0;
        while (i < len) {
            int x = b[i] & 0xff;
            boolean prefix = x == 0x66 || x == 0x67 || x == 0xf0 || x == 0xf2 || x == 0xf3 || x == 0x2e || x == 0x36
                    || x == 0x3e || x == 0x26 || x == 0x64 || x == 0x65 || (x & 0xf0) == 0x40;
            if (!prefix) {
                return i;
            }
            i++;
        }
        return -1;
    }

    private static int farCall(byte[] b, int len) {
        int i = opcodeAt(b, len);
        int op = i < 0 ? -1 : b[i] & 0xff;
        int op2 = i >= 0 && i + 1 < len ? b[i + 1] & 0xff : -1;
        int op3 = i >= 0 && i + 2 < len ? b[i + 2] & 0xff : -1;
        if (op == 0x0f && (op2 == 0x05 || op2 == 0x34)) {
            return FLAG_BRANCH | BranchFlags.CALL | BranchFlags.SYSCALLRET;
        }
        if (op == 0x9a || op == 0xff) {
            return FLAG_BRANCH | BranchFlags.CALL;
        }
        if (op == 0x0f && op2 == 0x01 && op3 == 0xc1) {
            return FLAG_BRANCH | BranchFlags.CALL | BranchFlags.VMEXIT;
        }
        return FLAG_BRANCH | BranchFlags.CALL | BranchFlags.INTERRUPT;
    }

    private static int farReturn(byte[] b, int len) {
        int i = opcodeAt(b, len);
        int op = i < 0 ? -1 : b[i] & 0xff;
        int op2 = i >= 0 && i + 1 < len ? b[i + 1] & 0xff : -1;
        int op3 = i >= 0 && i + 2 < len ? b[i + 2] & 0xff : -1;
        if (op == 0x0f && (op2 == 0x07 || op2 == 0x35)) {
            return FLAG_BRANCH | BranchFlags.RETURN | BranchFlags.SYSCALLRET;
        }
        if (op == 0x0f && op2 == 0x01 && (op3 == 0xc2 || op3 == 0xc3)) {
            return FLAG_BRANCH | BranchFlags.CALL | BranchFlags.VMENTRY;
        }
        if (op == 0xca || op == 0xcb) {
            return FLAG_BRANCH | BranchFlags.RETURN;
        }
        return FLAG_BRANCH | BranchFlags.RETURN | BranchFlags.INTERRUPT;
    }
}

package ptfence.calls;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import ptfence.flow.Event;
import ptfence.flow.FlowDecoder;
import ptfence.flow.FlowSink;
import ptfence.flow.PtError;
import ptfence.flow.SampleClock;
import ptfence.flow.SampleCycles;
import ptfence.image.CodeSpace;
import ptfence.insn.CodeCache;
import ptfence.insn.InsnClass;
import ptfence.insn.X86Decoder;

/**
 * One CPU's flow as {@link FlowItem}s: a branch is known once the next instruction (or an event) says where it went,
 * so the last branch instruction is held until then; a conditional branch that fell through is not a branch taken.
 * Only the instruction decoder's one-instruction calls are used.
 *
 * <p>For perf's call views ({@link #callsOnly}) only calls, returns, trace begins and ends and the like become items,
 * as perf's decoder samples only those: a plain jump or a taken conditional branch is kept in fields, and made an item
 * only when an event or a loss follows it before the next call or return (a view shows an event with its CPU's last
 * branch kind); its instructions and cycles go with the next item made. Where several CPUs are merged by time, a run
 * of such branches at one time still tells the merge its time ({@link Out#time}): at equal times the merge lets the
 * CPU taken last go on, so where its items end matters.
 *
 * <p>With {@link #countIpc} (-F +ipc) each branch item carries perf's IPC counts of its state, which
 * {@link SampleCycles} decides as for the sample views: the events, trace begins and held branches below tell it
 * where perf's decoder returns a state, in the sample views' order.
 */
public final class BranchSink implements FlowSink {
    /** Where the items go, with the CPU's clock. */
    public interface Out {
        void add(FlowItem item);

        /** Nothing to show, but this CPU's flow ran at perf time {@code time} (only where CPUs are merged). */
        default void time(long time) {
        }
    }

    /** The flags of branches the call views need only as a clock: jumps and taken conditional branches. */
    private static final int CLOCK_ONLY = BranchFlags.BRANCH | BranchFlags.CONDITIONAL | BranchFlags.IN_TX;

    private final int cpu;
    private final Out out;
    private final CodeSpace space;
    private final byte[] buf = new byte[16];
    private LongSupplier clock = () -> -1;
    private java.util.function.LongUnaryOperator toPerf = tsc -> -1;
    private LongSupplier tsc = () -> CodeSpace.ANY_TIME;
    private LongSupplier psb = () -> -1;
    private LongSupplier cycles = () -> 0;
    private long cyclesBefore;

    private boolean pending;
    private long pIp;
    private int pSize;
    private int pCls;
    /** The held branch instruction's sample time (TSC, -1: none), made perf time only if it becomes an item. */
    private long pTsc;
    private long lastIp;
    /** The length of the instruction at {@link #lastIp} (0: none walked yet): the one perf's state carries. */
    private int lastSize;
    /** When the instruction at {@link #lastIp} was walked (sample time, TSC; -1: untimed). */
    private long lastTsc = -1;
    /** Whether the instruction at {@link #lastIp} is a branch: perf's walk returned a state there (SampleSink's). */
    private boolean walkStop;
    /** Where the trace was turned off, while it is (-1: on): what perf reports an overflow then at. */
    private long offIp = -1;
    private long insns;
    private boolean inTx;
    private final EventMarks marks = new EventMarks();
    /** perf's sample time (a branch's time is the one perf gives its sample). */
    private final SampleClock sampleClock = new SampleClock();
    /** perf's trace begin after a loss. */
    private final ptfence.flow.PerfResync resync = new ptfence.flow.PerfResync();
    private FlowDecoder decoder;
    /**
     * A PSB+'s status updates read while the flow still walks to its FUP's IP ({@link #heldIp}): the instructions
     * before that IP ran before the PSB, so they keep the earlier time; the updates (the psb mark, its time, a cbr)
     * take effect when the flow gets there, where perf returns them.
     */
    private final List<Event> held = new ArrayList<>();
    private long heldIp;
    private long heldTsc;
    private long heldPsb;
    private boolean holding;
    /** The last PSB whose status updates were held or not. */
    private long judgedPsb = -1;

    private final boolean callsOnly;
    private final boolean timeMarks;
    /** The last branch not made an item ({@link #callsOnly}), if none was made since. */
    private boolean dropped;
    private long dTsc;
    private long dFrom;
    private long dTo;
    private long dCycles;
    private long dStInsns;
    private long dStCycles;
    private int dFlags;
    private int dLen;
    /** Instructions of branches not made items, which the next item carries. */
    private long carried;
    /** A trace end was the last item: the next branch is made one whatever it is (the stacks look at it). */
    private boolean afterEnd;
    /** What the merge is told of the branches left out ({@link #timeMarks}). */
    private final MergeTimes mergeTimes;

    public BranchSink(int cpu, Out out, CodeSpace space) {
        this(cpu, out, space, false, false);
    }

    /**
     * @param callsOnly make items only of the branches perf's call views sample (and of those events need)
     * @param timeMarks tell {@code out} the times of the branches left out (its merge has other CPUs to order by)
     */
    public BranchSink(int cpu, Out out, CodeSpace space, boolean callsOnly, boolean timeMarks) {
        this.cpu = cpu;
        this.out = out;
        this.space = space;
        this.callsOnly = callsOnly;
        this.timeMarks = timeMarks;
        this.mergeTimes = new MergeTimes(out::time);
    }

    /** perf's IPC counts of the states the items are made of ({@link #countIpc}; null: not counted). */
    private SampleCycles ipc;
    /** Instructions run so far (the states' instruction totals). */
    private long insnTotal;

    /**
     * Items carry perf's IPC counts of their states ({@link FlowItem.Branch#stateCycles}), by the sample views' rule
     * ({@link SampleCycles}): the flow is then walked an instruction at a time (no plain paths), as theirs is.
     */
    public void countIpc() {
        ipc = new SampleCycles();
        if (decoder != null) {
            ipc.decoder(decoder);
        }
    }

    /** A state perf's decoder returns between packets (an event's, a trace begin's): it takes a moved cycle count. */
    private void ipcState() {
        if (ipc != null) {
            ipc.state(true, insnTotal);
        }
    }

    /**
     * The held branch becomes an item, having gone to {@code to}: a conditional one's state is known now, and the
     * item is made of the held branch's state.
     */
    private void ipcHeld(long to) {
        if (ipc != null) {
            if (ipc.condOpen()) {
                ipc.closeCond(to, ipc.condAt(pIp));
            }
            ipc.held();
        }
    }

    /** perf's in-decoder --time filter (perf script's call views): none unless set. */
    private ptfence.script.PerfTimeFilter filter = new ptfence.script.PerfTimeFilter();
    /** The run of AUX buffers being decoded (0: the first). */
    private long run = -1;

    /**
     * perf's --time filter inside its decoder, which the call views' decode also runs under: it fast-forwards over
     * the trace before a range's start (no failed walk there happens) and stops the queue past the last end.
     */
    public void timeFilter(ptfence.script.PerfTimeFilter f) {
        filter = f;
    }

    /**
     * A state perf's decoder returns at TSC {@code tsc}: its time filter runs on it; true if it makes no sample. One
     * inside the ranges first shows a ratio change perf's filter kept unseen (unless the state is a CBR packet's,
     * {@code newRatio}: its own cbr shows the ratio it brings). Where the state is a branch's perf samples with
     * {@code flags} (else -1), that cbr line carries them, a trace end's included, as perf's cbr sample takes its
     * state's (none where the state's from IP is 0, a trace begin).
     */
    private boolean state(long tsc, int flags, boolean newRatio) {
        if (!filter.active() || decoder == null) {
            return false;
        }
        if (filter.filtered(tsc, queuePos(decoder.offset()), decoder.time(), decoder.perfClock(), sampleClock)) {
            return true;
        }
        if (filter.setUpState()) {
            // perf's queue set-up sampled it without the filter, perf script's --time dropped the samples: no line,
            // but a ratio they showed is shown (ptfence.script.PerfTimeFilter)
            marks.unseenCbr(cpu, perf(tsc), insns);
            return false;
        }
        if (!newRatio) {
            FlowItem.Mark cbr = marks.unseenCbr(cpu, perf(tsc), insns);
            if (flags == PSB_STATE) {
                unseenAtPsb = cbr; // perf samples a PSB state's psb before its cbr: shown after the psb line
            } else {
                markItem(cbr == null || flags < 0 ? cbr : cbr.withFlags(flags));
            }
        }
        return false;
    }

    /** {@link #state}'s flags for a PSB+'s state (no branch's flags). */
    private static final int PSB_STATE = -2;
    /** The ratio a PSB state shows first inside a range, marked after its psb (null: none). */
    private FlowItem.Mark unseenAtPsb;

    private long queuePos(long offset) {
        return filter.psbs() == null ? -1 : filter.psbs().queuePos(run, offset);
    }

    /** Whether perf never meets a failure at {@code offset}: its queue stopped, or its fast forward jumped past it. */
    private boolean neverDecoded(long offset) {
        return filter.active() && (filter.stopped() || filter.skipped(queuePos(offset)));
    }

    /**
     * The decoder now reporting to this sink: its time in perf time ({@code toPerf} of its TSC; -1: unknown), its
     * own time (which the code is read with) and its last PSB.
     */
    public void decoder(FlowDecoder d, java.util.function.LongUnaryOperator toPerf) {
        run++;
        held.clear();
        holding = false;
        judgedPsb = -1;
        decoder = d;
        sampleClock.decoder(d);
        if (ipc != null) {
            ipc.decoder(d);
        }
        this.toPerf = toPerf;
        clock = () -> sampleClock.time() < 0 ? -1 : toPerf.applyAsLong(sampleClock.time());
        tsc = () -> d.time() < 0 ? CodeSpace.ANY_TIME : d.time();
        psb = d::psbOffset;
        cycles = d::cycles;
        cyclesBefore = 0; // each decoder counts from 0
        marks.restart();
    }

    /**
     * A PSB segment's decode ended at the next segment's PSB, its status updates taken and the flow walked to its IP
     * ({@code ip}): what the sequential sink does at the first instruction there before that instruction's own part
     * (the branch held goes there, the held updates are released). Returns the state there, the seam to check the
     * next segment's start with (null: the decode ended at no PSB's seam).
     */
    public Seam endSegment(long ip) {
        if (holding && ip == heldIp) {
            if (pending) {
                pending = false;
                if (pCls != InsnClass.COND_JUMP || ip != pIp + pSize) {
                    branchAt(pTsc, pIp, ip, flagsOf(pCls, pIp), pSize);
                }
            }
            releaseHeld();
        }
        if (seamDue < 0 || holding) {
            return null;
        }
        Seam s = seam(seamDue);
        seamDue = -1;
        return s;
    }

    /**
     * Goes on with decoder {@code d}, which starts at the PSB the one before ended at with the state that one had there
     * (a segment decoded again): nothing of the run's state is reset, the clock's cycles go on.
     */
    public void continueWith(FlowDecoder d) {
        decoder = d;
        sampleClock.decoder(d);
        tsc = () -> d.time() < 0 ? CodeSpace.ANY_TIME : d.time();
        psb = d::psbOffset;
        cycles = d::cycles;
    }

    /** The IP of perf's state the marks made now are samples of (its --dsos and -S filters look at it). */
    private long stateIp;
    /** The address of that state (perf's to_ip): a PSB+'s FUP IP where perf's scan for an IP met the PSB, else 0. */
    private long stateAddr;

    /**
     * The sink's state at a PSB segment's seam (docs/script.md, "PSB segments for the call views"): PSB {@code psb}'s
     * status updates taken, the flow at its IP, before the next call. {@code start} is what a segment started at that
     * PSB must rebuild (from the PSB+) or guess (the usual state there) and is compared whole; {@code carried} is what
     * the trace before the PSB left and a segment cannot know: checked where read, or patched into the first item.
     */
    public record Seam(long psb, Start start, Carried carried, boolean atInsn) {
        /**
         * Whether a segment that started here goes on as the sequential decode does from {@code end} (the state the
         * segment before ended with at the same PSB): the same start, and the same last instruction unless the seam
         * point was an instruction ({@code atInsn}: it sets the last instruction before anything reads it; an
         * asynchronous trace end before the first instruction reads it). The last item's cycles are corrected in the first branch
         * item instead; the last state's IP is written before it is read.
         */
        public boolean continues(Seam end) {
            return end != null && psb == end.psb && start.equals(end.start)
                    && (atInsn || carried.lastIp == end.carried.lastIp);
        }
    }

    /** The part of a seam a segment starts from: the PSB+'s restatement and the usual state at a PSB, compared whole. */
    public record Start(
            // restated by the PSB+
            long sample, long queue, long delivered, long ratio, long judgedPsb, boolean psbHasIp, long lastPsb,
            boolean inPsb, boolean inTx, long offIp, boolean holding,
            // left by the flow before it, guessed as the usual state
            boolean pending, boolean dropped, long carried, long insns, boolean afterEnd, int filteredFlags,
            boolean resuming, long ratioShown, boolean cbrWaiting, boolean unseenAtPsb, long mergePending,
            long mergeLast, boolean asyncEnd) {
    }

    /** The part of a seam the trace before the PSB left: the last instruction, the cycles at the last item. */
    public record Carried(long lastIp, long cyclesBefore, long stateIp) {
    }

    /** The state now, as a seam at PSB {@code psb}. */
    public Seam seam(long psb) {
        return seam(psb, false);
    }

    private Seam seam(long psb, boolean atInsn) {
        return new Seam(psb, new Start(sampleClock.sample(), sampleClock.time(), sampleClock.delivered(),
                marks.ratio(), judgedPsb, psbHasIp, marks.lastPsb(), marks.inPsb(), inTx, offIp, holding, pending,
                dropped, carried, insns, afterEnd, filteredFlags, resync.resuming(), marks.shown(),
                marks.cbrWaiting(), unseenAtPsb != null, mergeTimes.pending(), timeMarks ? mergeTimes.last() : 0,
                asyncEnd),
                new Carried(lastIp, cyclesBefore, stateIp), atInsn);
    }

    /** Told each seam as the flow reaches it (null: none; the segments' check and its tests). */
    private java.util.function.Consumer<Seam> seams;
    /** The PSB whose status updates were taken and whose seam is not yet told (-1: none). */
    private long seamDue = -1;

    /** Tells {@code probe} the state at each PSB's seam point as the flow reaches it. */
    public void seams(java.util.function.Consumer<Seam> probe) {
        seams = probe;
    }

    /** The sink's next call after a PSB's status updates (what it held released): the seam point. */
    private void seamPoint() {
        seamPoint(false);
    }

    /** {@code atInsn}: the call is an instruction's (or a path's), which sets the last instruction before any read. */
    private void seamPoint(boolean atInsn) {
        if (seamDue >= 0 && !holding) {
            long at = seamDue;
            seamDue = -1;
            if (segmentStart) {
                segmentStart = false;
                // a segment's guess of what the trace before its PSB showed: a ratio, the last one given (0: none,
                // the cbr 0 perf shows at the first state); checked with the rest of the start
                marks.shownAtSeam();
            }
            if (seams != null) {
                seams.accept(seam(at, atInsn));
            }
        }
    }

    /** Set for a PSB segment's sink until its first seam point, where its guess of the state before is made. */
    private boolean segmentStart;

    /** This sink starts a PSB segment (not the run's start): its first seam point guesses the state before it. */
    public void startsSegment() {
        segmentStart = true;
    }

    @Override
    public void insn(long ip, int size, int cls, int mode, boolean speculative) {
        stateIp = ip;
        stateAddr = 0;
        if (pending) {
            pending = false;
            ipcHeld(ip);
            if (pCls != InsnClass.COND_JUMP || ip != pIp + pSize) {
                branchAt(pTsc, pIp, ip, flagsOf(pCls, pIp), pSize);
            }
        } else if (ipc != null && ipc.condOpen()) {
            ipc.closeCond(ip, false);
        }
        if (holding && ip == heldIp) {
            releaseHeld();
        }
        seamPoint(true);
        if (marks.noCbrShown()) {
            zeroRatio();
        }
        marks.insn();
        sampleClock.insn(cls);
        if (resync.beginHere()) {
            ipcState();
            branch(0, ip, BranchFlags.BRANCH | BranchFlags.TRACE_BEGIN, 0);
        }
        insns++;
        insnTotal++;
        lastIp = ip;
        lastSize = size;
        lastTsc = sampleClock.time();
        walkStop = InsnClass.isBranch(cls);
        if (ipc != null) {
            ipc.insn(ip, size, cls, false, insnTotal);
        }
        if (InsnClass.isBranch(cls)) {
            pending = true;
            pIp = ip;
            pSize = size;
            pCls = cls;
            pTsc = sampleClock.time();
            if (ipc != null) {
                ipc.hold();
            }
        }
    }

    /**
     * perf's cbr 0 at the first state it samples before any CBR packet. Outside every --time range perf samples no
     * state but its queue's set-up one, whose samples perf script then drops unprinted: the ratio is seen there with
     * no line (a cbr 0 line showed between HASE loopy's ranges); at any other state outside it waits.
     */
    private void zeroRatio() {
        if (marks.ratio() >= 0) {
            // the trace gave a ratio, a PSB+'s that perf's filter left unseen: perf's state carries it, and the first
            // state inside a range shows that one (state), no 0
            return;
        }
        long ts = sampleClock.time();
        if (filter.active() && filter.outside(ts)) {
            if (filter.setUpSampleAt(ts)) {
                marks.noCbrYet(cpu, clock.getAsLong(), insns); // seen, unprinted
            }
            return;
        }
        markItem(marks.noCbrYet(cpu, clock.getAsLong(), insns));
    }

    private void branch(long from, long to, int flags, int len) {
        branchAt(sampleClock.time(), from, to, flags, len);
    }

    private long perf(long tsc) {
        return tsc < 0 ? -1 : toPerf.applyAsLong(tsc);
    }

    /** A branch at sample time {@code tsc} (TSC): a branch instruction's is the flow's time at the instruction. */
    private void branchAt(long tsc, long from, long to, int flags, int len) {
        if (filter.active()) {
            filter.newState();
        }
        asyncEnd = to == 0 && (flags & (BranchFlags.ASYNC | BranchFlags.TRACE_END)) == (BranchFlags.ASYNC
                | BranchFlags.TRACE_END);
        // a branch perf's queue set-up sampled outside the ranges (no PSB state before it) prints no line either;
        // its thread stack would see it, this one does not
        if (state(tsc, from == 0 ? 0 : flags | (inTx ? BranchFlags.IN_TX : 0), false) || filter.setUpState()) {
            // perf's filter made no sample of this state, so its thread stack (fed only by the samples' states)
            // never sees the branch: the stack and the flags events show begin at the first state inside a range
            carried += insns;
            insns = 0;
            dropped = false;
            afterEnd = false;
            // perf's state flags change all the same: the next event shows this branch's kind (the view's rule)
            filteredFlags = (flags | (inTx ? BranchFlags.IN_TX : 0)) & ~BranchFlags.TRACE_END;
            if (timeMarks) {
                mergeTimes.left(perf(tsc));
            }
            return;
        }
        int f = flags | (inTx ? BranchFlags.IN_TX : 0);
        if (callsOnly && (f & ~CLOCK_ONLY) == 0 && !afterEnd) {
            dropped = true;
            dTsc = tsc;
            dFrom = from;
            dTo = to;
            dFlags = f;
            dLen = len;
            dCycles = cycles.getAsLong();
            dStInsns = stateInsns();
            dStCycles = stateCycles();
            carried += insns;
            insns = 0;
            if (timeMarks) {
                mergeTimes.left(perf(tsc));
            }
            return;
        }
        afterEnd = (f & BranchFlags.TRACE_END) != 0;
        dropped = false;
        long c = cycles.getAsLong();
        add(new FlowItem.Branch(cpu, perf(tsc), from, to, f, len, insns + carried, c - cyclesBefore, stateInsns(),
                stateCycles()));
        cyclesBefore = c;
        insns = 0;
        carried = 0;
    }

    /** The instruction total of the state an item is made of now (-1: no IPC counted). */
    private long stateInsns() {
        return ipc == null ? -1 : ipc.insns();
    }

    /** The cycle count of the state an item is made of now (-1: it carries no IPC). */
    private long stateCycles() {
        return ipc == null || !ipc.ipc() ? -1 : ipc.cycles();
    }

    /** An event or a loss follows: the branch left out before it is made an item (the view shows its kind). */
    private void keepDropped() {
        if (dropped) {
            dropped = false;
            add(new FlowItem.Branch(cpu, perf(dTsc), dFrom, dTo, dFlags, dLen, carried, dCycles - cyclesBefore,
                    dStInsns, dStCycles));
            cyclesBefore = dCycles;
            carried = 0;
        }
    }

    /** A mark (null: none) goes out, after the branch left out before it; it takes the instructions since. */
    private void markItem(FlowItem.Mark m) {
        if (m != null) {
            keepDropped();
            if (filteredFlags >= 0 && m.flags() < 0) {
                // the last branch was one perf's filter made no sample of, so no item told the view its kind
                m = m.withFlags(m.name().equals("psb") ? 0 : filteredFlags);
            }
            add(m.sampledAt(stateIp, stateAddr, lastIp, lastSize, lastSize > 0 ? perf(lastTsc) : m.time()));
            insns = 0;
        }
    }

    /** The flags of the last branch perf's filter made no sample of, until an item follows (-1: none). */
    private int filteredFlags = -1;
    /** Whether the PSB+ judged last has an IP (a FUP): its state's from_ip, the IP of the samples it makes. */
    private boolean psbHasIp;
    /** Whether the last branch, sampled or not, was an asynchronous trace end (a FUP, a TIP.PGD with no IP). */
    private boolean asyncEnd;

    private void add(FlowItem item) {
        if (!(item instanceof FlowItem.Mark)) {
            filteredFlags = -1; // the view has a branch's kind again (a loss: none)
        }
        if (timeMarks) {
            mergeTimes.item(item.time());
        }
        out.add(item);
    }

    /** The pending branch went to {@code to} (where an asynchronous event found the flow). */
    private void resolve(long to) {
        if (pending) {
            pending = false;
            ipcHeld(to);
            if (pCls != InsnClass.COND_JUMP || to != pIp + pSize) {
                branchAt(pTsc, pIp, to, flagsOf(pCls, pIp), pSize);
            }
        }
    }

    @Override
    public void block(long ip, int count, CodeCache code, int off, int mode, boolean speculative) {
        throw new UnsupportedOperationException("branches use the instruction decoder");
    }

    @Override
    public boolean branchesOnly() {
        return true;
    }

    /**
     * A run of instructions that are no branches: the first settles what waits for an instruction (a branch's target,
     * cbr 0, a trace begin); the rest only count, unless a PSB+ waits for its IP among them.
     */
    @Override
    public void straight(long ip, int count, CodeCache code, int off, int mode, boolean speculative) {
        if (!holding) { // (only an event starts holding) no branch: its length and class matter to nothing here
            insn(ip, 0, InsnClass.OTHER, mode, speculative);
            insns += count - 1;
            insnTotal += count - 1;
            return;
        }
        insnEach(ip, count, code, off, mode, speculative, x86);
    }

    private final X86Decoder x86 = new X86Decoder();

    @Override
    public boolean plainPaths() {
        return callsOnly && ipc == null;
    }

    /**
     * A path (a TNT packet's, or the code up to a TIP; the call views): what {@link #insn} would do for each of its
     * instructions, at once. One with direct calls or compressed returns in it (a TNT packet's) gives every branch
     * that moved the flow ({@link ptfence.insn.TntPaths#moves}), each settled as {@link #insn} would at the next
     * instruction; for one without, the rest of this note. Its branches are all left out ({@link #CLOCK_ONLY}): the one
     * before it is settled by its first instruction as usual; of those in it only the last one taken is kept (as
     * {@link #branchAt} would leave it), with the instructions up to it carried; the path's last instruction (a
     * conditional branch, a jump up to a TIP, a direct jump out of the content) waits as usual. Times: a jump ahead of
     * the path's first conditional branch has the time from before its packet, the rest the packet's ({@link
     * ptfence.flow.SampleClock}). Not taken where anything waits for an instruction (a PSB+'s IP, a trace begin after
     * a loss, cbr 0, a trace end's next branch).
     */
    @Override
    public boolean plainPath(long base, CodeCache code, ptfence.insn.TntPaths t, long first) {
        if (!callsOnly || ipc != null || holding || resync.resuming() || afterEnd || marks.noCbrShown()) {
            return false;
        }
        seamPoint(true);
        if (pending) {
            pending = false;
            if (pCls != InsnClass.COND_JUMP || first != pIp + pSize) {
                branchAt(pTsc, pIp, first, flagsOf(pCls, pIp), pSize);
            }
        }
        marks.insn();
        long ahead = sampleClock.insn(InsnClass.OTHER);
        int lastCls = CodeCache.clsOf(t.lastInsn);
        long tnt = sampleClock.insn(lastCls); // (a path's conditional branches all take the one packet's time)
        if (t.moveCount > 0) {
            // calls and returns in it: each branch that moved the flow, as insn would settle it at the next one
            long[] mv = t.moves;
            int before = 0;
            for (int i = 0; i < 3 * t.moveCount; i += 3) {
                long w = mv[i];
                long packed = mv[i + 1];
                long to = mv[i + 2];
                int upTo = (int) (w >>> 32);
                insns += upTo - before;
                before = upTo;
                long at = base + (int) w;
                branchAt((to & 1L << 32) != 0 ? ahead : tnt, at, base + (int) to,
                        flagsOf(CodeCache.clsOf(packed), at), CodeCache.lengthOf(packed));
            }
            insns += t.insns - before;
        } else if (t.taken >= 0) {
            if (t.takenAhead && !t.lastTakenAhead && timeMarks) {
                mergeTimes.left(perf(ahead));
            }
            int len = CodeCache.lengthOf(t.takenInsn);
            long at = base + t.taken;
            insns += t.takenInsns;
            branchAt(t.lastTakenAhead ? ahead : tnt, at, at + len + CodeCache.displacementOf(t.takenInsn),
                    flagsOf(CodeCache.clsOf(t.takenInsn), at), len);
            insns = t.insns - t.takenInsns;
        } else {
            insns += t.insns;
        }
        lastIp = base + t.last;
        lastSize = CodeCache.lengthOf(t.lastInsn);
        lastTsc = tnt;
        walkStop = true;
        pending = true;
        pIp = lastIp;
        pSize = lastSize;
        pCls = lastCls;
        pTsc = tnt;
        return true;
    }

    @Override
    public void event(Event ev) {
        if (ev.statusUpdate && decoder != null) {
            long at = decoder.psbOffset();
            if (holding && at != heldPsb) {
                releaseHeld(); // the next PSB+ came first
            }
            if (!holding && at != judgedPsb) {
                judgedPsb = at;
                if (filter.active()) {
                    filter.restart(queuePos(at), decoder, sampleClock);
                }
                psbHasIp = decoder.psbIp() != 0;
                if (decoder.psbCbr() >= 0) {
                    // perf's PSB state has the PSB+'s ratio whichever of its updates comes first: a ratio --time
                    // left unseen before it is not shown there (HASE 2018-05's last PSB+: tracing off, then cbr 31)
                    marks.ratio(decoder.psbCbr());
                }
                holding = decoder.psbIp() != 0 && decoder.psbIp() != decoder.ip();
                heldIp = decoder.psbIp();
                heldPsb = at;
            }
            seamDue = at;
            if (holding) {
                Event copy = new Event();
                copy.copyFrom(ev);
                held.add(copy);
                heldTsc = decoder.psbTime();
                return;
            }
            if (pending && offIp == -1) {
                // the branch took its packet before the PSB+ (the flow stands at the PSB's IP): perf returned it
                // then, before the PSB's state (as SampleSink)
                resolve(decoder.ip());
            }
        }
        releaseHeld();
        if (!ev.statusUpdate) {
            seamPoint();
        }
        stateIp = ev.statusUpdate && decoder != null ? (decoder.psbOffset() == scanPsb ? 0 : decoder.psbIp())
                : offIp != -1 ? offIp
                : decoder == null ? lastIp : decoder.ip();
        // a PSB+ perf's scan met: its sync sets from_ip to 0, to_ip stays the FUP's (the sample views' psbAddr)
        stateAddr = ev.statusUpdate && decoder != null && decoder.psbOffset() == scanPsb ? decoder.psbIp() : 0;
        if (ev.statusUpdate && decoder != null) {
            sampleClock.eventAt(decoder.psbTime()); // perf's PSB event: its TSC's time
        } else {
            sampleClock.event();
        }
        take(ev, psb.getAsLong(), true);
    }

    /** The held status updates, at the PSB's time: the flow reached the PSB's IP, or something else came first. */
    private void releaseHeld() {
        if (!holding) {
            return;
        }
        holding = false;
        if (!walkStop) {
            lastSize = 0; // perf walked on up to the PSB+'s FUP: its state has no instruction (SampleSink.closePsb)
        }
        stateIp = heldIp;
        stateAddr = 0;
        sampleClock.eventAt(heldTsc);
        for (Event e : held) {
            take(e, heldPsb, false); // (as the sample views' PSB+ ahead of its IP: no count taken)
        }
        held.clear();
    }

    /** {@code ev} as perf returns it ({@code now}: here, so its state takes a moved cycle count, as the sample views'). */
    private void take(Event ev, long psbOffset, boolean now) {
        // a branch an event makes after settling the held one has the event's state: taken there (below)
        if (now && (ev.statusUpdate || ev.type != Event.ASYNC_DISABLED && ev.type != Event.ASYNC_BRANCH
                && ev.type != Event.OVERFLOW)) {
            ipcState();
        }
        if (marks.noState(ev)) {
            return; // no state, no sample: a ratio perf's filter left unseen waits for the next state
        }
        long shown = marks.shown();
        if (!ev.statusUpdate && filter.active()) {
            filter.newState(); // a PSB+'s updates are one state of perf's, the PSB's
        }
        unseenAtPsb = null;
        boolean filtered = state(sampleClock.time(), ev.statusUpdate ? PSB_STATE : branchFlags(ev),
                ev.type == Event.CBR && !ev.statusUpdate);
        boolean setUp = !filtered && filter.active() && filter.setUpState();
        FlowItem.Mark m = marks.of(ev, cpu, clock.getAsLong(), insns, psbOffset);
        if (filtered && ev.statusUpdate || setUp) {
            m = null; // perf's filter made no sample of the PSB's state (its time may lie in an earlier range)
        }
        if (filtered && marks.shown() != shown) {
            marks.unseen(shown); // perf's filter made no sample here: its ratio stays unshown
        }
        FlowItem.Mark cbr = marks.cbrInPsb();
        if (cbr == null) {
            cbr = unseenAtPsb;
        }
        if (setUp) {
            cbr = null; // sampled by perf's queue set-up and dropped by perf script's --time: shown, unprinted
        }
        markItem(m);
        if (cbr != null && (!psbHasIp || asyncEnd)) {
            // the PSB state's IP is 0 (no FUP in the PSB+): perf clears the flags of a power or cbr sample with no IP;
            // after an asynchronous trace end its state's kind is no branch's (the walk to the FUP ran none)
            cbr = cbr.withFlags(0);
        }
        if (cbr != null) { // after the psb, which took the instructions before both
            markItem(m == null ? cbr : new FlowItem.Mark(cbr.cpu(), cbr.time(), cbr.name(), cbr.ip(), cbr.keys(),
                    cbr.values(), 0, cbr.flags(), cbr.sampleIp(), cbr.sampleAddr(), cbr.insnIp(), cbr.insnLen(),
                    cbr.insnTime()));
        }
        if (ev.type == Event.TSX) {
            inTx = ev.speculative;
        }
        if (ev.statusUpdate) {
            return;
        }
        switch (ev.type) {
            case Event.ENABLED -> {
                offIp = -1;
                pending = false;
                resync.inStep();
                stateIp = 0; // a trace begin's state comes from no IP
                stateAddr = 0;
                // perf shows a trace's cbr 0 at the first state it returns, before that state's branch: the trace
                // begin comes after it, and the cbr line's flags are the ones before it (none at the start)
                if (marks.noCbrShown()) {
                    zeroRatio();
                }
                branch(0, ev.ip, BranchFlags.BRANCH | BranchFlags.TRACE_BEGIN, 0);
            }
            case Event.DISABLED -> {
                offIp = ev.ipSuppressed ? lastIp : ev.ip;
                if (pending) {
                    pending = false;
                    ipcHeld(ev.ipSuppressed ? 0 : ev.ip);
                    branchAt(pTsc, pIp, ev.ipSuppressed ? 0 : ev.ip, flagsOf(pCls, pIp) | BranchFlags.TRACE_END, pSize);
                } else {
                    branch(lastIp, 0, BranchFlags.BRANCH | BranchFlags.ASYNC | BranchFlags.TRACE_END, 0);
                    lastSize = 0; // an asynchronous transfer's state carries no instruction
                }
            }
            case Event.ASYNC_DISABLED -> {
                offIp = ev.from;
                resolve(ev.from);
                ipcState();
                branch(ev.from, 0, BranchFlags.BRANCH | BranchFlags.ASYNC | BranchFlags.TRACE_END, 0);
                lastSize = 0;
            }
            case Event.ASYNC_BRANCH -> {
                resolve(ev.from);
                resync.inStep();
                ipcState();
                branch(ev.from, ev.ip, BranchFlags.BRANCH | BranchFlags.CALL | BranchFlags.ASYNC
                        | BranchFlags.INTERRUPT, 0);
                lastSize = 0;
            }
            case Event.OVERFLOW -> {
                // perf's decoder reports where its flow stands (past a branch whose packet came before the overflow,
                // which it returned: an IRET's TIP, a compressed return's bit), or where the trace was turned off (as
                // SampleSink); a held branch that took no packet stays unsettled (no packet says it ran)
                long at = offIp != -1 ? offIp : decoder == null ? lastIp : decoder.ip();
                if (pending && offIp == -1 && SampleClock.takesPacket(pCls)) {
                    resolve(at);
                }
                pending = false;
                ipcState();
                if (!filter.active() || !filter.stopped()) {
                    loss("overflow", PtError.OVERFLOW, at);
                }
                if (ev.ipSuppressed) {
                    resync.lost(); // resolved with tracing off: the trace begin is the enable's
                } else {
                    // perf's scan stops at the OVF's FUP: the trace begin there at once, at the overflow's time
                    offIp = -1;
                    resync.inStep();
                    branch(0, ev.ip, BranchFlags.BRANCH | BranchFlags.TRACE_BEGIN, 0);
                }
            }
            case Event.TSX -> {
                if (ev.aborted) {
                    branch(ev.ip, 0, BranchFlags.BRANCH | BranchFlags.TX_ABORT, 0);
                }
            }
            default -> { }
        }
    }

    /**
     * The flags of the branch event {@code ev} makes below (-1: none), for a ratio shown at its state; 0 where its
     * from IP is 0 (a trace begin), as {@link #branchAt} gives them.
     */
    private int branchFlags(Event ev) {
        int tx = inTx ? BranchFlags.IN_TX : 0;
        return switch (ev.type) {
            case Event.ENABLED -> 0;
            case Event.DISABLED -> pending ? flagsOf(pCls, pIp) | BranchFlags.TRACE_END | tx
                    : lastIp == 0 ? 0 : BranchFlags.BRANCH | BranchFlags.ASYNC | BranchFlags.TRACE_END | tx;
            case Event.ASYNC_DISABLED -> BranchFlags.BRANCH | BranchFlags.ASYNC | BranchFlags.TRACE_END | tx;
            case Event.ASYNC_BRANCH -> BranchFlags.BRANCH | BranchFlags.CALL | BranchFlags.ASYNC
                    | BranchFlags.INTERRUPT | tx;
            case Event.TSX -> ev.aborted ? BranchFlags.BRANCH | BranchFlags.TX_ABORT | tx : -1;
            default -> -1;
        };
    }

    private void loss(String reason, int code, long ip) {
        loss(reason, code, ip, clock.getAsLong());
    }

    private void loss(String reason, int code, long ip, long time) {
        keepDropped();
        add(new FlowItem.Loss(cpu, time, reason, code, ip, insns, perf(sampleClock.delivered())));
        insns = 0;
    }

    /** Told the IP of each error where code is missing (null: none; a PSB segment keeps them until it is used). */
    private java.util.function.LongConsumer missingCode;

    /** Tells {@code c} the IP of each error where code is missing ({@link PtError#NOMAP}). */
    public void missingCode(java.util.function.LongConsumer c) {
        missingCode = c;
    }

    @Override
    public void error(String kind, int code, long offset, long ip) {
        if (code == PtError.NOMAP && missingCode != null) {
            missingCode.accept(ip);
        }
        releaseHeld();
        seamPoint();
        pending = false;
        if (resync.beginBeforeError(code)) {
            ipcState();
            branch(0, ip, BranchFlags.BRANCH | BranchFlags.TRACE_BEGIN, 0);
        }
        if (ipc != null) {
            ipc.error(code == PtError.NOMAP || code == PtError.BAD_INSN);
        }
        long at = perf(sampleClock.error()); // perf's decoder takes the error's time
        if (!neverDecoded(offset)) {
            loss(PtError.message(code), code, ip, at);
        }
        resync.lost();
    }

    @Override
    public void resumedAtPsb() {
        resync.inStep();
        scanPsb = decoder == null ? -1 : decoder.psbOffset();
    }

    /** The PSB+ (its offset) where perf's scan after an error stopped: its PSB event has IP 0 (-1: none). */
    private long scanPsb = -1;

    @Override
    public void noCode(long ip, long at) {
        if (resync.beginHere()) {
            releaseHeld();
            seamPoint();
            resolve(ip);
            long t = at >= 0 ? sampleClock.eventAt(at) : sampleClock.event();
            if (ipc != null && at >= 0) {
                ipc.stateAtIp(insnTotal); // the full IP's state: its count is the IP packet's, not the failing walk's
            } else {
                ipcState();
            }
            branchAt(t, 0, ip, BranchFlags.BRANCH | BranchFlags.TRACE_BEGIN, 0);
        }
    }

    @Override
    public void endOfTrace() {
        releaseHeld();
        seamPoint();
        pending = false;
        mergeTimes.flush();
    }

    /** perf's flags for a branch instruction of class {@code cls} at {@code ip}. */
    private int flagsOf(int cls, long ip) {
        return switch (cls) {
            case InsnClass.COND_JUMP -> BranchFlags.BRANCH | BranchFlags.CONDITIONAL;
            case InsnClass.CALL, InsnClass.CALL_INDIRECT -> BranchFlags.BRANCH | BranchFlags.CALL;
            case InsnClass.RETURN -> BranchFlags.BRANCH | BranchFlags.RETURN;
            case InsnClass.FAR_CALL -> farCall(ip);
            case InsnClass.FAR_RETURN -> farReturn(ip);
            default -> BranchFlags.BRANCH;
        };
    }

    /** The opcode after legacy and REX prefixes: {op, op2} (op2 for 0F xx), from the code at {@code ip}. */
    private int[] opcode(long ip) {
        int n = space.read(ip, tsc.getAsLong(), buf, 0, buf.length);
        int i = 0;
        while (i < n) {
            int b = buf[i] & 0xff;
            boolean prefix = b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36
                    || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65 || (b & 0xf0) == 0x40;
            if (!prefix) {
                break;
            }
            i++;
        }
        if (i >= n) {
            return new int[] {-1, -1, -1};
        }
        int op = buf[i] & 0xff;
        return new int[] {op, i + 1 < n ? buf[i + 1] & 0xff : -1, i + 2 < n ? buf[i + 2] & 0xff : -1};
    }

    private int farCall(long ip) {
        int[] o = opcode(ip);
        if (o[0] == 0x0f && (o[1] == 0x05 || o[1] == 0x34)) {
            return BranchFlags.BRANCH | BranchFlags.CALL | BranchFlags.SYSCALLRET;
        }
        if (o[0] == 0x9a || o[0] == 0xff) {
            return BranchFlags.BRANCH | BranchFlags.CALL; // far call
        }
        if (o[0] == 0x0f && o[1] == 0x01 && o[2] == 0xc1) {
            return BranchFlags.BRANCH | BranchFlags.CALL | BranchFlags.VMEXIT; // vmcall
        }
        return BranchFlags.BRANCH | BranchFlags.CALL | BranchFlags.INTERRUPT;
    }

    private int farReturn(long ip) {
        int[] o = opcode(ip);
        if (o[0] == 0x0f && (o[1] == 0x07 || o[1] == 0x35)) {
            return BranchFlags.BRANCH | BranchFlags.RETURN | BranchFlags.SYSCALLRET;
        }
        if (o[0] == 0x0f && o[1] == 0x01 && (o[2] == 0xc2 || o[2] == 0xc3)) {
            return BranchFlags.BRANCH | BranchFlags.CALL | BranchFlags.VMENTRY;
        }
        if (o[0] == 0xca || o[0] == 0xcb) {
            return BranchFlags.BRANCH | BranchFlags.RETURN;
        }
        return BranchFlags.BRANCH | BranchFlags.RETURN | BranchFlags.INTERRUPT;
    }
}

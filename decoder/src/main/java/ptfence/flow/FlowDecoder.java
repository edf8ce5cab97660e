package ptfence.flow;

import ptfence.image.CodeSpace;
import ptfence.image.Image;
import ptfence.insn.CodeCache;
import ptfence.insn.InsnClass;
import ptfence.insn.InsnOp;
import ptfence.insn.TntPaths;
import ptfence.insn.X86Decoder;

/**
 * Rebuilds the executed instructions from the event stream and the code image: the state machine shared
 * by the instruction-flow decoder (one {@link FlowSink#insn} per instruction) and the block decoder
 * (straight-line runs via {@link FlowSink#block}). Walks code without trace until an instruction needs it
 * (conditional branch: a TNT bit; indirect branch, uncompressed return, far transfer: a TIP), binds each
 * event to its place in the flow (an IP, or an instruction such as MOV CR3 for a PIP), and on an error
 * reports {@code [offset, ip: error: message]} and resynchronizes at the next PSB.
 *
 * <p>The hot path (TNT-driven walking through cached blocks) touches only primitive fields.
 *
 * <p>One file past 1k lines: sync and segments, event binding (section "events"), walking (section "walking") and
 * perf's quick decode without code ({@code hopLoop}, itrace q)
 * all read and write the same flow state (the IP, the instruction whose effect waits on its events, the current code
 * piece, the block run) as primitive fields of this object; split classes would pass that state or call through an
 * interface on every step of the walk. The rules that stand alone are their own classes: the path memo
 * ({@link TntPaths}), the code cache ({@link CodeCache}), the event layer below ({@link EventDecoder}).
 */
public final class FlowDecoder {
    private static final int WALK_NONE = 0;
    private static final int WALK_TO_IP = 1;
    private static final int WALK_TO_INSN = 2;

    private static final int PRED_CHANGES_CR3 = 1;
    private static final int PRED_BINDS_PIP = 2;
    private static final int PRED_BINDS_VMCS = 3;
    private static final int PRED_PTWRITE = 4;
    private static final int PRED_IRET = 5;
    private static final int PRED_VMENTRY = 6;
    private static final int PRED_UIRET = 7;
    private static final int PRED_SWINT = 8;
    private static final int PRED_SYSCALL = 9;
    private static final int PRED_SKL014 = 10;

    private static final int RETSTACK_SIZE = 64;

    private final CodeSpace image;
    private final boolean timedSpace;
    private final FlowConfig cfg;
    private final PacketInput in;
    private final EventDecoder evd;
    private final FlowSink sink;
    private final boolean blockMode;
    private final boolean countOnly;
    /** The sink takes TNT paths as edges (coverage): the memo's fast path applies, reporting each path. */
    private final boolean edgeMode;
    /** The sink looks at branches only: of a cached run all but the last instruction go as one {@link FlowSink#straight}. */
    private final boolean branchesOnly;
    /** The sink takes TNT paths without calls or returns whole ({@link FlowSink#plainPath}): the memo's fast path. */
    private final boolean plainPaths;
    /** The sink takes TNT paths whole with every branch that moved the flow ({@link FlowSink#movingPaths}). */
    private final boolean movingPaths;
    private final X86Decoder x86 = new X86Decoder();
    private final byte[] slowBuf = new byte[15];

    private final Event ev = new Event();
    private int status;
    private boolean initialPsb;

    private boolean enabled;
    private long ip;
    private int mode;
    private boolean speculative;

    private final long[] retStack = new long[RETSTACK_SIZE];
    private int rsTop;
    private int rsCount;

    // The instruction the last walk step decoded.
    private long lIp;
    private int lSize;
    private byte lCls;
    private byte lOp;
    private int lDisp;

    // An instruction emitted whose effect on the IP waits until the events bound to it are reported.
    private boolean postponed;
    private long pIp;
    private int pSize;
    private byte pCls;
    private byte pOp;
    private int pDisp;
    private boolean boundPaging;
    private boolean boundVmcs;
    private boolean boundPtwrite;

    private long lastEmittedIp;
    private boolean emitted;

    // Current code piece and its cache.
    private CodeCache cc;
    private long secBase;
    private long pieceStart;
    private long pieceEnd;
    private long pieceFrom;
    private long pieceTo;

    // Block-mode run being collected.
    private long runIp;
    private int runCount;
    private CodeCache runCc;
    private int runOff;
    private long runNext;
    private boolean runSpec;
    private int runMode;

    /** Added to trace offsets in reports (a segment decoded from a slice of the trace). */
    private long offsetBase;
    /** Where the next segment starts (its PSB+ FUP); -1 if unknown or tracing is off there. */
    private long stopIp = -1;

    /**
     * For PSB-segment decoding: offsets are reported relative to {@code base}, and at the end of this
     * segment's trace the flow walks on (without trace) to {@code nextSegmentIp} instead of reporting
     * the end of the trace, exactly as the sequential decoder would walk to the next PSB+'s IP.
     */
    public void segment(long base, long nextSegmentIp) {
        this.offsetBase = base;
        this.stopIp = nextSegmentIp;
    }

    /** The state at the segment's first PSB (the trace before it set it); null: afresh. */
    private SeamState startSeam;

    /** A segment's decode starts with the state the sequential decode has at its first PSB. */
    void startAt(SeamState seam) {
        this.startSeam = seam;
    }

    private ParallelFlow.Seam[] seams;
    private int seamIndex;

    /**
     * PSB-segment decoding: the decode ends where the PSB+ of {@code seams[next]} ends (remembering the state as it
     * reaches that PSB), or, if it fails from that PSB on, where it first passes a later one cleanly, as the sequential
     * decode would go on. Trace offsets in {@code seams} are the whole trace's ({@link #segment}'s base).
     */
    void seams(ParallelFlow.Seam[] seams, int next) {
        this.seams = seams;
        this.seamIndex = next - 1;
        nextSeam();
    }

    /** The index of the PSB this decode ended at (seams.length: the end of the trace). */
    int seamReached() {
        return seamIndex;
    }

    private void nextSeam() {
        seamIndex++;
        seamPending = true;
        if (seamIndex < seams.length) {
            ParallelFlow.Seam s = seams[seamIndex];
            evd.markSeamAt(s.at() - offsetBase, s.headerEnd() > 0 ? s.headerEnd() - offsetBase : -1);
            stopIp = s.ip();
        } else {
            evd.markSeamAt(-1, -1);
            stopIp = -1;
        }
    }

    /** An error was reported: one at or after the next segment's PSB means this decode goes on past it. */
    private void seamError() {
        if (seams != null && evd.pastSeam()) {
            nextSeam();
        }
    }

    /**
     * The state just before the marked PSB, as the sequential decode has it there; a fresh one if never reached. The
     * flow's part (the IP tracing is off at, the last instruction emitted) is the flow's as its PSB+ ended: a PSB+
     * restates neither while tracing is off.
     */
    SeamState endSeam() {
        SeamState s = evd.atSeam();
        if (s == null) {
            return new SeamState(cfg);
        }
        s.resumeIp = ip;
        s.emitted = emitted;
        s.lastEmittedIp = lastEmittedIp;
        s.lastEmittedNext = lastEmittedNext();
        // still the segment's own start (the guess, or the real state if settled): ParallelFlow fills in the real one
        s.ipFromStart = carriedIpLive && ip == carriedIp;
        s.emitFromStart = carriedEmitLive && !emitted;
        return s;
    }

    // The carried flow state of a segment started from a guess (null: sequential), while the decode has not yet
    // replaced it: reads go through CarriedReads, which ParallelFlow settles with the real state.
    private CarriedReads carried;
    private long carriedIp;
    private boolean carriedIpLive;
    private boolean carriedEmitLive;

    /** A segment's decode: reads of the flow state carried to its PSB go through {@code reads}. */
    void carriedReads(CarriedReads reads) {
        this.carried = reads;
    }

    /**
     * The trace's time now (TSC, as the timing packets so far estimate it), or -1 before any TSC. An estimate that
     * ran ahead (CYC/MTC extrapolation) is held rather than stepped back when the next timing packet lands a
     * little earlier, as perf does (up to {@link #TSC_SLIP} ticks); a bigger step back is the trace's own and stays.
     */
    /** Core cycles the trace's CYC packets counted so far (0 without CYC): with instructions, the IPC. */
    public long cycles() {
        return evd.time().cycles();
    }

    /** perf's clock and cycle count (null unless {@link FlowConfig#perfClock}). */
    public ptfence.timing.PerfClock perfClock() {
        return evd.time().perf();
    }

    /**
     * The time of the PSB event of the PSB+ just read: with perf's clock, the last TSC it took (intel_pt_decode gives a
     * PSB event that, not the time a timing packet read after the PSB+ moved it to, as where its scan for an IP met
     * the PSB; after a fast forward that left perf's clock early, the TSC from before the jump); else {@link #time()}.
     */
    public long psbTime() {
        ptfence.timing.PerfClock pc = perfClock();
        long t = pc == null ? 0 : pc.lastTsc();
        return t != 0 ? t : time();
    }

    /**
     * perf's --time fast forward restarts its decoder at the PSB+ just read, its clock as it was at the jump
     * ({@code atJump}, a copy of {@link #perfClock()} then): perf never read the packets between, so its clock is that
     * one, moved to this PSB (see {@link ptfence.timing.PerfClock#repositionedFrom}).
     */
    public void perfRepositioned(ptfence.timing.PerfClock atJump) {
        evd.perfRepositioned(atJump);
    }

    /** Offset of the last PSB read (in this decoder's input), or -1 before the first. */
    public long psbOffset() {
        long at = evd.syncOffset();
        return at < 0 ? at : at + offsetBase;
    }

    public long time() {
        if (cfg.perfClock) {
            return evd.time().perf().tsc(); // perf's own suppressions are in its clock
        }
        if (!evd.time().hasTsc()) {
            return -1;
        }
        long t = evd.time().tsc();
        if (t < reportedTime && reportedTime - t < TSC_SLIP) {
            return reportedTime;
        }
        reportedTime = t;
        return t;
    }

    /** The IP the last PSB+'s FUP gave (0: none): perf's PSB event reports it. */
    public long psbIp() {
        return evd.headerFupIp();
    }

    /** The ratio the last PSB+'s CBR gave (-1: none), known before its status updates are reported. */
    public int psbCbr() {
        return evd.headerCbr();
    }

    /** Where the flow stands: the next instruction to run (perf's decoder->ip, which its events report). */
    public long ip() {
        return ip;
    }

    /** The execution mode the flow runs in now ({@link ptfence.insn.ExecMode}), as the sink's instructions get it. */
    public int mode() {
        return mode;
    }

    static final long TSC_SLIP = 0x10000;
    private long reportedTime = Long.MIN_VALUE;

    /** The trace offset the decoder has read to (ptxed --offset prints it with each instruction and event). */
    public long offset() {
        return offsetBase + evd.offset();
    }

    /** Statistics. */
    public long instructions;
    public long blocks;
    public long errors;

    public FlowDecoder(CodeSpace image, FlowConfig cfg, PacketInput in, FlowSink sink, boolean blockMode) {
        this.image = image;
        this.timedSpace = image.timed();
        this.cfg = cfg;
        this.in = in;
        this.evd = new EventDecoder(in, cfg);
        this.sink = sink;
        this.blockMode = blockMode;
        this.countOnly = sink.countsOnly();
        this.edgeMode = !blockMode && sink.edgesOnly();
        this.branchesOnly = !blockMode && sink.branchesOnly();
        this.plainPaths = branchesOnly && !countOnly && !edgeMode && sink.plainPaths();
        this.movingPaths = branchesOnly && !countOnly && !edgeMode && !plainPaths && sink.movingPaths();
        this.tntPaths = cfg.pathMemo.handle();
    }

    /**
     * The code space now answers differently (a sideband record mapped or switched code when the sink saw an
     * event): forget the cached piece so the next instruction is looked up again.
     */
    public void codeChanged() {
        cc = null;
        pieceMode = -1;
        pieceStart = 0;
        pieceEnd = 0;
        recentCount = 0;
        recentNext = 0;
    }

    /** Decodes the whole trace: sync at each PSB after an error, until the end. */
    public void run() {
        long from = 0;
        while (true) {
            resetState();
            long syncAt = in.findPsb(from);
            if (startSeam != null) {
                if (startSeam.carried) {
                    mode = startSeam.flowMode;
                }
                // where tracing is off at the PSB, its PSB+ does not restate these: a later enable or error reads them
                ip = startSeam.resumeIp;
                emitted = startSeam.emitted;
                lastEmittedIp = startSeam.lastEmittedIp;
                lastEmittedNext = startSeam.lastEmittedNext;
                pathLastCache = null;
                carriedIp = ip;
                carriedIpLive = carried != null;
                carriedEmitLive = carried != null && !emitted;
            }
            int st = syncAt < 0 ? PtError.EOS
                    : evd.syncForward(from, startSeam != null && startSeam.carried ? startSeam : null);
            startSeam = null;
            if (st == PtError.EOS) {
                return;
            }
            if (st < 0) {
                errors++;
                sink.error("sync error", st, offsetBase + evd.offset(), 0);
                seamError();
                long pos = in.position();
                if (pos <= from) {
                    return;
                }
                from = pos;
                continue;
            }
            lastSync = syncAt;
            fetchEvent();
            st = loop();
            long lastErrorOffset = -1;
            long lastErrorIp = -1;
            while (st < 0 && st != PtError.EOS) {
                flushRun();
                if (cfg.resyncAtIp && st == PtError.NOMAP) {
                    int w = missingCode(errorIp(st));
                    if (w == 0) {
                        st = loop();
                        continue;
                    }
                    if (w == 2) {
                        st = resumeAtFullIp(false);
                        if (st == 0) {
                            st = loop();
                        }
                        continue;
                    }
                    if (w < 0) {
                        st = w;
                        break;
                    }
                }
                errors++;
                long errOffset = evd.errorOffset();
                long errIp = errorIp(st);
                sink.error("error", st, offsetBase + errOffset, errIp);
                seamError();
                if (!(cfg.resyncOnError || cfg.resyncAtIp)
                        || (errOffset == lastErrorOffset && errIp == lastErrorIp)) {
                    break; // no progress since the last resync: give up on this segment
                }
                lastErrorOffset = errOffset;
                lastErrorIp = errIp;
                if (cfg.resyncAtIp) {
                    if (st == PtError.NOMAP && status == 0 && ev.from != errIp
                            && (ev.type == Event.ASYNC_BRANCH || ev.type == Event.ASYNC_DISABLED)) {
                        // perf failed walking to the FUP: it scans on from the FUP, so the TIP (TIP.PGD) that came
                        // with it as one event is the first packet its scan reads
                        evd.restartFrom(ev.offset);
                    }
                    st = resumeAtFullIp(true);
                    if (st < 0) {
                        // the trace ended, or bytes that are no packet: those are news only past the error reported
                        if (st != PtError.EOS && evd.offset() != errOffset) {
                            errors++;
                            sink.error("error", st, offsetBase + evd.offset(), errorIp(st));
                            seamError();
                        }
                        break; // on at the next PSB
                    }
                } else {
                    st = resync();
                }
                if (st < 0) {
                    flushRun();
                    errors++;
                    sink.error("resync error", st, offsetBase + evd.offset(), errorIp(st));
                    seamError();
                    break;
                }
                if (!enabled) {
                    sink.disabledAfterResync();
                }
                st = loop();
            }
            flushRun();
            if (st == PtError.EOS) {
                return;
            }
            long pos = in.position();
            if (pos == lastSync) {
                pos += 16;
            }
            from = Math.max(lastSync + 1, pos - Math.min(15, pos));
        }
    }

    private long lastSync;

    /** Where and when (TSC) the flow last resumed after an error at a full IP (-1: not since). */
    private long resumeIp = -1;
    private long resumeTsc = -1;
    private long lastCarryOn = -1;

    /**
     * perf's decoder with no code at {@code at} (the flow stands there): its trace begins there at the time the IP
     * came with; where the IP came with the last packet, it fails only at the next packet that makes it walk
     * ({@link EventDecoder#walkToNeed}), so the error has that packet's time and the scan for a full IP starts past it.
     * Returns 1 to report the error, 0 to decode on (a packet that needs no code came first), or EOS / an error (the
     * trace ended first: perf reports nothing).
     */
    private int missingCode(long at) {
        sink.noCode(at, at == resumeIp ? resumeTsc : -1);
        resumeIp = -1;
        if (status == 0 && ev.type == Event.ASYNC_BRANCH && ev.from == at) {
            return 2; // an interrupt where the flow stands: perf takes it without the code
        }
        if (status < 0 || ev.type == Event.TNT || ev.type == Event.TIP || ev.type == Event.ASYNC_BRANCH
                || ev.type == Event.DISABLED || at != evd.lastPacketIp()) {
            // the packet that needs the code is in hand (a TIP.PGD too: perf walks to the branch that disabled), or
            // the flow walked here from code
            return 1;
        }
        int w = evd.walkToNeed(at);
        if (w == 0) {
            long stop = evd.carryOnAt();
            if (stop == lastCarryOn) {
                return 1; // the decode came back here without taking that packet: fail now
            }
            lastCarryOn = stop;
            return 0;
        }
        lastCarryOn = -1;
        return w;
    }

    /**
     * After an error (perf's recovery): the flow so far cannot be trusted, nor can the compressed IPs after the error;
     * continue at the next packet that gives a full IP ({@link EventDecoder#restartAtFullIp}), with an empty return
     * stack, keeping the execution mode and the time.
     */
    private int resumeAtFullIp(boolean fupAlone) {
        while (true) {
            rsTop = 0;
            rsCount = 0;
            int st = evd.restartAtFullIp();
            if (st < 0) {
                return st;
            }
            long at = cfg.perfClock ? evd.restartTsc() : time(); // the IP packet's time, not the events' after it
            fetchEvent();
            st = resync();
            resumeIp = ip;
            resumeTsc = at;
            if (st == 0 && evd.restartedAtPsb()) {
                sink.resumedAtPsb();
            }
            if (st == 0 && fupAlone && evd.restartedAtFup() && ev.type == Event.TSX && !ev.ipSuppressed
                    && ev.ip == ip && !selectPiece(ip)) {
                // perf's scan takes a MODE.TSX as state only (no transaction event, no abort) and begins the trace
                // at the FUP; an abort's TIP after it is the walk that fails (below)
                speculative = ev.speculative;
                fetchEvent();
            }
            if (st == 0 && ev.type == Event.ASYNC_BRANCH && ev.from == ip && !(fupAlone && evd.restartedAtFup())) {
                sink.noCode(ip, at); // perf's trace begins at the IP it found, then the FUP there is an interrupt
            }
            if (st < 0 || !fupAlone || !evd.restartedAtFup()
                    || ev.type != Event.ASYNC_BRANCH && ev.type != Event.ASYNC_DISABLED || ev.from != ip || selectPiece(ip)) {
                return st;
            }
            // perf found the FUP's IP and begins the trace there; the TIP or TIP.PGD after it makes it walk from there,
            // where there is no code: it fails and scans on past that packet (no interrupt or disable is seen)
            sink.noCode(ip, at);
            errors++;
            sink.error("error", PtError.NOMAP, offsetBase + evd.offset(), ip);
            seamError();
        }
    }

    /** After an error: find a place in the event stream to continue from (ptxed --resync-on-error). */
    private int resync() {
        if (carriedIpLive) {
            // the events it passes may read the IP (an enable) or set it: read the carried one now
            carriedIpLive = false;
            if (ip == carriedIp) {
                ip = carried.errorIp();
            }
        }
        postponed = false;
        boundPaging = boundVmcs = boundPtwrite = false;
        boundInsnEvents = 0;
        while (true) {
            if (status < 0) {
                return status;
            }
            if (ev.statusUpdate) {
                resetState();
                long at = evd.syncOffset();
                lastSync = at;
                int st = evd.syncForward(at);
                if (st < 0) {
                    return st;
                }
                fetchEvent();
                if (status == 0 && ev.type == Event.ENABLED && ev.statusUpdate) {
                    enabled = true;
                    ip = ev.ip;
                }
                return 0;
            }
            switch (ev.type) {
                case Event.ENABLED -> {
                    enabled = false;
                    return 0;
                }
                case Event.DISABLED -> {
                    enabled = false;
                    ip = 0;
                    fetchEvent();
                    return 0;
                }
                case Event.ASYNC_DISABLED, Event.ASYNC_BRANCH -> {
                    ip = ev.from;
                    return 0;
                }
                case Event.ASYNC_PAGING, Event.ASYNC_VMCS -> {
                    if (!ev.ipSuppressed) {
                        ip = ev.ip;
                        return 0;
                    }
                }
                case Event.OVERFLOW -> {
                    return 0;
                }
                case Event.EXEC_MODE, Event.TSX, Event.IFLAGS, Event.INTERRUPT -> {
                    enabled = !ev.ipSuppressed;
                    if (enabled) {
                        ip = ev.ip;
                    }
                    return 0;
                }
                case Event.EXSTOP, Event.MWAIT, Event.TICK, Event.IRET, Event.SMI, Event.INIT, Event.VMEXIT,
                        Event.SHUTDOWN, Event.UINTR, Event.SWINTR, Event.SYSCALL, Event.VMENTRY, Event.UIRET -> {
                    if (!ev.ipSuppressed) {
                        ip = ev.ip;
                        return 0;
                    }
                }
                case Event.PTWRITE -> {
                    if (ev.ipSuppressed) {
                        report();
                        continue;
                    }
                    ip = ev.ip;
                    return 0;
                }
                case Event.TIP -> {
                    ip = ev.ip;
                    fetchEvent();
                    return 0;
                }
                default -> { }
            }
            fetchEvent();
        }
    }

    /**
     * The IP ptxed attributes an error to: for errors the event layer found, the instruction after the
     * last one emitted (0 if none yet); for a query mismatch, the instruction that needed trace; else the
     * IP the flow stopped at.
     */
    private long errorIp(int err) {
        if (cfg.hop > 0) {
            return ip; // perf's quick decode: the last IP packet's (no instruction was walked)
        }
        if (carriedEmitLive && !emitted && (eventLayerError || err == PtError.BAD_QUERY)) {
            SeamState real = carried.emitted();
            if (real != null) {
                carriedEmitLive = false;
                emitted = real.emitted;
                lastEmittedIp = real.lastEmittedIp;
                lastEmittedNext = real.lastEmittedNext;
                pathLastCache = null;
            }
        }
        if (eventLayerError) {
            return emitted ? lastEmittedNext() : 0;
        }
        if (err == PtError.BAD_QUERY && emitted) {
            return lastEmittedIp;
        }
        if (carriedIpLive && ip == carriedIp) {
            ip = carried.errorIp();
            carriedIp = ip;
        }
        return ip;
    }

    private boolean eventLayerError;
    private long lastEmittedNext;
    /** When the last instruction emitted ended a TNT path: its code and offset there (null otherwise). */
    private CodeCache pathLastCache;
    private int pathLastOff;

    private long lastEmittedNext() {
        CodeCache c = pathLastCache;
        if (c != null) {
            int o = pathLastOff;
            lastEmittedNext = displacedNext(lastEmittedIp, c.length(o, x86), c.cls(o), c.displacement(o));
            pathLastCache = null;
        }
        return lastEmittedNext;
    }

    private void resetState() {
        hopNoIp = true;
        hopAbort = false;
        pathLastCache = null;
        carriedIpLive = false;
        carriedEmitLive = false;
        enabled = false;
        ip = 0;
        mode = 0;
        speculative = false;
        rsTop = 0;
        rsCount = 0;
        postponed = false;
        boundPaging = boundVmcs = boundPtwrite = false;
        emitted = false;
        status = 0;
        initialPsb = true;
        runCount = 0;
        hasIcnt = false;
        icnt = 0;
        decoderTsc = 0;
        ev.type = Event.NONE;
    }

    // TRIG anchors: instructions counted since the last event that pinned down an IP.
    private boolean hasIcnt;
    private long icnt;

    private void findTrigAnchor() {
        int t = ev.type;
        if (t == Event.TNT || t == Event.TIP) {
            hasIcnt = true;
            icnt = 0;
            return;
        }
        switch (t) {
            case Event.PAGING, Event.SIPI, Event.CBR, Event.MNT, Event.STOP, Event.VMCS, Event.MWAIT, Event.PWRE,
                    Event.PWRX, Event.NONE, Event.IGNORE -> { }
            case Event.ENABLED, Event.ASYNC_BRANCH, Event.TIP, Event.TNT -> {
                hasIcnt = true;
                icnt = 0;
            }
            case Event.DISABLED, Event.ASYNC_DISABLED -> {
                hasIcnt = false;
                icnt = 0;
            }
            case Event.OVERFLOW -> {
                hasIcnt = !ev.ipSuppressed;
                icnt = 0;
            }
            default -> {
                if (!ev.ipSuppressed) {
                    hasIcnt = true;
                    icnt = 0;
                }
            }
        }
    }

    // The time of the last event left behind (libipt's decoder->tsc), for tick events.
    private long decoderTsc;
    private final Event tick = new Event();

    /** --event:tick: a tick where trace time moved on (at a TNT bit's branch or a TIP's branch). */
    private void maybeTick(long at) {
        if (!cfg.tickEvents || ev.tsc == decoderTsc) {
            return;
        }
        tick.clear();
        tick.type = Event.TICK;
        tick.ip = at;
        tick.hasTsc = true;
        tick.tsc = ev.tsc;
        decoderTsc = ev.tsc;
        flushRun();
        sink.event(tick);
    }

    private boolean seamPending;

    private void fetchEvent() {
        leaveEvent();
        nextEvent();
    }

    /** What moving past the current event does to the flow's own state (the TSC for ticks, the TRIG anchor). */
    private void leaveEvent() {
        if (ev.type != Event.NONE) {
            decoderTsc = ev.tsc;
        }
        findTrigAnchor();
    }

    /** After the event layer read the next segment's PSB: the flow's mode there. */
    private void noteSeam() {
        if (seamPending && evd.atSeam() != null) {
            seamPending = false;
            evd.atSeam().flowMode = mode;
        }
    }

    private void nextEvent() {
        status = evd.next(ev);
        noteSeam();
        if (status < 0) {
            ev.type = Event.NONE;
        } else if (!ev.statusUpdate) {
            initialPsb = false;
        }
    }

    /** The decode from a sync: a negative error, EOS, or (qq) 1: go on silently at the next PSB. */
    private int loop() {
        return cfg.hop > 0 ? hopLoop() : decodeLoop();
    }

    /** perf's quick decode has had no IP since its sync (its scan for one): the next IP packet begins the trace. */
    private boolean hopNoIp;

    /**
     * perf's quick decode (itrace q, qq): the events alone, no code walked. Each IP packet is a state: a TIP an
     * instruction at its target, a TIP.PGE a trace begin then an instruction there, a FUP with its TIP (TIP.PGD) an
     * instruction at the FUP that is the asynchronous branch (trace end), then one at the TIP's target; TNT packets and
     * a TIP.PGD with no IP are nothing. A PSB+ is a state at its FUP's IP; with qq it is all there is (the packets up to
     * the next PSB are skipped). The flow's IP is the last packet's.
     */
    private int hopLoop() {
        eventLayerError = false;
        boolean psbOpen = false;
        boolean leap = cfg.hop > 1;
        while (true) {
            if (status < 0) {
                if (psbOpen) {
                    sink.hop(FlowSink.HOP_PSB, psbIpNow(), 0);
                }
                if (status == PtError.EOS) {
                    return PtError.EOS;
                }
                if (leap) {
                    // qq: perf scans for the next PSB without reading the packets between, so bytes that are no
                    // packet there are no error (one inside a PSB+ is perf's error, not yet ptdecode's)
                    return 1;
                }
                eventLayerError = true;
                return status;
            }
            if (ev.statusUpdate) {
                if (!psbOpen) {
                    psbOpen = true;
                    long fup = evd.headerFupIp();
                    if (fup != 0) {
                        ip = fup; // perf's decoder stands at the PSB's FUP before it reports the PSB+
                    }
                }
                if (ev.type == Event.ENABLED) {
                    enabled = true;
                } else if (ev.type == Event.DISABLED) {
                    enabled = false;
                }
                report();
                continue;
            }
            if (psbOpen) {
                psbOpen = false;
                long fup = psbIpNow();
                hopNoIp = fup == 0 && hopNoIp;
                sink.hop(FlowSink.HOP_PSB, fup, 0);
            }
            if (leap) {
                fetchEvent(); // qq: nothing but PSB+ is read
                continue;
            }
            switch (ev.type) {
                case Event.TNT -> fetchEvent();
                case Event.TIP -> {
                    if (!ev.ipSuppressed) {
                        ip = ev.ip;
                        sink.hop(hopNoIp ? FlowSink.HOP_BEGIN : FlowSink.HOP_IP, ip, 0);
                        hopNoIp = false;
                    }
                    fetchEvent();
                }
                case Event.ENABLED -> {
                    if (ev.ipSuppressed) {
                        fetchEvent();
                        break;
                    }
                    ip = ev.ip;
                    enabled = true;
                    hopNoIp = false;
                    report();
                    sink.hop(FlowSink.HOP_RESAMPLE, ip, 0);
                }
                case Event.DISABLED -> {
                    enabled = false;
                    if (!ev.ipSuppressed) {
                        // a TIP.PGD alone with an IP: perf's state from 0 to it, a trace end (its scan for an IP
                        // resamples there)
                        ip = ev.ip;
                        sink.hop(FlowSink.HOP_END, ip, 0);
                        if (hopNoIp) {
                            hopNoIp = false;
                            sink.hop(FlowSink.HOP_IP, ip, 0);
                        }
                    }
                    fetchEvent(); // one with no IP is nothing
                }
                case Event.ASYNC_BRANCH, Event.ASYNC_DISABLED -> {
                    boolean branch = ev.type == Event.ASYNC_BRANCH;
                    long to = branch ? ev.ip : 0;
                    if (hopNoIp) {
                        // perf's scan stops at the FUP: a trace begin there; its TIP is then a TIP of its own
                        hopNoIp = false;
                        ip = ev.from;
                        sink.hop(FlowSink.HOP_BEGIN, ev.from, 0);
                        if (branch) {
                            ip = to;
                            sink.hop(FlowSink.HOP_IP, to, 0);
                        } else {
                            enabled = false;
                        }
                        fetchEvent();
                        break;
                    }
                    ip = ev.from;
                    if (hopAbort) {
                        // the FUP a transaction's abort bound: its TIP (TIP.PGD) makes the abort's branch
                        hopAbort = false;
                        sink.hop(FlowSink.HOP_ABORT, ev.from, to);
                        fetchEvent();
                    } else {
                        sink.hop(FlowSink.HOP_ASYNC, ev.from, to);
                        report();
                    }
                    if (branch) {
                        ip = to;
                        sink.hop(FlowSink.HOP_RESAMPLE, to, 0);
                    } else {
                        enabled = false;
                    }
                }
                case Event.OVERFLOW -> {
                    report();
                    if (!ev.ipSuppressed) {
                        ip = ev.ip;
                        sink.hop(FlowSink.HOP_RESAMPLE, ip, 0);
                    } else {
                        hopNoIp = true;
                    }
                }
                case Event.TSX -> {
                    if (ev.ipSuppressed || !enabled) {
                        report(); // a MODE.TSX with no FUP: state only
                        break;
                    }
                    ip = ev.ip;
                    if (ev.aborted) {
                        hopAbort = true;
                    } else {
                        sink.hop(FlowSink.HOP_TX, ev.ip, ev.speculative ? 1 : 0);
                    }
                    report();
                }
                case Event.PTWRITE, Event.EXSTOP, Event.MWAIT -> {
                    if (!ev.ipSuppressed && enabled) {
                        ip = ev.ip;
                        sink.hop(FlowSink.HOP_IP, ip, 0); // the FUP it binds is an instruction state of its own
                    }
                    report();
                }
                default -> report();
            }
        }
    }

    /** A transaction's abort was reported: the asynchronous branch of its FUP is the abort's branch. */
    private boolean hopAbort;

    private long psbIpNow() {
        return evd.headerFupIp();
    }

    private int decodeLoop() {
        eventLayerError = false;
        while (true) {
            int err;
            if (status < 0) {
                err = proceedPostponed();
                if (err < 0) {
                    return err;
                }
                if (status == PtError.EOS) {
                    if (enabled && stopIp != -1) {
                        int w;
                        do {
                            w = walk(WALK_TO_IP, stopIp, 0);
                        } while (w == 0);
                        if (w < 0) {
                            return w;
                        }
                        flushRun();
                        return PtError.EOS;
                    }
                    if (enabled) {
                        flushRun();
                        sink.endOfTrace();
                    }
                    return PtError.EOS;
                }
                eventLayerError = true;
                return status;
            }
            switch (ev.type) {
                case Event.TNT, Event.TIP -> {
                    if (postponed) {
                        err = proceedPostponed();
                        break;
                    }
                    if (!enabled) {
                        return PtError.NO_ENABLE;
                    }
                    if ((countOnly || edgeMode || plainPaths || movingPaths) && !cfg.endOnCall && !cfg.endOnJump
                            && !cfg.tickEvents && ev.type == Event.TNT && tntFast()) {
                        continue;
                    }
                    if ((plainPaths || movingPaths) && !cfg.endOnCall && !cfg.endOnJump && !cfg.tickEvents
                            && ev.type == Event.TIP && tipFast()) {
                        continue;
                    }
                    err = walk(WALK_NONE, 0, 0);
                    if (err == PtError.BAD_QUERY) {
                        err = proceedWithTrace();
                    }
                    if (err > 0) {
                        err = 0;
                    }
                }
                default -> err = handleEvent();
            }
            if (err < 0) {
                return err;
            }
        }
    }

    // ---------------------------------------------------------------- events

    /** The last block ended with a branch and no event came since (for BDM64). */
    private boolean blockEndedWithBranch;

    private boolean rangeContiguous(long begin, long end, int steps) {
        long at = begin;
        for (int i = 0; i < steps; i++) {
            if (at == end) {
                return true;
            }
            if (decodeAt(at) < 0 || InsnClass.isBranch(lCls)) {
                return false;
            }
            at += lSize;
        }
        return false;
    }

    private void report() {
        blockEndedWithBranch = false;
        flushRun();
        sink.event(ev);
        fetchEvent();
    }

    private int handleEvent() {
        int err;
        if (postponed) {
            switch (ev.type) {
                case Event.PAGING -> {
                    if (enabled && !boundPaging && bindsToPip(pCls, pOp)) {
                        boundPaging = true;
                        report();
                        return 0;
                    }
                }
                case Event.VMCS -> {
                    if (enabled && !boundVmcs && bindsToVmcs(pCls, pOp)) {
                        boundVmcs = true;
                        report();
                        return 0;
                    }
                }
                case Event.PTWRITE -> {
                    if (enabled && !boundPtwrite && ev.ipSuppressed && pCls == InsnClass.PTWRITE) {
                        boundPtwrite = true;
                        report();
                        return 0;
                    }
                }
                case Event.IRET, Event.VMENTRY, Event.UIRET, Event.SWINTR, Event.SYSCALL -> {
                    if (!enabled) {
                        report();
                        return 0;
                    }
                    int bit = 1 << ev.type - Event.IRET;
                    if ((boundInsnEvents & bit) == 0 && ev.ipSuppressed && opMatches(instructionEventPred(ev.type), pOp)) {
                        boundInsnEvents |= bit;
                        report();
                        return 0;
                    }
                }
                case Event.DISABLED -> {
                    if (!ev.statusUpdate) {
                        if (ev.ipSuppressed && pOp == InsnOp.MOV_CR3) {
                            postponed = false;
                            return applyDisabled();
                        }
                        long next = nextIpNoTrace(pIp, pSize, pCls, pDisp);
                        if (next == NEEDS_TRACE) {
                            setResumeIp(pIp, pSize, pCls);
                            postponed = false;
                            return applyDisabled();
                        }
                        ip = next;
                        postponed = false;
                    }
                }
                default -> { }
            }
            err = proceedPostponed();
            if (err < 0) {
                return err;
            }
        }
        switch (ev.type) {
            case Event.ENABLED -> {
                if (ev.statusUpdate) {
                    if (initialPsb && !enabled) {
                        carriedIpLive = false; // the PSB+ gives the IP
                        enabled = true;
                        ip = ev.ip;
                    } else if (!enabled) {
                        return PtError.BAD_STATUS_UPDATE;
                    }
                    report();
                    return 0;
                }
                if (ev.ipSuppressed) {
                    return PtError.NOIP;
                }
                if (enabled) {
                    return PtError.BAD_CONTEXT;
                }
                if (carriedIpLive) {
                    carriedIpLive = false; // from here on the IP is the trace's
                    if (ip == carriedIp) {
                        ip = carried.resume(ev.ip);
                    }
                }
                ev.resumed = ev.ip == ip;
                ip = ev.ip;
                enabled = true;
                report();
                return 0;
            }
            case Event.DISABLED -> {
                if (ev.statusUpdate) {
                    if (enabled && !initialPsb) {
                        return PtError.BAD_STATUS_UPDATE;
                    }
                    enabled = false;
                    report();
                    return 0;
                }
                if (!enabled) {
                    return PtError.BAD_CONTEXT;
                }
                if (ev.ipSuppressed && cfg.skl014 && cfg.addrFilter.configured()) {
                    err = walkSkl014();
                } else {
                    err = ev.ipSuppressed ? walk(WALK_TO_INSN, 0, PRED_CHANGES_CR3) : walk(WALK_TO_IP, ev.ip, 0);
                }
                if (err == PtError.BAD_QUERY) {
                    setResumeIp(lIp, lSize, lCls);
                } else if (err <= 0) {
                    return err;
                }
                return applyDisabled();
            }
            case Event.ASYNC_DISABLED -> {
                if (!enabled) {
                    return PtError.BAD_CONTEXT;
                }
                err = walk(WALK_TO_IP, ev.from, 0);
                if (err <= 0) {
                    return err;
                }
                if (cfg.skd022 && decodeAt(ev.from) == 0 && (lOp == InsnOp.VMLAUNCH || lOp == InsnOp.VMRESUME)) {
                    // SKD022: a VM entry that fails may look like an asynchronous disable; treat it as
                    // the synchronous disable of that instruction.
                    ev.type = Event.DISABLED;
                    return 0;
                }
                return applyDisabled();
            }
            case Event.ASYNC_BRANCH -> {
                if (!enabled) {
                    return PtError.BAD_CONTEXT;
                }
                err = walk(WALK_TO_IP, ev.from, 0);
                if (err <= 0) {
                    return err;
                }
                long to = ev.ip;
                report();
                ip = to;
                return 0;
            }
            case Event.PAGING, Event.VMCS -> {
                if (!enabled) {
                    report();
                    return 0;
                }
                err = walk(WALK_TO_INSN, 0, ev.type == Event.PAGING ? PRED_BINDS_PIP : PRED_BINDS_VMCS);
                if (err <= 0) {
                    return err;
                }
                postponeLast();
                if (ev.type == Event.PAGING) {
                    boundPaging = true;
                } else {
                    boundVmcs = true;
                }
                report();
                return 0;
            }
            case Event.ASYNC_PAGING, Event.ASYNC_VMCS -> {
                if (!ev.ipSuppressed && enabled) {
                    err = walk(WALK_TO_IP, ev.ip, 0);
                    if (err <= 0) {
                        return err;
                    }
                }
                report();
                return 0;
            }
            case Event.OVERFLOW -> {
                boolean sup = ev.ipSuppressed;
                long oip = ev.ip;
                carriedIpLive = false; // the overflow sets the IP
                report();
                if (sup) {
                    enabled = false;
                    ip = 0;
                } else {
                    enabled = true;
                    ip = oip;
                }
                speculative = false;
                return 0;
            }
            case Event.EXEC_MODE -> {
                if (enabled && !ev.ipSuppressed) {
                    err = walk(WALK_TO_IP, ev.ip, 0);
                    if (err <= 0) {
                        return err;
                    }
                }
                if (ev.statusUpdate && enabled && mode != 0 && mode != ev.mode) {
                    return PtError.BAD_STATUS_UPDATE;
                }
                mode = ev.mode;
                report();
                return 0;
            }
            case Event.TSX -> {
                if (cfg.bdm64 && enabled && ev.aborted && !ev.ipSuppressed && blockEndedWithBranch
                        && ip != ev.ip && !rangeContiguous(ip, ev.ip, 0x100)) {
                    // BDM64: the trace of the branch just before an abort may be corrupt; trust the abort IP.
                    ip = ev.ip;
                }
                if (enabled && !ev.ipSuppressed) {
                    err = walk(WALK_TO_IP, ev.ip, 0);
                    if (err <= 0) {
                        return err;
                    }
                }
                speculative = ev.speculative;
                report();
                return 0;
            }
            case Event.STOP -> {
                if (ev.statusUpdate || enabled) {
                    return PtError.BAD_CONTEXT;
                }
                report();
                return 0;
            }
            case Event.EXSTOP, Event.MWAIT -> {
                if (enabled && !ev.ipSuppressed) {
                    err = walk(WALK_TO_IP, ev.ip, 0);
                    if (err <= 0) {
                        return err;
                    }
                }
                report();
                return 0;
            }
            case Event.PTWRITE -> {
                if (!enabled) {
                    report();
                    return 0;
                }
                if (ev.ipSuppressed) {
                    err = walk(WALK_TO_INSN, 0, PRED_PTWRITE);
                    if (err <= 0) {
                        return err;
                    }
                } else {
                    err = walk(WALK_TO_IP, ev.ip, 0);
                    if (err <= 0) {
                        return err;
                    }
                    err = decodeAt(ip);
                    if (err < 0) {
                        return err;
                    }
                    emitLast();
                }
                postponeLast();
                boundPtwrite = true;
                report();
                return 0;
            }
            case Event.IFLAGS, Event.INTERRUPT, Event.SMI, Event.INIT, Event.VMEXIT, Event.SHUTDOWN, Event.UINTR -> {
                if (enabled && !ev.ipSuppressed) {
                    err = walk(WALK_TO_IP, ev.ip, 0);
                    if (err <= 0) {
                        return err;
                    }
                }
                report();
                return 0;
            }
            case Event.IRET, Event.VMENTRY, Event.UIRET -> {
                if (!enabled) {
                    report();
                    return 0;
                }
                if (ev.ipSuppressed) {
                    err = walk(WALK_TO_INSN, 0, instructionEventPred(ev.type));
                    if (err <= 0) {
                        return err;
                    }
                } else {
                    err = walk(WALK_TO_IP, ev.ip, 0);
                    if (err <= 0) {
                        return err;
                    }
                    err = decodeAt(ip);
                    if (err < 0) {
                        return err;
                    }
                    emitLast();
                }
                postponeLast();
                boundInsnEvents |= 1 << ev.type - Event.IRET;
                report();
                return 0;
            }
            case Event.SWINTR, Event.SYSCALL -> {
                if (!enabled) {
                    report();
                    return 0;
                }
                if (ev.ipSuppressed) {
                    err = walk(WALK_TO_INSN, 0, instructionEventPred(ev.type));
                    if (err <= 0) {
                        return err;
                    }
                    postponeLast();
                    boundInsnEvents |= 1 << ev.type - Event.IRET;
                } else {
                    err = walk(WALK_TO_IP, ev.ip, 0);
                    if (err <= 0) {
                        return err;
                    }
                }
                report();
                return 0;
            }
            case Event.TRIG -> {
                if (ev.ipSuppressed) {
                    report();
                    return 0;
                }
                if (ev.ip == 0) {
                    if (!hasIcnt || ev.icnt < icnt) {
                        return PtError.BAD_PACKET;
                    }
                    ev.icnt -= (int) icnt;
                    ev.ip = ip;
                }
                if (!enabled) {
                    report();
                    return 0;
                }
                err = walk(WALK_TO_IP, ev.ip, 0);
                if (err <= 0) {
                    return err;
                }
                while (ev.icnt > 0) {
                    err = decodeAt(ip);
                    if (err < 0) {
                        return err;
                    }
                    emitLast();
                    long next = nextIpNoTrace(lIp, lSize, lCls, lDisp);
                    if (next == NEEDS_TRACE) {
                        return PtError.BAD_QUERY;
                    }
                    ip = next;
                    ev.ip = ip;
                    ev.icnt--;
                }
                report();
                return 0;
            }
            case Event.IGNORE, Event.NONE -> {
                fetchEvent();
                return 0;
            }
            default -> {
                report();
                return 0;
            }
        }
    }

    private int applyDisabled() {
        enabled = false;
        report();
        return 0;
    }

    /** Where tracing should resume after a synchronous disable: after a call, else unknown. */
    private void setResumeIp(long insnIp, int size, byte cls) {
        if (cls == InsnClass.CALL || cls == InsnClass.CALL_INDIRECT || cls == InsnClass.FAR_CALL) {
            ip = insnIp + size;
        } else {
            ip = 0;
        }
    }

    private static boolean isFarBranch(byte cls) {
        return cls == InsnClass.FAR_CALL || cls == InsnClass.FAR_RETURN || cls == InsnClass.FAR_JUMP;
    }

    private static boolean bindsToPip(byte cls, byte op) {
        return op == InsnOp.MOV_CR3 || op == InsnOp.VMLAUNCH || op == InsnOp.VMRESUME || isFarBranch(cls);
    }

    private static boolean bindsToVmcs(byte cls, byte op) {
        return op == InsnOp.VMPTRLD || op == InsnOp.VMLAUNCH || op == InsnOp.VMRESUME || isFarBranch(cls);
    }

    private boolean matches(int pred) {
        return switch (pred) {
            case PRED_CHANGES_CR3 -> lOp == InsnOp.MOV_CR3;
            case PRED_BINDS_PIP -> bindsToPip(lCls, lOp);
            case PRED_BINDS_VMCS -> bindsToVmcs(lCls, lOp);
            case PRED_PTWRITE -> lCls == InsnClass.PTWRITE;
            case PRED_SKL014 -> lCls == InsnClass.JUMP || lCls == InsnClass.CALL || lOp == InsnOp.MOV_CR3;
            default -> opMatches(pred, lOp);
        };
    }

    private static boolean opMatches(int pred, byte op) {
        return switch (pred) {
            case PRED_IRET -> op == InsnOp.IRET || op == InsnOp.SYSRET || op == InsnOp.SYSEXIT
                    || op == InsnOp.ERETS || op == InsnOp.ERETU;
            case PRED_VMENTRY -> op == InsnOp.VMLAUNCH || op == InsnOp.VMRESUME;
            case PRED_UIRET -> op == InsnOp.UIRET;
            case PRED_SWINT -> op == InsnOp.INT || op == InsnOp.INT3 || op == InsnOp.INT1 || op == InsnOp.INTO;
            case PRED_SYSCALL -> op == InsnOp.SYSCALL || op == InsnOp.SYSENTER;
            default -> false;
        };
    }

    private static int instructionEventPred(int type) {
        return switch (type) {
            case Event.IRET -> PRED_IRET;
            case Event.VMENTRY -> PRED_VMENTRY;
            case Event.UIRET -> PRED_UIRET;
            case Event.SWINTR -> PRED_SWINT;
            case Event.SYSCALL -> PRED_SYSCALL;
            default -> 0;
        };
    }

    /** Bound-to-instruction flags for event-trace events (one event of each kind per instruction). */
    private int boundInsnEvents;

    private void postponeLast() {
        postponed = true;
        pIp = lIp;
        pSize = lSize;
        pCls = lCls;
        pOp = lOp;
        pDisp = lDisp;
    }

    private int proceedPostponed() {
        if (!postponed) {
            return 0;
        }
        postponed = false;
        boundPaging = boundVmcs = boundPtwrite = false;
        boundInsnEvents = 0;
        if (!enabled) {
            return 0;
        }
        long next = nextIpNoTrace(pIp, pSize, pCls, pDisp);
        if (next != NEEDS_TRACE) {
            ip = next;
            return 0;
        }
        lIp = pIp;
        lSize = pSize;
        lCls = pCls;
        lOp = pOp;
        lDisp = pDisp;
        ip = pIp;
        return proceedWithTrace();
    }

    // ---------------------------------------------------------------- walking

    private static final long NEEDS_TRACE = 0x8000_0000_0000_0001L;

    private long nextIpNoTrace(long at, int size, byte cls, int disp) {
        return switch (cls) {
            case InsnClass.OTHER, InsnClass.PTWRITE -> at + size;
            case InsnClass.JUMP, InsnClass.CALL -> at + size + disp;
            default -> NEEDS_TRACE;
        };
    }

    /**
     * Walks instructions from {@link #ip} without trace. Returns 1 when the target IP (WALK_TO_IP) or an
     * instruction matching the predicate (WALK_TO_INSN; ip stays at it) is reached, BAD_QUERY when an
     * instruction needs trace (it was emitted; ip stays at it), or another error.
     */
    private int walk(int kind, long target, int pred) {
        if (kind == WALK_TO_IP && ip == target) {
            return 1;
        }
        beginBlock();
        while (true) {
            if (kind == WALK_TO_IP && ip == target) {
                return 1;
            }
            if (!cfg.endOnCall && !cfg.endOnJump) {
                int fast = walkCachedBlock(kind, target, pred);
                if (fast != 0) {
                    if (fast < 0 || fast == FOUND) {
                        return fast == FOUND ? 1 : fast;
                    }
                    continue;
                }
            }
            int err = decodeAt(ip);
            if (err < 0) {
                return err;
            }
            emitLast();
            if (kind == WALK_TO_INSN && matches(pred)) {
                return 1;
            }
            long next = nextIpNoTrace(lIp, lSize, lCls, lDisp);
            if (next == NEEDS_TRACE) {
                return PtError.BAD_QUERY;
            }
            ip = next;
            if ((cfg.endOnCall && lCls == InsnClass.CALL) || (cfg.endOnJump && lCls == InsnClass.JUMP)) {
                return kind == WALK_TO_IP && ip == target ? 1 : 0;
            }
        }
    }

    /**
     * SKL014: with address filtering, a TIP.PGD's IP may be suppressed even for a direct branch that left
     * the filter region. Walk to the direct branch (or MOV CR3) whose target lies outside the filter.
     */
    private int walkSkl014() {
        while (true) {
            int err = walk(WALK_TO_INSN, 0, PRED_SKL014);
            if (err <= 0) {
                return err;
            }
            if (lOp == InsnOp.MOV_CR3) {
                return 1;
            }
            long next = nextIpNoTrace(lIp, lSize, lCls, lDisp);
            if (next == NEEDS_TRACE) {
                return PtError.BAD_QUERY;
            }
            if (!insideFilter(next)) {
                return 1;
            }
            ip = next;
        }
    }

    private boolean insideFilter(long addr) {
        return cfg.addrFilter.traces(addr);
    }

    /** libipt's pt_blk_next: a new block starts (ptxed --block:show-blocks marks it). */
    private void beginBlock() {
        flushRun();
        blocks++;
        sink.beginBlock();
    }

    /**
     * Emits a whole cached block when it cannot contain the walk's target. Returns 1 if it advanced,
     * BAD_QUERY if the block's last instruction needs trace, 0 if the slow path must be used.
     */
    /** walkCachedBlock: the block's last instruction is the one a WALK_TO_INSN walk looks for (ip stays on it). */
    private static final int FOUND = 2;

    private int walkCachedBlock(int kind, long target, int pred) {
        if (pieceStale(ip)) {
            return 0;
        }
        int off = (int) (ip - secBase);
        int last = cc.blockLast(off, x86);
        if (last < 0) {
            return 0;
        }
        int count = cc.blockCount(off);
        long lastIp = secBase + last;
        long lastInsn = cc.blockLastInsn(off, last, x86);
        int lastLen = CodeCache.lengthOf(lastInsn);
        if (Long.compareUnsigned(lastIp + lastLen - pieceStart, pieceEnd - pieceStart) > 0) {
            return 0;
        }
        if (kind == WALK_TO_IP && Long.compareUnsigned(target - ip, lastIp - ip) <= 0 && count > 1) {
            return 0; // the target may lie inside this block
        }
        lIp = lastIp;
        lSize = lastLen;
        lSlow = false;
        lCls = CodeCache.clsOf(lastInsn);
        lOp = CodeCache.opOf(lastInsn);
        lDisp = CodeCache.displacementOf(lastInsn);
        emitRun(ip, count, off);
        if (lCls == InsnClass.CALL || lCls == InsnClass.CALL_INDIRECT) {
            logCall();
        }
        // Every instruction a WALK_TO_INSN predicate matches ends a block (a branch, or one with an op): only the last
        // can match.
        if (kind == WALK_TO_INSN && matches(pred)) {
            ip = lIp;
            return FOUND;
        }
        long next = nextIpNoTrace(lIp, lSize, lCls, lDisp);
        if (next == NEEDS_TRACE) {
            ip = lIp;
            return PtError.BAD_QUERY;
        }
        ip = next;
        return 1;
    }

    /** The time the code space is asked with: the trace's TSC for a timed space once known. */
    private long now() {
        return timedSpace && evd.time().hasTsc() ? evd.time().tsc() : CodeSpace.ANY_TIME;
    }

    /** The execution mode {@link #cc} decodes in; -1 without a piece. */
    private int pieceMode = -1;

    /** True if the cached piece does not answer for {@code at} now (other address, mode, or time). */
    private boolean pieceStale(long at) {
        if (Long.compareUnsigned(at - pieceStart, pieceEnd - pieceStart) >= 0 || pieceMode != mode) {
            return true;
        }
        if (!timedSpace) {
            return false;
        }
        long now = now();
        return now < pieceFrom || now >= pieceTo;
    }

    /**
     * The last pieces the decoder had (code that calls between mapped files and back leaves a single piece all
     * the time, and a new one costs a lookup in the space and in the shared caches): each answers by the same rule as
     * the current one ({@link #pieceStale}) until the code changes.
     */
    private static final int RECENT = 32;
    private final long[] recentStart = new long[RECENT];
    private final long[] recentEnd = new long[RECENT];
    private final long[] recentFrom = new long[RECENT];
    private final long[] recentTo = new long[RECENT];
    private final long[] recentBase = new long[RECENT];
    private final int[] recentMode = new int[RECENT];
    private final CodeCache[] recentCc = new CodeCache[RECENT];
    private int recentCount;
    private int recentNext;

    /** Takes a recent piece that answers for {@code at} at {@code now} as the current one; false if none does. */
    private boolean recentPiece(long at, long now) {
        int hint = pageHint[pageSlot(at)];
        if (hint < recentCount && recentAnswers(hint, at, now)) {
            takeRecent(hint);
            return true;
        }
        for (int i = 0; i < recentCount; i++) {
            if (recentAnswers(i, at, now)) {
                pageHint[pageSlot(at)] = i;
                takeRecent(i);
                return true;
            }
        }
        return false;
    }

    /** Per hash of a page, the recent piece that last answered there (checked before use; 0 at first). */
    private final int[] pageHint = new int[1024];

    private static int pageSlot(long at) {
        return (int) ((at >>> 12) * 0x9E3779B97F4A7C15L >>> 54);
    }

    private boolean recentAnswers(int i, long at, long now) {
        return Long.compareUnsigned(at - recentStart[i], recentEnd[i] - recentStart[i]) < 0 && recentMode[i] == mode
                && (!timedSpace || now >= recentFrom[i] && now < recentTo[i]);
    }

    private void takeRecent(int i) {
        cc = recentCc[i];
        pieceMode = mode;
        secBase = recentBase[i];
        pieceStart = recentStart[i];
        pieceEnd = recentEnd[i];
        pieceFrom = recentFrom[i];
        pieceTo = recentTo[i];
    }

    /** Makes the piece the space has at {@code at} now the current one, remembered among the recent ones. */
    private int findPiece(long at, long now) {
        Image.Piece p = image.find(at, now);
        if (p == null) {
            return PtError.NOMAP;
        }
        if (mode == 0) {
            return PtError.BAD_INSN;
        }
        cc = CodeCache.of(p.section.contentId(), p.section.bytes(), mode);
        pieceMode = mode;
        secBase = p.section.address();
        pieceStart = p.start;
        pieceEnd = p.end;
        pieceFrom = p.validFrom();
        pieceTo = p.validTo();
        if (timedSpace && now == CodeSpace.ANY_TIME) {
            // chosen without knowing the time: ask again as soon as the trace tells it
            pieceFrom = CodeSpace.ANY_TIME;
            pieceTo = CodeSpace.ANY_TIME + 1;
        }
        int r = recentNext;
        recentNext = (recentNext + 1) % RECENT;
        recentCount = Math.max(recentCount, r + 1);
        recentStart[r] = pieceStart;
        recentEnd[r] = pieceEnd;
        recentFrom[r] = pieceFrom;
        recentTo[r] = pieceTo;
        recentBase[r] = secBase;
        recentMode[r] = mode;
        recentCc[r] = cc;
        return 0;
    }

    /** Makes a piece that holds {@code at} current (for the fast paths, whose lookups read the code); false if none. */
    private boolean selectPiece(long at) {
        long now = now();
        return recentPiece(at, now) || findPiece(at, now) == 0;
    }

    private int decodeAt(long at) {
        long now = now();
        if (pieceStale(at) && !recentPiece(at, now)) {
            int err = findPiece(at, now);
            if (err < 0) {
                return err;
            }
        }
        int off = (int) (at - secBase);
        int len = cc.length(off, x86);
        if (len == CodeCache.INVALID) {
            return PtError.BAD_INSN;
        }
        if (len == CodeCache.TRUNCATED || Long.compareUnsigned(at + len - pieceStart, pieceEnd - pieceStart) > 0) {
            int n = image.read(at, now, slowBuf, 0, slowBuf.length);
            if (x86.decode(slowBuf, 0, n, mode) == 0) {
                return PtError.BAD_INSN;
            }
            lIp = at;
            lSize = x86.length;
            lCls = x86.cls;
            lOp = x86.op;
            lDisp = x86.displacement;
            lSlow = true;
            return 0;
        }
        lIp = at;
        lSize = len;
        lCls = cc.cls(off);
        lOp = cc.op(off);
        lDisp = cc.displacement(off);
        lSlow = false;
        return 0;
    }

    private boolean lSlow;

    private void emitLast() {
        if (lCls == InsnClass.CALL || lCls == InsnClass.CALL_INDIRECT) {
            logCall();
        }
        instructions++;
        icnt++;
        blockEndedWithBranch = false;
        lastEmittedIp = lIp;
        lastEmittedNext = displacedNext(lIp, lSize, lCls, lDisp);
        pathLastCache = null;
        emitted = true;
        if (!blockMode) {
            sink.insn(lIp, lSize, lCls, mode, speculative);
            return;
        }
        if (lSlow) {
            flushRun();
            sink.block(lIp, 1, null, 0, mode, speculative);
            return;
        }
        addToRun(lIp, 1, (int) (lIp - secBase), lIp + lSize);
    }

    private void emitRun(long first, int count, int off) {
        instructions += count;
        icnt += count;
        blockEndedWithBranch = false;
        lastEmittedIp = lIp;
        lastEmittedNext = displacedNext(lIp, lSize, lCls, lDisp);
        pathLastCache = null;
        emitted = true;
        if (countOnly) {
            return;
        }
        if (edgeMode) {
            // Only branches make edges, and in a block only its last instruction is one.
            sink.insn(first, cc.length(off, x86), cc.cls(off), mode, speculative);
            if (count > 1) {
                sink.insn(lIp, lSize, lCls, mode, speculative);
            }
            return;
        }
        if (branchesOnly) {
            // a cached block: none but the last is a branch
            if (count > 1) {
                sink.straight(first, count - 1, cc, off, mode, speculative);
            }
            sink.insn(lIp, lSize, lCls, mode, speculative);
            return;
        }
        if (!blockMode) {
            long a = first;
            int o = off;
            for (int i = 0; i < count; i++) {
                int len = cc.length(o, x86);
                sink.insn(a, len, cc.cls(o), mode, speculative);
                a += len;
                o += len;
            }
            return;
        }
        addToRun(first, count, off, lIp + lSize);
    }

    private void addToRun(long first, int count, int off, long next) {
        if (runCount > 0 && runNext == first && runCc == cc && runSpec == speculative && runMode == mode) {
            runCount += count;
            runNext = next;
            return;
        }
        flushRun();
        runIp = first;
        runCount = count;
        runCc = cc;
        runOff = off;
        runNext = next;
        runSpec = speculative;
        runMode = mode;
    }

    private void flushRun() {
        if (runCount > 0) {
            sink.block(runIp, runCount, runCc, runOff, runMode, runSpec);
            runCount = 0;
        }
    }

    /** ptxed's idea of the next IP: after the instruction, plus any branch displacement. */
    private static long displacedNext(long at, int size, byte cls, int disp) {
        return switch (cls) {
            case InsnClass.JUMP, InsnClass.CALL, InsnClass.COND_JUMP -> at + size + disp;
            default -> at + size;
        };
    }

    private void logCall() {
        if (lCls == InsnClass.CALL && lDisp == 0) {
            return; // call to the next instruction: position-independent code, not a real call
        }
        retStack[rsTop] = lIp + lSize;
        rsTop = (rsTop + 1) & (RETSTACK_SIZE - 1);
        if (rsCount < RETSTACK_SIZE) {
            rsCount++;
        }
    }

    private int popReturn() {
        if (rsCount == 0) {
            return PtError.RETSTACK_EMPTY;
        }
        rsTop = (rsTop - 1) & (RETSTACK_SIZE - 1);
        rsCount--;
        ip = retStack[rsTop];
        return 0;
    }

    // ---------------------------------------------------------------- trace

    /**
     * When nobody looks at individual instructions (--quiet, statistics, benchmarks), consume whole TNT
     * packets through the per-content decision-point cache: one lookup per packet instead of a walk per
     * bit. Returns true if it made progress; false sends the caller down the general path.
     */
    private final TntPaths tntPaths;

    /** This thread's handle on the TNT-path memo this decoder uses (its lookup/miss counters profile the fast path). */
    public TntPaths tntPaths() {
        return tntPaths;
    }

    private boolean tntFast() {
        boolean progress = false;
        while (status == 0 && ev.type == Event.TNT && ev.tntSize > 0) {
            if (pieceStale(ip) && !selectPiece(ip)) {
                return progress;
            }
            int off = (int) (ip - secBase);
            CodeCache c = cc;
            TntPaths t = tntPaths;
            int size = ev.tntSize;
            // A TNT-64 goes through the memo 8 bits at a time, oldest first, as TNT-8s with nothing between them.
            int chunk = Math.min(size, 8);
            long bits = (ev.tntBits >>> (size - chunk)) & ((1L << chunk) - 1);
            if (movingPaths ? !t.lookupMoving(c, off, bits, chunk, cfg.noRetComp, x86)
                    : plainPaths ? !t.lookupCarrying(c, off, bits, chunk, cfg.noRetComp, x86)
                    : !t.lookup(c, off, bits, chunk, cfg.noRetComp, edgeMode, x86)) {
                return progress;
            }
            long lo = pieceStart - secBase;
            long hi = pieceEnd - secBase;
            if ((t.pops && rsCount == 0) || !t.within(lo, hi - 1, c.code().length)) {
                return progress; // the walk reports the unmapped code or the empty return stack
            }
            if (edgeMode) {
                sink.path(secBase, t, ip, secBase + t.last);
            } else if ((plainPaths || movingPaths) && !sink.plainPath(secBase, c, t, ip)) {
                return progress; // the sink wants this one walked
            }
            instructions += t.insns;
            icnt += t.insns;
            blocks += t.used;
            lastEmittedIp = secBase + t.last;
            pathLastCache = c; // lastEmittedNext is worked out from it only if an error asks for it
            pathLastOff = t.last;
            emitted = true;
            blockEndedWithBranch = true; // a path ends at the branch that used its last bit (BDM64 looks at it)
            progress = true;
            if (t.pops) {
                popReturn();
            } else {
                for (int i = 0; i < t.pushCount; i++) {
                    retStack[rsTop] = secBase + t.pushes[i];
                    rsTop = (rsTop + 1) & (RETSTACK_SIZE - 1);
                    if (rsCount < RETSTACK_SIZE) {
                        rsCount++;
                    }
                }
                ip = secBase + t.end;
            }
            ev.tntSize = size - t.used;
            if (ev.tntSize == 0) {
                nextTnt();
            }
        }
        return progress;
    }

    /**
     * The code a {@link FlowSink#plainPaths} sink runs up to a TIP, through the memo ({@link TntPaths#lookupTail}):
     * straight-line code and direct jumps, a path per piece of content, the last ending at the indirect jump the TIP
     * is for; as {@link #walk} and {@link #proceedIndirect} would do it. True if it took the TIP; false sends the
     * caller down the general path from where it stopped.
     */
    private boolean tipFast() {
        boolean progress = false;
        while (status == 0 && ev.type == Event.TIP && !ev.ipSuppressed) {
            if (pieceStale(ip) && !selectPiece(ip)) {
                return false;
            }
            int off = (int) (ip - secBase);
            CodeCache c = cc;
            TntPaths t = tntPaths;
            if (!(movingPaths ? t.lookupTailMoving(c, off, x86) : t.lookupTail(c, off, x86))
                    || !t.within(pieceStart - secBase, pieceEnd - secBase - 1, c.code().length)
                    || !sink.plainPath(secBase, c, t, ip)) {
                return false;
            }
            if (!progress) {
                blocks++; // one walk's block, as walk() counts it
                progress = true;
            }
            instructions += t.insns;
            icnt += t.insns;
            int o = t.last;
            long li = t.lastInsn;
            lIp = secBase + o;
            lSize = CodeCache.lengthOf(li);
            lCls = CodeCache.clsOf(li);
            lOp = CodeCache.opOf(li);
            lDisp = CodeCache.displacementOf(li);
            lSlow = false;
            lastEmittedIp = lIp;
            pathLastCache = c;
            pathLastOff = o;
            emitted = true;
            if (!t.tail) {
                blockEndedWithBranch = false;
                ip = secBase + t.end; // a direct jump out of this content
                continue;
            }
            blockEndedWithBranch = true;
            ip = ev.ip;
            fetchEvent();
            return true;
        }
        return false;
    }

    /** {@link #fetchEvent} after a used-up TNT, through the event layer's TNT lane where the next event is a TNT too. */
    private void nextTnt() {
        leaveEvent();
        if (!evd.nextTnt(ev)) {
            nextEvent();
            return;
        }
        noteSeam();
        initialPsb = false; // a TNT is no status update
    }

    /** The instruction in l* needs trace; the head event must supply it. */
    private int proceedWithTrace() {
        blockEndedWithBranch = true;
        switch (lCls) {
            case InsnClass.COND_JUMP -> {
                int bit = takeTnt();
                if (bit < 0) {
                    return bit;
                }
                ip = lIp + lSize + (bit != 0 ? lDisp : 0);
                tntUsed();
                return 0;
            }
            case InsnClass.RETURN -> {
                if (ev.type == Event.TNT && !cfg.noRetComp) {
                    int bit = takeTnt();
                    if (bit < 0) {
                        return bit;
                    }
                    if (bit == 0) {
                        return PtError.BAD_RETCOMP;
                    }
                    int err = popReturn();
                    if (err == 0) {
                        tntUsed();
                    }
                    return err;
                }
                return proceedIndirect();
            }
            case InsnClass.OTHER, InsnClass.PTWRITE, InsnClass.JUMP, InsnClass.CALL -> {
                return PtError.INTERNAL;
            }
            default -> {
                return proceedIndirect();
            }
        }
    }

    private final Event held = new Event();

    private int proceedIndirect() {
        if (ev.type == Event.TNT) {
            // A deferred TIP may sit behind the TNT in progress: look ahead, keep the TNT current.
            evd.mark();
            held.copyFrom(ev);
            int st = evd.next(ev);
            if (st < 0 || ev.type != Event.TIP || ev.ipSuppressed) {
                evd.rewind();
                ev.copyFrom(held);
                return PtError.BAD_QUERY;
            }
            ip = ev.ip;
            ev.copyFrom(held);
            return 0;
        }
        if (ev.type != Event.TIP) {
            return PtError.BAD_QUERY;
        }
        if (ev.ipSuppressed) {
            return PtError.BAD_PACKET;
        }
        long branch = lIp;
        ip = ev.ip;
        maybeTick(branch);
        fetchEvent();
        return 0;
    }

    private int takeTnt() {
        if (ev.type != Event.TNT) {
            return PtError.BAD_QUERY;
        }
        int size = ev.tntSize - 1;
        ev.tntSize = size;
        return (int) ((ev.tntBits >>> size) & 1);
    }

    /** After a TNT bit moved the flow: maybe a tick, and the next event once the TNT is used up. */
    private void tntUsed() {
        if (ev.hasTsc) {
            maybeTick(ip);
        }
        if (ev.tntSize == 0) {
            fetchEvent();
        }
    }
}

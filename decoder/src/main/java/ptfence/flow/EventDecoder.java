package ptfence.flow;

import ptfence.flow.PacketInput.Pkt;
import ptfence.packet.LastIp;
import ptfence.packet.PacketCursor;

/**
 * Turns packets into events in the order the flow needs them. Packets that only make sense together are
 * joined here: a FUP binds to the MODE.TSX, PTW, EXSTOP or OVF before it and gives them their IP; a FUP
 * followed by TIP becomes an asynchronous branch, FUP + TIP.PGD an asynchronous disable; MODE.Exec
 * binds to the next TIP or TIP.PGE; PSB+ packets become status updates delivered at PSBEND. TNT and TIP
 * are events too, consumed by conditional and indirect branches.
 *
 * <p>The binding rules follow Intel's SDM and libipt's event decoder (the reference ptxed is checked
 * against); the code is our own. Decode functions return a negative error, 0 when an event is ready in
 * {@link #event}, or 1 when more packets are needed.
 */
public final class EventDecoder {
    private static final int EVB_PSBEND = 1;
    private static final int EVB_TIP = 2;
    private static final int EVB_FUP = 4;
    private static final int EVB_FUP_BOUND = 8;
    private static final int EVB_EXSTOP = 16;
    private static final int EVB_CFE = 32;
    private static final int EVB_PWRX = 64;
    private static final int INVALID = 0;

    private final PacketInput in;
    private final FlowConfig config;
    private final Pkt packet = new Pkt();
    private final Pkt scratch = new Pkt();
    private int status;
    private Event event;
    private final Event standalone = new Event();
    /** Holds a dequeued event while the queue is modified. */
    private final Event held = new Event();

    private boolean enabled;
    private boolean bound;
    private boolean modeExecValid;
    private boolean csl;
    private boolean csd;
    private boolean iflag;

    private long lastIp;
    private boolean haveIp;
    private boolean ipSuppressed;

    private final Event[] queue = new Event[64];
    private final int[] bindings = new int[64];
    private int queued;

    private final TimeTracker time;

    public EventDecoder(PacketInput in, FlowConfig config) {
        this.in = in;
        this.config = config;
        this.time = new TimeTracker(config);
        for (int i = 0; i < queue.length; i++) {
            queue[i] = new Event();
        }
    }

    /** One saved state for look-ahead (deferred TIPs); see {@link #mark()} and {@link #rewind()}. */
    private EventDecoder saved;
    private long savedPosition;

    /** Remembers the current state so a look-ahead can be undone with {@link #rewind()}. */
    public void mark() {
        if (saved == null) {
            saved = new EventDecoder(in, config);
        }
        saved.copyState(this);
        savedPosition = in.position();
    }

    /** Returns to the state {@link #mark()} saved. */
    public void rewind() {
        copyState(saved);
        in.seek(savedPosition);
    }

    private void copyState(EventDecoder o) {
        copyPkt(packet, o.packet);
        status = o.status;
        event = null;
        enabled = o.enabled;
        bound = o.bound;
        modeExecValid = o.modeExecValid;
        csl = o.csl;
        csd = o.csd;
        iflag = o.iflag;
        lastIp = o.lastIp;
        haveIp = o.haveIp;
        ipSuppressed = o.ipSuppressed;
        queued = o.queued;
        for (int i = 0; i < o.queued; i++) {
            queue[i].copyFrom(o.queue[i]);
            bindings[i] = o.bindings[i];
        }
        time.copyFrom(o.time);
        pastSeam = o.pastSeam;
        seamRead = o.seamRead;
    }

    private static void copyPkt(Pkt d, Pkt s) {
        d.type = s.type;
        d.offset = s.offset;
        d.size = s.size;
        d.ipc = s.ipc;
        d.ip = s.ip;
        d.tntBits = s.tntBits;
        d.tntSize = s.tntSize;
        d.flagA = s.flagA;
        d.flagB = s.flagB;
        d.flagC = s.flagC;
        d.payload = s.payload;
        d.payload2 = s.payload2;
        d.small = s.small;
    }

    public TimeTracker time() {
        return time;
    }

    /** Offset of the packet the decoder is looking at (libipt's "current offset" for error reports). */
    public long offset() {
        return in.position() - packet.size;
    }

    // ---------------------------------------------------------------- queue

    private Event enqueue(int binding) {
        if (queued == queue.length) {
            return null;
        }
        Event e = queue[queued];
        e.clear();
        bindings[queued] = binding;
        queued++;
        return e;
    }

    private Event dequeue(int evb) {
        for (int i = 0; i < queued; i++) {
            if ((bindings[i] & evb) != 0) {
                Event e = queue[i];
                System.arraycopy(queue, i + 1, queue, i, queued - i - 1);
                System.arraycopy(bindings, i + 1, bindings, i, queued - i - 1);
                queued--;
                // Park the removed slot after the live entries; the caller copies it before the next enqueue.
                queue[queued] = e;
                return e;
            }
        }
        return null;
    }

    private Event find(int evb, int type) {
        for (int i = 0; i < queued; i++) {
            if ((bindings[i] & evb) != 0 && queue[i].type == type) {
                return queue[i];
            }
        }
        return null;
    }

    private boolean pending(int evb) {
        for (int i = 0; i < queued; i++) {
            if ((bindings[i] & evb) != 0) {
                return true;
            }
        }
        return false;
    }

    private Event standalone() {
        Event e = target != null ? target : standalone;
        e.clear();
        return e;
    }

    /** For TNT and TIP, the hot events: reset only what the flow reads, straight into the caller's event. */
    private Event standaloneLight() {
        Event e = target != null ? target : standalone;
        e.statusUpdate = false;
        e.ipSuppressed = false;
        e.hasTsc = false;
        return e;
    }

    /** The caller's event while {@link #next} runs; standalone events are built in it directly. */
    private Event target;

    // ---------------------------------------------------------------- last IP

    private int updateIp(Pkt p) {
        if (p.ipc == PacketCursor.IPC_SUPPRESSED) {
            ipSuppressed = true;
            return 0;
        }
        if (!LastIp.isCompression(p.ipc)) {
            return PtError.BAD_PACKET;
        }
        lastIp = LastIp.combine(lastIp, p.ipc, p.ip);
        haveIp = true;
        ipSuppressed = false;
        return 0;
    }

    private int queryIp() {
        if (!haveIp) {
            return PtError.NOIP;
        }
        if (ipSuppressed) {
            return PtError.IP_SUPPRESSED;
        }
        return 0;
    }

    /** Gives the event the current IP, or marks it suppressed. */
    private int eventIp(Event ev) {
        int err = queryIp();
        if (err == 0) {
            ev.ip = lastIp;
        } else if (err == PtError.NOIP || err == PtError.IP_SUPPRESSED) {
            ev.ipSuppressed = true;
            ev.ip = 0;
        } else {
            return err;
        }
        return 0;
    }

    private void eventTime(Event ev) {
        if (time.hasTsc()) {
            ev.hasTsc = true;
            ev.tsc = time.tsc();
        }
    }

    // ---------------------------------------------------------------- packets

    private int fetchPacket() {
        if (pastSeam && in.position() >= seamEnd) {
            if (atSeam == null) {
                atSeam = seamState(); // a PSB+ cut short: the state as this decode ends before it
            }
            // this segment's decode ends with the next one's PSB+ (look-ahead may read on, the decode may not)
            packet.type = INVALID;
            packet.size = 0;
            status = PtError.EOS;
            return 0;
        }
        do {
            int st = in.next(packet);
            if (st < 0) {
                packet.type = INVALID;
                packet.size = 0;
                status = st;
                break;
            }
        } while (packet.type == Pkt.PAD);
        time.packet(packet.type);
        return 0;
    }

    private void reset() {
        packet.type = INVALID;
        packet.size = 0;
        status = PtError.NOSYNC;
        event = null;
        enabled = false;
        bound = false;
        modeExecValid = false;
        lastIp = 0;
        haveIp = false;
        ipSuppressed = false;
        queued = 0;
        needEnd = -1;
        needStop = -1;
        restartFrom = -1;
        time.reset();
    }

    /** Synchronizes at the first PSB at or after {@code from}; returns 0 or an error (EOS if none). */
    public int syncForward(long from) {
        return syncForward(from, null);
    }

    /** As {@link #syncForward(long)}, starting from {@code seam}'s state (null: afresh) before the PSB. */
    int syncForward(long from, SeamState seam) {
        reset();
        if (seam != null) {
            if (seam.clockCarried) {
                time.seed(seam.clock);
            }
            modeExecValid = seam.modeValid;
            csl = seam.csl;
            csd = seam.csd;
            iflag = seam.iflag;
        }
        long psb = in.findPsb(from);
        if (psb < 0) {
            return PtError.EOS;
        }
        in.seek(psb);
        return start();
    }

    /** {@link #walkToNeed}: a packet needs the missing code (perf fails there); decode restarts past it. */
    public static final int NEEDS_CODE = 1;
    private long needEnd = -1;
    private long needNext = -1;
    private long needStop = -1;

    /**
     * The offset an error reports: {@link #offset()}, or where {@link #walkToNeed} found the packet that needs the code,
     * the packet after that one (the one the decoder would look at had it read that packet itself).
     */
    public long errorOffset() {
        return needEnd >= 0 ? needNext : offset();
    }

    /**
     * perf's decoder where the flow stands at {@code ip} with no code there: it reads on, taking the time from the
     * timing packets, and fails only at the first packet that makes it walk from {@code ip} (a TNT, TIP or TIP.PGD, a
     * FUP or PSB+ FUP elsewhere). Returns {@link #NEEDS_CODE} (the time is that packet's; {@link #restartAtFullIp}
     * then scans past it), 0 where a packet carries on without the code (TIP.PGE, a FUP at {@code ip}, PSB+ without
     * another IP, OVF, TraceStop: the decode takes it as usual), or EOS / the packet layer's error.
     */
    public int walkToNeed(long ip) {
        if (packet.type == INVALID) {
            return status < 0 ? status : PtError.EOS;
        }
        long resume = in.position(); // past the packet in hand: where the decode reads on if it carries on
        long from = resume - (bound ? 0 : packet.size);
        Pkt p = scratch;
        in.seek(from);
        long group = -1;
        while (true) {
            long at = in.position();
            int st = in.next(p);
            if (st < 0) {
                in.seek(resume);
                return st;
            }
            switch (p.type) {
                case Pkt.TNT -> {
                    if (p.tntSize > 0) {
                        return needsCode(from, in.position());
                    }
                }
                case Pkt.TIP, Pkt.TIP_PGD -> {
                    return needsCode(from, in.position());
                }
                case Pkt.FUP -> {
                    if (p.ipc != PacketCursor.IPC_SUPPRESSED) {
                        long fup = LastIp.isCompression(p.ipc) ? LastIp.combine(lastIp, p.ipc, p.ip) : 0;
                        if (fup != ip) {
                            return needsCode(from, in.position());
                        }
                        return carryOn(resume, group >= 0 ? group : at);
                    }
                    group = -1;
                }
                case Pkt.PSB -> {
                    long end = in.position();
                    long fup = psbFup();
                    if (fup != 0 && fup != ip) {
                        return needsCode(from, end);
                    }
                    return carryOn(resume, at);
                }
                case Pkt.TIP_PGE, Pkt.OVF, Pkt.STOP -> {
                    return carryOn(resume, group >= 0 ? group : at);
                }
                case Pkt.PAD, Pkt.TSC, Pkt.TMA, Pkt.MTC, Pkt.CYC, Pkt.CBR, Pkt.PIP, Pkt.VMCS, Pkt.PSBEND -> { }
                case Pkt.MODE_EXEC, Pkt.MODE_TSX -> {
                    if (group < 0) {
                        group = at;
                    }
                }
                default -> group = -1;
            }
        }
    }

    /** The FUP of the PSB+ the cursor is in (0: none), leaving the cursor anywhere. */
    private long psbFup() {
        Pkt p = scratch;
        while (in.next(p) >= 0) {
            if (p.type == Pkt.FUP) {
                return p.ipc != PacketCursor.IPC_SUPPRESSED && LastIp.isCompression(p.ipc)
                        ? LastIp.combine(0, p.ipc, p.ip) : 0;
            }
            if (p.type == Pkt.PSBEND || p.type == Pkt.PSB || p.type == Pkt.TIP || p.type == Pkt.TNT
                    || p.type == Pkt.TIP_PGE || p.type == Pkt.TIP_PGD || p.type == Pkt.OVF) {
                return 0;
            }
        }
        return 0;
    }

    /** The packets up to {@code end} are read: their time is the failure's. */
    private int needsCode(long from, long end) {
        Pkt p = scratch;
        in.seek(from);
        while (in.position() < end && in.next(p) >= 0) {
            if (FullIpScan.timing(p.type)) {
                time.apply(p);
            }
        }
        // the error's offset as for a packet in hand: the packet the decoder looks at next (pads skipped)
        long next = end;
        while (in.next(p) >= 0 && p.type == Pkt.PAD) {
            next = in.position();
        }
        needNext = next;
        in.seek(end);
        needEnd = end;
        needStop = -1;
        return NEEDS_CODE;
    }

    /**
     * Back to where the decode stood ({@code resume}: past the packet in hand, which the decode still holds), so it
     * takes the packets as usual, up to {@code stop} and on. Not to the start of that packet: the decode would read it
     * a second time, and the next walk would start one packet further back each time.
     */
    private int carryOn(long resume, long stop) {
        in.seek(resume);
        needStop = stop;
        needEnd = -1;
        return 0;
    }

    private boolean restartFup;
    private boolean restartPsb;

    /** Whether the last {@link #restartAtFullIp} stopped at a PSB. */
    public boolean restartedAtPsb() {
        return restartPsb;
    }
    private long restartTsc = -1;

    /** perf's time at the packet with the full IP {@link #restartAtFullIp} found (-1: no perf clock). */
    public long restartTsc() {
        return restartTsc;
    }

    /** Whether the last {@link #restartAtFullIp} found its full IP in a FUP. */
    public boolean restartedAtFup() {
        return restartFup;
    }

    /** The IP the last IP packet gave (its compression resolved against the one before). */
    public long lastPacketIp() {
        return lastIp;
    }

    private long restartFrom = -1;

    /**
     * The next {@link #restartAtFullIp} scans from {@code offset}, the start of a packet already read: where perf
     * failed before it (walking to a FUP whose TIP or TIP.PGD came with it as one event), its scan reads that packet.
     */
    public void restartFrom(long offset) {
        restartFrom = offset;
    }

    /** The offset {@link #walkToNeed} stopped before when it carried on (-1: none). */
    public long carryOnAt() {
        return needStop;
    }

    /**
     * After an error: drop the events in hand and the last IP, and go on at the next packet that gives a full IP (or
     * a PSB/OVF), see {@link FullIpScan}. Timing packets on the way still move the time. Returns 0, or EOS, or the
     * packet layer's error (the caller then looks for the next PSB).
     */
    public int restartAtFullIp() {
        if (packet.type == INVALID) {
            return status < 0 ? status : PtError.EOS;
        }
        long from = in.position() - (bound ? 0 : packet.size); // a bound IP packet has been used up
        if (needEnd >= 0) {
            from = needEnd; // perf failed at that packet: its scan starts past it
            needEnd = -1;
        } else if (restartFrom >= 0) {
            from = restartFrom;
        }
        restartFrom = -1;
        Pkt p = scratch;
        long at = FullIpScan.find(in, from, p);
        if (at < 0) {
            packet.type = INVALID; // where the scan stopped: offset() names the bytes that are no packet
            packet.size = 0;
            status = (int) at;
            return status;
        }
        in.seek(from);
        while (in.position() < at && in.next(p) >= 0) {
            if (FullIpScan.timing(p.type)) {
                time.apply(p);
            }
        }
        restartFup = false;
        restartPsb = false;
        long ipAt = at;
        in.seek(at);
        while (in.next(p) >= 0) {
            if (p.type == Pkt.FUP || p.type == Pkt.TIP || p.type == Pkt.TIP_PGE || p.type == Pkt.TIP_PGD
                    || p.type == Pkt.PSB || p.type == Pkt.OVF) {
                restartFup = p.type == Pkt.FUP;
                restartPsb = p.type == Pkt.PSB;
                ipAt = p.offset;
                break;
            }
        }
        restartTsc = time.perfTimeAt(in, at, ipAt);
        in.seek(at);
        queued = 0;
        event = null;
        bound = false;
        lastIp = 0;
        haveIp = false;
        ipSuppressed = false;
        modeExecValid = false; // the next MODE.Exec is news: one the scan passed may have changed the mode
        enabled = true;
        status = 0;
        fetchPacket();
        return 0;
    }

    private int start() {
        status = 0;
        fetchPacket();
        if (packet.type == Pkt.PSB) {
            int err = decodePsb();
            return Math.min(err, 0);
        }
        if (packet.type == INVALID) {
            return status < 0 ? status : PtError.INTERNAL;
        }
        return PtError.NOSYNC;
    }

    /** Offset where the current PSB segment started being read (for resync progress checks). */
    public long position() {
        return in.position();
    }

    /**
     * Decodes the next event into {@code out}. Returns 0, or a negative error (EOS at the end).
     */
    public int next(Event out) {
        int err;
        target = out;
        while (true) {
            err = decodePacket();
            if (err <= 0) {
                break;
            }
            if (event != null) {
                err = PtError.INTERNAL;
                break;
            }
            bound = false;
            fetchPacket();
        }
        target = null;
        if (err < 0) {
            return err;
        }
        if (event != out) {
            out.copyFrom(event);
        }
        event = null;
        return 0;
    }

    /**
     * The counting decoder's TNT lane: when the next event is a plain TNT (the packets ahead are a run of timing packets
     * whose time nobody reads, then a TNT-8), puts it into {@code out} as {@link #next} would, reading the packet after
     * it through {@link PacketInput#nextTnt} where it can, and returns true. Returns false, having moved nothing or only
     * past the timing run (as {@link #next} would have), when the general path must decide.
     */
    public boolean nextTnt(Event out) {
        if (status != 0 || event != null || !enabled) {
            return false;
        }
        Pkt p = packet;
        while (p.type == Pkt.CYC && p.small != 0) {
            if ((p.small & 2) != 0) {
                time.mtcSkipped();
            }
            bound = false;
            fetchPacket();
            if (status != 0) {
                return false;
            }
        }
        if (p.type != Pkt.TNT) {
            return false;
        }
        out.type = Event.TNT;
        out.tntBits = p.tntBits;
        out.tntSize = p.tntSize;
        out.statusUpdate = false;
        out.ipSuppressed = false;
        out.hasTsc = false;
        eventTime(out);
        out.offset = offset();
        int r = pastSeam ? -1 : in.nextTnt(p);
        if (r < 0) {
            fetchPacket();
        } else if (r == 0) {
            time.packet(p.type);
        } else if (r != 0) {
            time.mtcSkipped(); // the run the lane passed held an MTC, as if the next call had read it
        }
        return true;
    }

    private int decodePacket() {
        Pkt p = packet;
        // The packets of the hot loop first, the rest in decodeOther: small enough for the JIT to inline.
        switch (p.type) {
            case Pkt.TNT:
                return decodeTnt(p);
            case Pkt.TIP:
                return decodeTip(p);
            case Pkt.CYC:
                if (p.small == 1) {
                    return 1; // a run of CYC whose time nobody reads (CursorInput#skipTiming)
                }
                return decodeOther(p);
            default:
                return decodeOther(p);
        }
    }

    private int decodeOther(Pkt p) {
        switch (p.type) {
            case Pkt.TNT:
                return decodeTnt(p);
            case Pkt.PAD:
                return 1;
            case Pkt.FUP:
                return decodeFup(p);
            case Pkt.TIP:
                return decodeTip(p);
            case Pkt.TIP_PGE:
                return decodeTipPge(p);
            case Pkt.TIP_PGD:
                return decodeTipPgd(p);
            case Pkt.CYC:
            case Pkt.MTC:
            case Pkt.TSC:
            case Pkt.TMA: {
                int err = time.apply(p);
                if (p.type == Pkt.MTC) {
                    time.lookahead(in);
                }
                return err < 0 ? err : 1;
            }
            case Pkt.CBR:
                return decodeCbr(p);
            case Pkt.MODE_EXEC:
                return decodeModeExec(p);
            case Pkt.MODE_TSX:
                return decodeModeTsx(p);
            case Pkt.PIP:
                return decodePip(p);
            case Pkt.VMCS:
                return decodeVmcs(p);
            case Pkt.PTW:
                return decodePtw(p);
            case Pkt.PSB: {
                int err = decodePsb();
                if (err <= 0) {
                    return err;
                }
                return decodePacket();
            }
            case Pkt.PSBEND:
                return decodePsbend();
            case Pkt.EXSTOP:
                return decodeExstop(p);
            case Pkt.PWRE:
                return decodePwre(p);
            case Pkt.PWRX:
                return decodePwrx(p);
            case Pkt.MWAIT:
                return decodeMwait(p);
            case Pkt.OVF:
                return decodeOvf();
            case Pkt.STOP:
                return decodeSimple(Event.STOP);
            case Pkt.MNT: {
                Event ev = standalone();
                ev.type = Event.MNT;
                ev.payload = p.payload;
                return publishAndFetch(ev);
            }
            case INVALID:
                return status < 0 ? status : 1;
            case Pkt.TRIG:
                return decodeTrig(p);
            case Pkt.CFE:
                return decodeCfe(p);
            case Pkt.EVD:
                return decodeEvd(p);
            default:
                // TRIG/BBP and unknown packets: nothing for the flow yet.
                return 1;
        }
    }

    private int publishAndFetch(Event ev) {
        eventTime(ev);
        ev.offset = offset();
        event = ev;
        return fetchPacket();
    }

    private int publish(Event ev) {
        ev.offset = offset();
        event = ev;
        return 0;
    }

    private int decodeSimple(int type) {
        Event ev = standalone();
        ev.type = type;
        return publishAndFetch(ev);
    }

    private int decodeCbr(Pkt p) {
        int terr = time.apply(p);
        if (terr < 0) {
            return terr;
        }
        Event ev = standalone();
        ev.type = Event.CBR;
        ev.ratio = (int) p.payload;
        return publishAndFetch(ev);
    }

    private int decodeTnt(Pkt p) {
        if (!enabled) {
            return PtError.BAD_CONTEXT;
        }
        Event ev = standaloneLight();
        ev.type = Event.TNT;
        ev.tntBits = p.tntBits;
        ev.tntSize = p.tntSize;
        return publishAndFetch(ev);
    }

    // ---------------------------------------------------------------- PSB+

    private long syncOffset = -1;

    /** Offset of the last PSB the decoder read (where a resync restarts). */
    /** The IP of the last PSB+'s FUP (0: none), even one BDM70 says not to act on: perf reports it with the PSB. */
    public long headerFupIp() {
        return headerFupIp;
    }

    private long headerFupIp;
    /** The ratio the last PSB+'s CBR gave (-1: none). */
    private int headerCbr = -1;

    /** The ratio the last PSB+'s CBR gave, known before its status updates are reported (-1: none). */
    public int headerCbr() {
        return headerCbr;
    }

    public long syncOffset() {
        return syncOffset;
    }

    /** Where the next PSB segment starts in this decoder's input (-1: none), and the state as this decode reached it. */
    private long seamOffset = -1;
    private SeamState atSeam;
    /**
     * Set once the decode has read that PSB: the decode ends where its PSB+ ends ({@code seamEnd}). Without a known
     * end (a PSB+ cut short), the decode ends before that PSB and takes the state it has there.
     */
    private boolean pastSeam;
    private boolean seamRead;
    private long seamEnd = Long.MAX_VALUE;

    /** The next PSB segment's PSB is at {@code offset}, its PSB+ ends at {@code headerEnd} (-1: unknown; offset -1: none). */
    void markSeamAt(long offset, long headerEnd) {
        seamOffset = offset;
        atSeam = null;
        pastSeam = offset >= 0 && headerEnd < 0;
        seamRead = false;
        seamEnd = offset < 0 ? Long.MAX_VALUE : headerEnd < 0 ? offset : headerEnd;
    }

    /** perf's fast forward restarts at the last PSB read with its clock {@code atJump} ({@link TimeTracker#perfRepositioned}). */
    void perfRepositioned(ptfence.timing.PerfClock atJump) {
        if (syncOffset >= 0) {
            time.perfRepositioned(in, syncOffset, atJump);
        }
    }

    /** True once this decode has read the marked PSB. */
    boolean pastSeam() {
        return seamRead;
    }

    private SeamState seamState() {
        return SeamState.of(config, time, modeExecValid, csl, csd, iflag, -1); // the flow decoder fills its mode in
    }

    /** The state just before the PSB at the mark (after any resync there), or null if the decode never read it. */
    SeamState atSeam() {
        return atSeam;
    }

    private int decodePsb() {
        syncOffset = offset();
        if (syncOffset == seamOffset) {
            pastSeam = true;
            seamRead = true;
        }
        if (syncOffset == seamOffset && atSeam == null) {
            atSeam = seamState();
        }
        if (queued > 0) {
            return PtError.BAD_CONTEXT;
        }
        haveIp = false;
        ipSuppressed = false;
        lastIp = 0;
        headerFupIp = 0;
        headerCbr = -1;
        enabled = false;
        Event status0 = enqueue(EVB_PSBEND);
        status0.statusUpdate = true;
        int psbendSlot = queued - 1;
        while (true) {
            fetchPacket();
            int err = 0;
            Pkt p = packet;
            switch (p.type) {
                case Pkt.FUP -> err = headerFup(p);
                case Pkt.MODE_EXEC -> err = headerModeExec(p);
                case Pkt.MODE_TSX -> {
                    Event ev = enqueue(EVB_PSBEND);
                    ev.statusUpdate = true;
                    ev.type = Event.TSX;
                    ev.speculative = p.flagA;
                    ev.aborted = p.flagB;
                }
                case Pkt.PIP -> {
                    Event ev = enqueue(EVB_PSBEND);
                    ev.statusUpdate = true;
                    ev.type = Event.ASYNC_PAGING;
                    ev.cr3 = p.payload;
                    ev.nonRoot = p.flagA;
                }
                case Pkt.VMCS -> {
                    Event ev = enqueue(EVB_PSBEND);
                    ev.statusUpdate = true;
                    ev.type = Event.ASYNC_VMCS;
                    ev.base = p.payload;
                }
                case Pkt.MNT -> {
                    Event ev = enqueue(EVB_PSBEND);
                    ev.type = Event.MNT;
                    ev.payload = p.payload;
                }
                case Pkt.CBR -> {
                    err = time.applyHeader(p);
                    headerCbr = (int) p.payload;
                    Event ev = enqueue(EVB_PSBEND);
                    ev.statusUpdate = true;
                    ev.type = Event.CBR;
                    ev.ratio = (int) p.payload;
                }
                case Pkt.TSC, Pkt.TMA, Pkt.MTC, Pkt.CYC -> err = time.applyHeader(p);
                case Pkt.PSBEND -> {
                    Event ev = queue[psbendSlot];
                    if (enabled) {
                        ev.type = Event.ENABLED;
                    } else {
                        ev.type = Event.DISABLED;
                        ev.ipSuppressed = true;
                    }
                    return 1;
                }
                case Pkt.OVF -> {
                    if (enabled) {
                        queue[psbendSlot].type = Event.ENABLED;
                    } else {
                        dequeue(EVB_PSBEND);
                    }
                    return 1;
                }
                case Pkt.PAD -> { }
                case INVALID -> err = status;
                default -> err = PtError.BAD_CONTEXT;
            }
            if (err < 0) {
                return err;
            }
        }
    }

    private int headerFup(Pkt p) {
        boolean en = p.ipc != 0;
        if (en && LastIp.isCompression(p.ipc)) {
            headerFupIp = LastIp.combine(lastIp, p.ipc, p.ip);
        }
        if (config.bdm70 && checkBdm70()) {
            en = false;
        }
        enabled = en;
        if (!en) {
            return 0;
        }
        return updateIp(p);
    }

    /** BDM70: a PSB+ may carry a FUP although tracing is about to be enabled by a TIP.PGE. */
    private boolean checkBdm70() {
        long save = in.position();
        try {
            while (true) {
                if (in.next(scratch) < 0) {
                    return false;
                }
                switch (scratch.type) {
                    case Pkt.TIP_PGE:
                        return true;
                    case Pkt.PAD, Pkt.TSC, Pkt.CBR, Pkt.PSBEND, Pkt.PIP, Pkt.MODE_EXEC, Pkt.MODE_TSX, Pkt.VMCS,
                            Pkt.TMA, Pkt.MTC, Pkt.CYC, Pkt.MNT:
                        break;
                    default:
                        return false;
                }
            }
        } finally {
            in.seek(save);
        }
    }

    private int headerModeExec(Pkt p) {
        boolean pcsl = p.flagA;
        boolean pcsd = p.flagB;
        boolean pif = p.flagC;
        if (modeExecValid) {
            if (config.iflagsEvents && iflag != pif) {
                return PtError.BAD_STATUS_UPDATE;
            }
            if (csd != pcsd || csl != pcsl) {
                return PtError.BAD_STATUS_UPDATE;
            }
        } else {
            modeExecValid = true;
            iflag = pif;
            csd = pcsd;
            csl = pcsl;
        }
        Event ev = enqueue(EVB_PSBEND);
        ev.statusUpdate = true;
        ev.type = Event.EXEC_MODE;
        ev.mode = execMode(pcsl, pcsd);
        if (config.iflagsEvents) {
            Event fl = enqueue(EVB_PSBEND);
            fl.statusUpdate = true;
            fl.type = Event.IFLAGS;
            fl.iflag = pif;
        }
        return 0;
    }

    static int execMode(boolean csl, boolean csd) {
        if (csl) {
            return csd ? ptfence.insn.ExecMode.UNKNOWN : ptfence.insn.ExecMode.BITS64;
        }
        return csd ? ptfence.insn.ExecMode.BITS32 : ptfence.insn.ExecMode.BITS16;
    }

    private int decodePsbend() {
        Event ev = dequeue(EVB_PSBEND);
        if (ev == null) {
            return 1;
        }
        int err = 0;
        switch (ev.type) {
            case Event.ENABLED, Event.EXEC_MODE, Event.IFLAGS, Event.TSX, Event.ASYNC_PAGING, Event.ASYNC_VMCS -> err = eventIp(ev);
            case Event.DISABLED, Event.CBR, Event.MNT -> { }
            default -> err = PtError.BAD_CONTEXT;
        }
        if (err < 0) {
            return err;
        }
        eventTime(ev);
        return publish(ev);
    }

    // ---------------------------------------------------------------- IP packets

    private int decodeFup(Pkt p) {
        int err = updateIp(p);
        if (err < 0) {
            return err;
        }
        if (pending(EVB_FUP_BOUND)) {
            bound = true;
        }
        Event ev = dequeue(EVB_FUP | EVB_FUP_BOUND);
        if (ev == null) {
            if (bound) {
                return 1;
            }
            err = queryIp();
            if (err < 0) {
                return err;
            }
            Event ab = enqueue(EVB_TIP);
            ab.type = Event.ASYNC_BRANCH;
            ab.from = lastIp;
            return 1;
        }
        switch (ev.type) {
            case Event.OVERFLOW -> {
                err = eventIp(ev);
                enabled = true;
            }
            case Event.TSX, Event.EXSTOP, Event.MWAIT, Event.PTWRITE, Event.EXEC_MODE, Event.IFLAGS,
                    Event.INTERRUPT, Event.IRET, Event.SMI, Event.INIT, Event.VMENTRY, Event.VMEXIT,
                    Event.SHUTDOWN, Event.UINTR, Event.UIRET, Event.SWINTR, Event.SYSCALL, Event.TRIG -> {
                eventTime(ev);
                err = eventIp(ev);
            }
            case Event.RSM, Event.SIPI -> {
                eventTime(ev);
                if (!ev.ipSuppressed) {
                    return PtError.INTERNAL;
                }
            }
            case Event.IGNORE -> {
                event = null;
                return decodeFup(p);
            }
            default -> err = PtError.BAD_CONTEXT;
        }
        if (err < 0) {
            return err;
        }
        return publish(ev);
    }

    private int decodeTipEvent() {
        bound = true;
        Event async = find(EVB_TIP, Event.ASYNC_BRANCH);
        if (async != null) {
            // Deliver the asynchronous branch before other TIP-bound events.
            int idx = indexOf(async);
            moveToFront(idx);
            Event ev = dequeue(EVB_TIP);
            int err = eventIp(ev);
            if (err < 0) {
                return err;
            }
            eventTime(ev);
            return publish(ev);
        }
        Event ev = standaloneLight();
        ev.type = Event.TIP;
        int err = eventIp(ev);
        if (err < 0) {
            return err;
        }
        eventTime(ev);
        return publish(ev);
    }

    private int indexOf(Event e) {
        for (int i = 0; i < queued; i++) {
            if (queue[i] == e) {
                return i;
            }
        }
        return -1;
    }

    /** Swaps entry {@code idx} with the first entry carrying the same binding (libipt swaps, keeping others' order). */
    private void moveToFront(int idx) {
        int b = bindings[idx];
        for (int i = 0; i < idx; i++) {
            if ((bindings[i] & b) != 0) {
                Event t = queue[i];
                queue[i] = queue[idx];
                queue[idx] = t;
                int tb = bindings[i];
                bindings[i] = bindings[idx];
                bindings[idx] = tb;
                return;
            }
        }
    }

    private int decodeTip(Pkt p) {
        if (!enabled) {
            return PtError.BAD_CONTEXT;
        }
        int err = updateIp(p);
        if (err < 0) {
            return err;
        }
        if (!bound) {
            return decodeTipEvent();
        }
        Event ev = dequeue(EVB_TIP);
        if (ev == null) {
            return 1;
        }
        switch (ev.type) {
            case Event.EXEC_MODE, Event.IFLAGS, Event.ASYNC_PAGING, Event.ASYNC_VMCS -> err = eventIp(ev);
            case Event.IGNORE -> {
                event = null;
                return decodeTip(p);
            }
            default -> err = PtError.BAD_CONTEXT;
        }
        if (err < 0) {
            return err;
        }
        eventTime(ev);
        return publish(ev);
    }

    private int decodeTipPge(Pkt p) {
        int err = updateIp(p);
        if (err < 0) {
            return err;
        }
        if (!bound) {
            Event ev = standalone();
            ev.type = Event.ENABLED;
            err = eventIp(ev);
            if (err < 0) {
                return err;
            }
            enabled = true;
            bound = true;
            eventTime(ev);
            return publish(ev);
        }
        Event ev = dequeue(EVB_TIP);
        if (ev == null) {
            return 1;
        }
        switch (ev.type) {
            case Event.EXEC_MODE, Event.IFLAGS -> err = eventIp(ev);
            case Event.IGNORE -> {
                event = null;
                return decodeTipPge(p);
            }
            default -> err = PtError.BAD_CONTEXT;
        }
        if (err < 0) {
            return err;
        }
        eventTime(ev);
        return publish(ev);
    }

    private int decodeTipPgd(Pkt p) {
        int err = updateIp(p);
        if (err < 0) {
            return err;
        }
        Event ev = dequeue(EVB_TIP);
        if (ev == null) {
            if (bound) {
                return 1;
            }
            ev = standalone();
            ev.type = Event.DISABLED;
            err = eventIp(ev);
            if (err < 0) {
                return err;
            }
            enabled = false;
            return publishAndFetch(ev);
        }
        switch (ev.type) {
            case Event.ASYNC_BRANCH -> {
                long at = ev.from;
                ev.type = Event.ASYNC_DISABLED;
                ev.from = at;
                err = eventIp(ev);
                enabled = false;
                bound = true;
            }
            case Event.ASYNC_PAGING, Event.ASYNC_VMCS, Event.EXEC_MODE, Event.IFLAGS -> {
                if (ev.type != Event.EXEC_MODE && ev.type != Event.IFLAGS && !bound) {
                    return PtError.INTERNAL;
                }
                ev.ipSuppressed = true;
            }
            default -> err = PtError.BAD_CONTEXT;
        }
        if (err < 0) {
            return err;
        }
        eventTime(ev);
        return publish(ev);
    }

    // ---------------------------------------------------------------- other packets

    private int decodeModeExec(Pkt p) {
        boolean pcsl = p.flagA;
        boolean pcsd = p.flagB;
        boolean pif = p.flagC;
        int n = 0;
        if (!modeExecValid || csl != pcsl || csd != pcsd) {
            Event ev = enqueue(EVB_TIP | EVB_FUP_BOUND);
            ev.type = Event.EXEC_MODE;
            ev.mode = execMode(pcsl, pcsd);
            csl = pcsl;
            csd = pcsd;
            n++;
        }
        if (config.iflagsEvents && (!modeExecValid || iflag != pif)) {
            Event ev = enqueue(EVB_TIP | EVB_FUP_BOUND);
            ev.type = Event.IFLAGS;
            ev.iflag = pif;
            iflag = pif;
            n++;
        }
        if (n == 0) {
            Event ev = enqueue(EVB_TIP | EVB_FUP_BOUND);
            ev.type = Event.IGNORE;
        }
        modeExecValid = true;
        return 1;
    }

    private int decodeModeTsx(Pkt p) {
        if (enabled) {
            Event ev = enqueue(p.flagB ? EVB_FUP : EVB_FUP_BOUND);
            ev.type = Event.TSX;
            ev.speculative = p.flagA;
            ev.aborted = p.flagB;
            return 1;
        }
        Event ev = standalone();
        ev.type = Event.TSX;
        ev.speculative = p.flagA;
        ev.aborted = p.flagB;
        ev.ipSuppressed = true;
        return publishAndFetch(ev);
    }

    private int decodePip(Pkt p) {
        if (find(EVB_TIP, Event.ASYNC_BRANCH) != null) {
            Event ev = enqueue(EVB_TIP);
            ev.type = Event.ASYNC_PAGING;
            ev.cr3 = p.payload;
            ev.nonRoot = p.flagA;
            return 1;
        }
        Event ev = standalone();
        ev.type = Event.PAGING;
        ev.cr3 = p.payload;
        ev.nonRoot = p.flagA;
        return publishAndFetch(ev);
    }

    private int decodeVmcs(Pkt p) {
        Event paging = find(EVB_TIP, Event.ASYNC_PAGING);
        if (paging != null) {
            Event copy = enqueue(EVB_TIP);
            copy.copyFrom(paging);
            paging.clear();
            paging.type = Event.ASYNC_VMCS;
            paging.base = p.payload;
            return 1;
        }
        if (find(EVB_TIP, Event.ASYNC_BRANCH) != null) {
            Event ev = enqueue(EVB_TIP);
            ev.type = Event.ASYNC_VMCS;
            ev.base = p.payload;
            return 1;
        }
        Event ev = standalone();
        ev.type = Event.VMCS;
        ev.base = p.payload;
        return publishAndFetch(ev);
    }

    private int decodePtw(Pkt p) {
        if (p.flagA) {
            Event ev = enqueue(EVB_FUP_BOUND);
            ev.type = Event.PTWRITE;
            ev.payload = p.payload;
            return 1;
        }
        Event ev = standalone();
        ev.type = Event.PTWRITE;
        ev.payload = p.payload;
        ev.ipSuppressed = true;
        return publishAndFetch(ev);
    }

    private int decodeExstop(Pkt p) {
        Event mw = dequeue(EVB_EXSTOP);
        if (mw != null) {
            held.copyFrom(mw);
            mw = held;
        }
        if (mw != null && mw.type == Event.MWAIT) {
            if (p.flagA) {
                Event copy = enqueue(EVB_FUP_BOUND);
                copy.copyFrom(mw);
            } else {
                Event ev = standalone();
                ev.copyFrom(mw);
                ev.ip = 0;
                ev.ipSuppressed = true;
                eventTime(ev);
                return publish(ev);
            }
        }
        if (p.flagA) {
            Event ev = enqueue(EVB_FUP_BOUND);
            ev.type = Event.EXSTOP;
            return 1;
        }
        Event ev = standalone();
        ev.type = Event.EXSTOP;
        ev.ipSuppressed = true;
        return publishAndFetch(ev);
    }

    // ---------------------------------------------------------------- event trace

    private static final int CFE_INTR = 1;
    private static final int CFE_IRET = 2;
    private static final int CFE_SMI = 3;
    private static final int CFE_RSM = 4;
    private static final int CFE_SIPI = 5;
    private static final int CFE_INIT = 6;
    private static final int CFE_VMENTRY = 7;
    private static final int CFE_VMEXIT = 8;
    private static final int CFE_VMEXIT_INTR = 9;
    private static final int CFE_SHUTDOWN = 10;
    private static final int CFE_UINTR = 12;
    private static final int CFE_UIRET = 13;
    private static final int CFE_SWINTR = 14;
    private static final int CFE_SYSCALL = 15;

    private static final int EVD_CR2 = 0;
    private static final int EVD_VMXQ = 1;
    private static final int EVD_VMXR = 2;

    /** Moves {@code e} (a standalone or dequeued event) to the end of the queue with a new binding. */
    private void requeue(Event e, int binding) {
        held.copyFrom(e);
        Event q = enqueue(binding);
        q.copyFrom(held);
    }

    /**
     * CFE with IP binds to the next FUP; without IP it binds to the next FUP if tracing is enabled (the
     * asynchronous branch's source) and stands alone otherwise.
     */
    private int cfeBind(Event ev, boolean ip, boolean fupWhenEnabled) {
        if (ip) {
            requeue(ev, EVB_FUP_BOUND);
            return 1;
        }
        if (fupWhenEnabled && enabled) {
            requeue(ev, EVB_FUP);
            return 1;
        }
        ev.ipSuppressed = true;
        return publishAndFetch(ev);
    }

    private int decodeCfe(Pkt p) {
        int type = p.small;
        boolean ip = p.flagA;
        int vector = (int) p.payload;
        Event pendingEvd = dequeue(EVB_CFE);
        if (pendingEvd != null) {
            held.copyFrom(pendingEvd);
            pendingEvd = held;
        }
        switch (type) {
            case CFE_INTR -> {
                Event ev = standalone();
                if (pendingEvd != null) {
                    ev.copyFrom(pendingEvd);
                } else {
                    ev.type = Event.INTERRUPT;
                }
                if (ev.type != Event.INTERRUPT) {
                    return PtError.BAD_CONTEXT;
                }
                ev.vector = vector;
                return cfeBind(ev, ip, true);
            }
            case CFE_VMEXIT, CFE_VMEXIT_INTR -> {
                Event ev = standalone();
                if (pendingEvd != null) {
                    ev.copyFrom(pendingEvd);
                } else {
                    ev.type = Event.VMEXIT;
                }
                if (ev.type != Event.VMEXIT) {
                    return PtError.BAD_CONTEXT;
                }
                if (type == CFE_VMEXIT_INTR) {
                    ev.hasVector = true;
                    ev.vector = vector;
                }
                return cfeBind(ev, ip, true);
            }
            default -> { }
        }
        if (pendingEvd != null) {
            return PtError.BAD_CONTEXT;
        }
        Event ev = standalone();
        switch (type) {
            case CFE_IRET -> {
                ev.type = Event.IRET;
                return cfeBind(ev, ip, false);
            }
            case CFE_SMI -> {
                ev.type = Event.SMI;
                return cfeBind(ev, ip, true);
            }
            case CFE_RSM, CFE_SIPI -> {
                if (ip) {
                    return PtError.BAD_PACKET;
                }
                ev.type = type == CFE_RSM ? Event.RSM : Event.SIPI;
                ev.vector = vector;
                ev.ipSuppressed = true;
                if (enabled) {
                    requeue(ev, EVB_FUP);
                    return 1;
                }
                return publishAndFetch(ev);
            }
            case CFE_INIT -> {
                ev.type = Event.INIT;
                return cfeBind(ev, ip, true);
            }
            case CFE_VMENTRY -> {
                ev.type = Event.VMENTRY;
                return cfeBind(ev, ip, false);
            }
            case CFE_SHUTDOWN -> {
                ev.type = Event.SHUTDOWN;
                return cfeBind(ev, ip, false);
            }
            case CFE_UINTR -> {
                ev.type = Event.UINTR;
                ev.vector = vector;
                return cfeBind(ev, ip, true);
            }
            case CFE_UIRET -> {
                ev.type = Event.UIRET;
                return cfeBind(ev, ip, false);
            }
            case CFE_SWINTR -> {
                ev.type = Event.SWINTR;
                ev.vector = vector;
                return cfeBind(ev, ip, true);
            }
            case CFE_SYSCALL -> {
                ev.type = Event.SYSCALL;
                return cfeBind(ev, ip, false);
            }
            default -> {
                if (ip) {
                    Event ig = enqueue(EVB_FUP_BOUND);
                    ig.type = Event.IGNORE;
                }
                return 1;
            }
        }
    }

    private int decodeEvd(Pkt p) {
        Event ev = find(EVB_CFE, Event.VMEXIT);
        Event any = firstWith(EVB_CFE);
        switch (p.small) {
            case EVD_CR2 -> {
                if (any != null) {
                    return PtError.BAD_CONTEXT;
                }
                Event e = enqueue(EVB_CFE);
                e.type = Event.INTERRUPT;
                e.hasCr2 = true;
                e.cr2 = p.payload;
                return 1;
            }
            case EVD_VMXQ, EVD_VMXR -> {
                if (any != null && ev == null) {
                    return PtError.BAD_CONTEXT;
                }
                if (ev == null) {
                    ev = enqueue(EVB_CFE);
                    ev.type = Event.VMEXIT;
                }
                if (p.small == EVD_VMXQ) {
                    if (ev.hasVmxq) {
                        return PtError.BAD_CONTEXT;
                    }
                    ev.hasVmxq = true;
                    ev.vmxq = p.payload;
                } else {
                    if (ev.hasVmxr) {
                        return PtError.BAD_CONTEXT;
                    }
                    ev.hasVmxr = true;
                    ev.vmxr = p.payload;
                }
                return 1;
            }
            default -> {
                return 1;
            }
        }
    }

    private Event firstWith(int evb) {
        for (int i = 0; i < queued; i++) {
            if ((bindings[i] & evb) != 0) {
                return queue[i];
            }
        }
        return null;
    }

    /** TRIG: flagA = IP bit, flagB = ICNT valid, flagC = mult, payload = TRBV, payload2 = ICNT. */
    private int decodeTrig(Pkt p) {
        if (p.flagA) {
            if (!p.flagB || p.payload2 != 0) {
                return PtError.BAD_PACKET;
            }
            Event ev = enqueue(EVB_FUP_BOUND);
            ev.type = Event.TRIG;
            ev.trbv = (int) p.payload;
            ev.mult = p.flagC;
            return 1;
        }
        Event ev = standalone();
        ev.type = Event.TRIG;
        ev.trbv = (int) p.payload;
        ev.mult = p.flagC;
        if (p.flagB) {
            if (p.payload2 != 0 && !enabled) {
                return PtError.BAD_PACKET;
            }
            ev.icnt = (int) p.payload2;
        } else {
            ev.ipSuppressed = true;
        }
        return publishAndFetch(ev);
    }

    private int decodeMwait(Pkt p) {
        Event ev = enqueue(EVB_EXSTOP);
        ev.type = Event.MWAIT;
        ev.hints = (int) p.payload;
        ev.ext = (int) p.payload2;
        return 1;
    }

    private int decodePwre(Pkt p) {
        Event ev = enqueue(EVB_PWRX);
        ev.type = Event.PWRE;
        ev.state = (int) p.payload;
        ev.subState = (int) p.payload2;
        ev.hw = p.flagA;
        eventTime(ev);
        return 1;
    }

    private int decodePwrx(Pkt p) {
        Event pwre = dequeue(EVB_PWRX);
        if (pwre != null && pwre.type == Event.PWRE) {
            Event ev = standalone();
            ev.copyFrom(pwre);
            return publish(ev);
        }
        Event ev = standalone();
        ev.type = Event.PWRX;
        ev.last = (int) p.payload;
        ev.deepest = (int) p.payload2;
        ev.interrupt = (p.small & 1) != 0;
        ev.store = (p.small & 2) != 0;
        ev.autonomous = (p.small & 4) != 0;
        return publishAndFetch(ev);
    }

    private int decodeOvf() {
        int err = decodePsbend();
        if (err <= 0) {
            return err;
        }
        while (!enabled) {
            Event ev = dequeue(EVB_FUP_BOUND | EVB_FUP | EVB_TIP | EVB_EXSTOP | EVB_PWRX | EVB_CFE);
            if (ev == null) {
                break;
            }
            switch (ev.type) {
                case Event.EXSTOP, Event.MWAIT, Event.PTWRITE, Event.TSX, Event.EXEC_MODE, Event.IFLAGS,
                        Event.INTERRUPT, Event.IRET, Event.SMI, Event.INIT, Event.VMENTRY, Event.VMEXIT,
                        Event.SHUTDOWN, Event.UINTR, Event.UIRET, Event.TRIG, Event.SWINTR, Event.SYSCALL -> {
                    ev.ipSuppressed = true;
                    return publish(ev);
                }
                case Event.PWRE, Event.RSM, Event.SIPI -> {
                    return publish(ev);
                }
                default -> { }
            }
        }
        // Reset the decoder state but keep timing.
        enabled = false;
        bound = false;
        modeExecValid = false;
        lastIp = 0;
        haveIp = false;
        ipSuppressed = false;
        queued = 0;
        time.overflow(config.keepTcalOnOvf);

        int offset = findOvfFup();
        if (offset <= 0) {
            if (config.skd010) {
                int r = handleSkd010();
                if (r <= 0) {
                    return r;
                }
            }
            if (config.apl11 && offset == PtError.BAD_CONTEXT) {
                int r = handleApl11();
                if (r <= 0) {
                    return r;
                }
            }
            if ((offset < 0) && (offset != PtError.EOS)) {
                return offset;
            }
            Event ev = standalone();
            ev.type = Event.OVERFLOW;
            ev.ipSuppressed = true;
            return publishAndFetch(ev);
        }
        if (config.apl12) {
            int r = handleApl12(offset);
            if (r <= 0) {
                return r;
            }
        }
        Event ev = enqueue(EVB_FUP_BOUND);
        ev.type = Event.OVERFLOW;
        eventTime(ev);
        return 1;
    }

    /** OVF resolved with tracing disabled at a packet found ahead: continue after {@code afterPacket}. */
    private int recoverOvfDisabled(long afterPacket) {
        in.seek(afterPacket);
        Event ev = standalone();
        ev.type = Event.OVERFLOW;
        ev.ipSuppressed = true;
        eventTime(ev);
        ev.offset = offset();
        event = ev;
        return fetchPacket();
    }

    /**
     * OVF resolved with tracing enabled at the IP of {@code ipPacket}; {@code current} (ending at
     * {@code afterCurrent}) becomes the packet the decoder looks at next.
     */
    private int recoverOvfAtIp(Pkt ipPacket, Pkt current, long afterCurrent) {
        int err = updateIp(ipPacket);
        if (err < 0) {
            return err;
        }
        copyPkt(packet, current);
        in.seek(afterCurrent);
        Event ev = standalone();
        ev.type = Event.OVERFLOW;
        eventTime(ev);
        enabled = true;
        err = eventIp(ev);
        if (err < 0) {
            return err;
        }
        return publish(ev);
    }

    /** SKD010: the FUP after OVF may be missing; find where tracing resumed from later packets. */
    private int handleSkd010() {
        long save = in.position();
        boolean tsxFound = false;
        boolean intx = false;
        boolean abrt = false;
        Pkt p = new Pkt();
        while (true) {
            int st = in.next(p);
            if (st < 0) {
                in.seek(save);
                return st == PtError.EOS ? 1 : st;
            }
            long after = in.position();
            switch (p.type) {
                case Pkt.TIP_PGE, Pkt.TNT, Pkt.OVF, Pkt.STOP, Pkt.MWAIT, Pkt.UNKNOWN -> {
                    in.seek(save);
                    return 1;
                }
                case Pkt.TIP_PGD -> {
                    return recoverOvfDisabled(after);
                }
                case Pkt.MODE_TSX -> {
                    if (tsxFound) {
                        in.seek(save);
                        return 1;
                    }
                    tsxFound = true;
                    intx = p.flagA;
                    abrt = p.flagB;
                }
                case Pkt.FUP -> {
                    if (tsxFound) {
                        Event ev = enqueue(EVB_FUP_BOUND);
                        ev.type = Event.TSX;
                        ev.speculative = intx;
                        ev.aborted = abrt;
                    }
                    return recoverOvfAtIp(p, p, after);
                }
                case Pkt.TIP -> {
                    int err = recoverOvfAtIp(p, p, after);
                    if (err < 0) {
                        return err;
                    }
                    return fetchPacket();
                }
                case Pkt.PSB -> {
                    Pkt fup = new Pkt();
                    int f = findHeaderFup(fup);
                    if (f <= 0) {
                        in.seek(save);
                        return f == PtError.EOS || f == 0 ? 1 : f;
                    }
                    in.seek(after);
                    return recoverOvfAtIp(fup, p, after);
                }
                case Pkt.PSBEND -> {
                    in.seek(save);
                    return PtError.BAD_CONTEXT;
                }
                case Pkt.EXSTOP, Pkt.PTW -> {
                    if (p.flagA) {
                        in.seek(save);
                        return 1;
                    }
                }
                case Pkt.CFE -> {
                    if (p.flagA) {
                        in.seek(save);
                        return 1;
                    }
                }
                default -> { }
            }
        }
    }

    /** The FUP inside the PSB+ that starts at the input's position: 1 (in {@code fup}), 0 if none, or an error. */
    private int findHeaderFup(Pkt fup) {
        long save = in.position();
        try {
            while (true) {
                int st = in.next(fup);
                if (st < 0) {
                    return st;
                }
                switch (fup.type) {
                    case Pkt.FUP:
                        return 1;
                    case Pkt.MODE_EXEC, Pkt.MODE_TSX, Pkt.PIP, Pkt.VMCS, Pkt.MNT, Pkt.TSC, Pkt.CBR, Pkt.TMA, Pkt.MTC,
                            Pkt.CYC, Pkt.PAD:
                        break;
                    case Pkt.PSBEND, Pkt.OVF:
                        return 0;
                    default:
                        return PtError.BAD_CONTEXT;
                }
            }
        } finally {
            in.seek(save);
        }
    }

    /** APL11: an OVF may be followed by a spurious TIP.PGD; treat the overflow as resolved disabled there. */
    private int handleApl11() {
        long save = in.position();
        Pkt p = new Pkt();
        while (true) {
            int st = in.next(p);
            if (st < 0) {
                in.seek(save);
                return st;
            }
            switch (p.type) {
                case Pkt.TIP_PGD -> {
                    return recoverOvfDisabled(in.position());
                }
                case Pkt.TSC, Pkt.CBR, Pkt.TMA, Pkt.MTC, Pkt.CYC, Pkt.PAD, Pkt.MNT, Pkt.CFE, Pkt.EVD, Pkt.TRIG -> { }
                default -> {
                    in.seek(save);
                    return 1;
                }
            }
        }
    }

    /** APL12: an OVF resolved disabled may still be followed by a FUP; look past it for the real resolution. */
    private int handleApl12(int fupEnd) {
        long save = in.position();
        in.seek(save + fupEnd);
        Pkt p = new Pkt();
        while (true) {
            int st = in.next(p);
            if (st < 0) {
                in.seek(save);
                return st == PtError.EOS ? 1 : st;
            }
            switch (p.type) {
                case Pkt.TNT, Pkt.TIP, Pkt.TIP_PGD, Pkt.PSBEND, Pkt.OVF, Pkt.UNKNOWN -> {
                    in.seek(save);
                    return 1;
                }
                case Pkt.PSB -> {
                    Pkt fup = new Pkt();
                    int f = findHeaderFup(fup);
                    if (f != 0) {
                        in.seek(save);
                        return f == PtError.EOS ? 1 : f;
                    }
                    return recoverOvfDisabled(save + fupEnd);
                }
                case Pkt.STOP, Pkt.TIP_PGE -> {
                    return recoverOvfDisabled(save + fupEnd);
                }
                default -> { }
            }
        }
    }

    /** After OVF: bytes to (the end of) the FUP that resolves it, 0 if tracing resumed disabled, or an error. */
    private int findOvfFup() {
        long save = in.position();
        try {
            int offset = 0;
            while (true) {
                int st = in.next(scratch);
                if (st < 0) {
                    return st;
                }
                offset += scratch.size;
                switch (scratch.type) {
                    case Pkt.FUP:
                        return offset;
                    case Pkt.UNKNOWN, Pkt.PAD, Pkt.MNT, Pkt.CBR, Pkt.TSC, Pkt.TMA, Pkt.MTC, Pkt.CYC:
                        break;
                    case Pkt.PSBEND, Pkt.TIP, Pkt.TIP_PGD, Pkt.TNT:
                        return PtError.BAD_CONTEXT;
                    default:
                        return 0;
                }
            }
        } finally {
            in.seek(save);
        }
    }
}

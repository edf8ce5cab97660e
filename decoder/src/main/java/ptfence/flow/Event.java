package ptfence.flow;

/**
 * A trace event as the flow layer sees it: control-flow events (enabled, disabled, interrupt, ...), state
 * changes (exec mode, paging, TSX) and the TNT/TIP payloads that instructions consume. Mutable and reused:
 * events are produced per packet, so the decoder recycles them instead of allocating.
 */
public final class Event {
    public static final int NONE = 0;
    public static final int ENABLED = 1;
    public static final int DISABLED = 2;
    public static final int ASYNC_DISABLED = 3;
    public static final int ASYNC_BRANCH = 4;
    public static final int PAGING = 5;
    public static final int ASYNC_PAGING = 6;
    public static final int OVERFLOW = 7;
    public static final int EXEC_MODE = 8;
    public static final int TSX = 9;
    public static final int STOP = 10;
    public static final int VMCS = 11;
    public static final int ASYNC_VMCS = 12;
    public static final int EXSTOP = 13;
    public static final int MWAIT = 14;
    public static final int PWRE = 15;
    public static final int PWRX = 16;
    public static final int PTWRITE = 17;
    public static final int TICK = 18;
    public static final int CBR = 19;
    public static final int MNT = 20;
    public static final int TIP = 21;
    public static final int TNT = 22;
    public static final int IGNORE = 23;
    public static final int IFLAGS = 24;
    public static final int INTERRUPT = 25;
    public static final int IRET = 26;
    public static final int SMI = 27;
    public static final int RSM = 28;
    public static final int SIPI = 29;
    public static final int INIT = 30;
    public static final int VMENTRY = 31;
    public static final int VMEXIT = 32;
    public static final int SHUTDOWN = 33;
    public static final int UINTR = 34;
    public static final int UIRET = 35;
    public static final int SWINTR = 36;
    public static final int SYSCALL = 37;
    public static final int TRIG = 38;

    public int type;
    public boolean statusUpdate;
    public boolean ipSuppressed;
    /** The event's IP: enable/disable/exec-mode/tsx/overflow/... IP, async branch target, TIP target. */
    public long ip;
    /** Async branch source / async disable location. */
    public long from;
    public boolean resumed;
    public int mode;
    public boolean speculative;
    public boolean aborted;
    public long cr3;
    public boolean nonRoot;
    public long base;
    public int hints;
    public int ext;
    public int state;
    public int subState;
    public boolean hw;
    public int last;
    public int deepest;
    public boolean interrupt;
    public boolean store;
    public boolean autonomous;
    public long payload;
    public int ratio;
    public long tntBits;
    public int tntSize;
    public boolean hasTsc;
    public long tsc;
    public boolean iflag;
    public int vector;
    public boolean hasVector;
    public boolean hasCr2;
    public long cr2;
    public boolean hasVmxr;
    public long vmxr;
    public boolean hasVmxq;
    public long vmxq;
    public int trbv;
    public boolean mult;
    public int icnt;
    /** Trace offset of the packet that completed the event. */
    public long offset;

    void clear() {
        type = NONE;
        statusUpdate = false;
        ipSuppressed = false;
        ip = 0;
        from = 0;
        resumed = false;
        mode = 0;
        speculative = false;
        aborted = false;
        cr3 = 0;
        nonRoot = false;
        base = 0;
        hints = 0;
        ext = 0;
        state = 0;
        subState = 0;
        hw = false;
        last = 0;
        deepest = 0;
        interrupt = false;
        store = false;
        autonomous = false;
        payload = 0;
        ratio = 0;
        tntBits = 0;
        tntSize = 0;
        hasTsc = false;
        tsc = 0;
        offset = 0;
        iflag = false;
        vector = 0;
        hasVector = false;
        hasCr2 = false;
        cr2 = 0;
        hasVmxr = false;
        vmxr = 0;
        hasVmxq = false;
        vmxq = 0;
        trbv = 0;
        mult = false;
        icnt = 0;
    }

    /** This event becomes a copy of {@code o} (a sink that keeps an event past its call). */
    public void copyFrom(Event o) {
        type = o.type;
        statusUpdate = o.statusUpdate;
        ipSuppressed = o.ipSuppressed;
        ip = o.ip;
        from = o.from;
        resumed = o.resumed;
        mode = o.mode;
        speculative = o.speculative;
        aborted = o.aborted;
        cr3 = o.cr3;
        nonRoot = o.nonRoot;
        base = o.base;
        hints = o.hints;
        ext = o.ext;
        state = o.state;
        subState = o.subState;
        hw = o.hw;
        last = o.last;
        deepest = o.deepest;
        interrupt = o.interrupt;
        store = o.store;
        autonomous = o.autonomous;
        payload = o.payload;
        ratio = o.ratio;
        tntBits = o.tntBits;
        tntSize = o.tntSize;
        hasTsc = o.hasTsc;
        tsc = o.tsc;
        offset = o.offset;
        iflag = o.iflag;
        vector = o.vector;
        hasVector = o.hasVector;
        hasCr2 = o.hasCr2;
        cr2 = o.cr2;
        hasVmxr = o.hasVmxr;
        vmxr = o.vmxr;
        hasVmxq = o.hasVmxq;
        vmxq = o.vmxq;
        trbv = o.trbv;
        mult = o.mult;
        icnt = o.icnt;
    }
}

package ptfence.calls;

import java.util.Arrays;

/**
 * One thread's call stack as the trace shows it: level 0 is the root (the function the thread was found in, whose
 * callers the trace never showed), levels 1..{@link #depth} the calls seen since, each with the return address that
 * ends it. The depth is perf's thread-stack depth. Primitive arrays, grown as needed; views keep a number per level
 * ({@link #tag}) for their own use.
 */
public final class ThreadStack {
    /** Deeper than this is taken for a decode gone wrong: the stack is dropped as untrusted. */
    public static final int MAX_DEPTH = 16384;

    final long key;
    final int pid;
    final int tid;
    int depth = -1; // -1: no root yet
    long[] ret = new long[16];
    long[] address = new long[16];
    long[] enterTime = new long[16];
    long[] enterInsns = new long[16];
    long[] enterCycles = new long[16];
    long[] tag = new long[16];
    boolean[] traceEnd = new boolean[16];
    /** Instructions this thread ran so far, and the core cycles CYC packets counted for it. */
    long insns;
    long cycles;
    /** The call the last return ended: its instructions and cycles; -1 when the return matched no call. */
    long returnInsns = -1;
    long returnCycles = -1;
    /** Time of the thread's last item (-1: none). */
    long lastTime = -1;
    int cpu;
    boolean untrusted;
    /** The trace last ended with the root function leaving for untraced code by a jump or a return. */
    boolean rootLeft;
    /** The thread's name as a line printer last looked it up, valid over perf times [commFrom, commUntil). */
    String comm;
    long commFrom;
    long commUntil;
    /** A line printer's head for this thread (comm, pid/tid, [cpu]) and what it was made for. */
    byte[] head;
    String headComm;
    int headCpu;
    SampleFields headFields;
    long rootLeftTime;
    /** perf's --graph-function state of the thread: inside a listed function, entered at this depth. */
    boolean graphShown;
    int graphEntryDepth;

    ThreadStack(long key, int pid, int tid) {
        this.key = key;
        this.pid = pid;
        this.tid = tid;
    }

    /** Calls on the stack above the root (perf's depth); -1 before the thread has a root. */
    public int depth() {
        return depth;
    }

    public int pid() {
        return pid;
    }

    public int tid() {
        return tid;
    }

    /** The CPU the thread last ran on. */
    public int cpu() {
        return cpu;
    }

    /** The entry address of level {@code level}'s function (the root: where the thread was found). */
    public long address(int level) {
        return address[level];
    }

    public long enterTime(int level) {
        return enterTime[level];
    }

    /** The thread's instruction count when level {@code level} was entered. */
    public long enterInsns(int level) {
        return enterInsns[level];
    }

    /** The perf time of the thread's last item (during {@link CallStacks.Listener#ran}: the one before). */
    public long lastTime() {
        return lastTime;
    }

    /**
     * The instructions the call the last item returned from ran, from its first instruction to its return (callees
     * included); -1 if that item returned from no call seen.
     */
    public long returnInsns() {
        return returnInsns;
    }

    /** The core cycles (CYC) of that call; 0 when the trace has no CYC, -1 as {@link #returnInsns}. */
    public long returnCycles() {
        return returnCycles;
    }

    public long insns() {
        return insns;
    }

    /**
     * True once the trace lost this thread's flow (an overflow or an error): its stack since then starts from where
     * the trace resumed, not from where the thread really was.
     */
    public boolean untrusted() {
        return untrusted;
    }

    public long tag(int level) {
        return tag[level];
    }

    public void tag(int level, long value) {
        tag[level] = value;
    }

    void push(long retAddr, long addr, long time, boolean end) {
        int i = ++depth;
        if (i == ret.length) {
            int n = i * 2;
            ret = Arrays.copyOf(ret, n);
            address = Arrays.copyOf(address, n);
            enterTime = Arrays.copyOf(enterTime, n);
            enterInsns = Arrays.copyOf(enterInsns, n);
            enterCycles = Arrays.copyOf(enterCycles, n);
            tag = Arrays.copyOf(tag, n);
            traceEnd = Arrays.copyOf(traceEnd, n);
        }
        ret[i] = retAddr;
        address[i] = addr;
        enterTime[i] = time;
        enterInsns[i] = insns;
        enterCycles[i] = cycles;
        tag[i] = 0;
        traceEnd[i] = end;
    }
}

package ptfence.script;

import ptfence.calls.BranchFlags;

/**
 * The call depth of each thread as perf's thread stack keeps it for callindent (tools/perf/util/thread-stack.c, fed
 * with every branch perf's Intel PT decoder returns): a call pushes its return address (a call to the next
 * instruction does not), a return pops down to the entry of the address it returns to (none if it is not there), a
 * trace begin pops that way too and then the calls made as tracing ended. A new run of trace (perf's trace number)
 * empties a thread's stack. One per CPU's sink; growing arrays, nothing allocated per branch. perf keeps one stack per
 * thread (per CPU only for the idle task): where a thread moves between CPUs, {@link ThreadStacks} carries it.
 */
final class CallDepth {
    /** One thread's stack; a copy of one travels to another CPU's sink when the thread moves ({@link ThreadStacks}). */
    static final class Stack {
        long[] ret = new long[16];
        boolean[] traceEnd = new boolean[16];
        int cnt;
        long traceNr;
        // the last branches (--itrace=l), a ring filled downwards as perf's
        long[] brFrom;
        long[] brTo;
        int[] brFlags;
        int brPos;
        int brNr;
        /** The perf time of the thread's last branch here (MIN_VALUE: none yet). */
        long lastTime = Long.MIN_VALUE;
        /** The run of the thread on this CPU (its start) whose first branch looked for the thread elsewhere. */
        long checkedRun = Long.MAX_VALUE;

        /** A copy of what samples read (the call stack and the last branches), for another CPU. */
        Stack copy() {
            Stack c = new Stack();
            c.ret = java.util.Arrays.copyOf(ret, Math.max(1, cnt));
            c.traceEnd = java.util.Arrays.copyOf(traceEnd, Math.max(1, cnt));
            c.cnt = cnt;
            c.traceNr = traceNr;
            if (brFrom != null) {
                c.brFrom = brFrom.clone();
                c.brTo = brTo.clone();
                c.brFlags = brFlags.clone();
            }
            c.brPos = brPos;
            c.brNr = brNr;
            c.lastTime = lastTime;
            return c;
        }
    }

    /** The size of each thread's ring of last branches (0: none kept). */
    private final int lastBranches;

    /** Whether the idle task keeps last branches too (perf 6.1 gives them to its samples only with call chains). */
    private final boolean idleBranches;

    CallDepth(int lastBranches, boolean idleBranches) {
        this.lastBranches = lastBranches;
        this.idleBranches = idleBranches;
    }

    /** perf's context markers in a call chain (PERF_CONTEXT_USER, PERF_CONTEXT_KERNEL). */
    static final long USER = -512, KERNEL = -128;

    private final java.util.HashMap<Integer, Stack> stacks = new java.util.HashMap<>();
    private int lastTid = Integer.MIN_VALUE;
    private Stack last;

    /** The thread's stack here, made empty on first use. */
    Stack of(int tid) {
        if (tid != lastTid) {
            last = stacks.computeIfAbsent(tid, t -> {
                Stack s = new Stack();
                // perf 6.1 gives the idle task's samples no last branches (seen on every forged recording: its
                // swapper samples carry none, the other threads' do), though it keeps its call stack; with call
                // chains (--itrace=gl) they carry them (seen on the same recordings)
                if (lastBranches > 0 && (t != 0 || idleBranches)) {
                    s.brFrom = new long[lastBranches];
                    s.brTo = new long[lastBranches];
                    s.brFlags = new int[lastBranches];
                }
                return s;
            });
            lastTid = tid;
        }
        return last;
    }

    /** The thread's stack here, or null before its first use. */
    Stack find(int tid) {
        return tid == lastTid ? last : stacks.get(tid);
    }

    /** Empties the stack and starts it on trace run {@code traceNr} (perf's flush where the trace number changed). */
    static void flush(Stack s, long traceNr) {
        s.cnt = 0;
        s.brNr = 0;
        s.brPos = 0;
        s.traceNr = traceNr;
    }

    /**
     * A branch at perf time {@code time} of the thread whose stack is {@code s}, in trace run {@code traceNr}: perf's
     * thread_stack__event.
     */
    void branch(Stack s, long time, long traceNr, int flags, long from, long to, int insnLen) {
        if (traceNr != s.traceNr) {
            flush(s, traceNr);
        }
        s.lastTime = time;
        if (s.brFrom != null) { // perf's thread_stack__update_br_stack: every branch, newest first
            if (s.brPos == 0) {
                s.brPos = lastBranches;
            }
            s.brPos--;
            s.brFrom[s.brPos] = from;
            s.brTo[s.brPos] = to;
            s.brFlags[s.brPos] = flags;
            if (s.brNr < lastBranches) {
                s.brNr++;
            }
        }
        if ((flags & BranchFlags.CALL) != 0) {
            if (to == 0) {
                return;
            }
            long retAddr = from + insnLen;
            if (retAddr == to) {
                return; // a call to the next instruction (getting the IP) does not nest
            }
            if (s.cnt == s.ret.length) {
                s.ret = java.util.Arrays.copyOf(s.ret, s.cnt * 2);
                s.traceEnd = java.util.Arrays.copyOf(s.traceEnd, s.cnt * 2);
            }
            s.ret[s.cnt] = retAddr;
            s.traceEnd[s.cnt] = (flags & BranchFlags.TRACE_END) != 0;
            s.cnt++;
        } else if ((flags & BranchFlags.TRACE_BEGIN) != 0) {
            pop(s, to);
            while (s.cnt > 0 && s.traceEnd[s.cnt - 1]) {
                s.cnt--;
            }
        } else if ((flags & BranchFlags.RETURN) != 0 && from != 0) {
            pop(s, to);
        }
    }

    private static void pop(Stack s, long retAddr) {
        if (retAddr == 0) {
            return;
        }
        for (int i = s.cnt; i > 0; i--) {
            if (s.ret[i - 1] == retAddr) {
                s.cnt = i - 1;
                return;
            }
        }
    }

    /**
     * perf's thread_stack__sample: the call chain of a sample at {@code ip} into {@code out} (a context marker
     * ({@link #USER}, {@link #KERNEL}) ahead of each run of addresses of one side of {@code kernelStart}; the sample's own
     * address, then the return addresses innermost first), at most {@code size} entries, from stack {@code s} (null:
     * none); returns how many.
     */
    static int chain(Stack s, long ip, long kernelStart, long[] out, int size) {
        if (size < 2) {
            return 0;
        }
        long context = Long.compareUnsigned(ip, kernelStart) < 0 ? USER : KERNEL;
        out[0] = context;
        out[1] = ip;
        if (s == null) {
            return 2;
        }
        int i = 2;
        for (int j = 1; i < size && j <= s.cnt; i++, j++) {
            long a = s.ret[s.cnt - j];
            long c = Long.compareUnsigned(a, kernelStart) < 0 ? USER : KERNEL;
            if (c != context) {
                if (i >= size - 1) {
                    break;
                }
                out[i++] = c;
                context = c;
            }
            out[i] = a;
        }
        return i;
    }

    /**
     * The thread's last branches, newest first (perf's thread_stack__br_sample), into the arrays; returns how many.
     */
    static int lastBranches(Stack s, long[] from, long[] to, int[] flags) {
        if (s == null || s.brFrom == null) {
            return 0;
        }
        int n = s.brNr;
        for (int i = 0; i < n; i++) {
            int k = (s.brPos + i) % s.brFrom.length;
            from[i] = s.brFrom[k];
            to[i] = s.brTo[k];
            flags[i] = s.brFlags[k];
        }
        return n;
    }

    /** The thread's depth now (perf's thread_stack__depth). */
    int depth(int tid) {
        return of(tid).cnt;
    }

    /** Whether the thread has a stack (perf adds one to a return's depth only then). */
    boolean has(int tid) {
        return stacks.containsKey(tid);
    }
}

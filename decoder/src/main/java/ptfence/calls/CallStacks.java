package ptfence.calls;

import java.util.HashMap;
import java.util.Map;

/**
 * Every thread's call stack, followed through the merged flow (one call at a time, in time order, so a thread that
 * moves between CPUs keeps its stack). The rules are perf's thread stack's: a call pushes its return address (a call
 * to the next instruction and a call whose target is not traced do not); a return pops to the newest frame with its
 * target as return address, however deep (returns through thunks, longjmp), and pops nothing when no frame matches;
 * frames of calls that left the traced code go when tracing begins again; an interrupt is a call whose return
 * address is the interrupted instruction. Unlike perf, a return past the root moves the root to the caller, and
 * where the flow was lost (overflow, decode error) the stack is dropped and the thread marked untrusted: the frames
 * after that start at the resume point and none is invented.
 */
public final class CallStacks {
    /** Hears a thread's stack change. */
    public interface Listener {
        /** {@code insns} instructions ran in the thread's innermost frame (its current depth), ending at {@code time}. */
        default void ran(ThreadStack t, long insns, long time) {
        }

        /** Level {@code level} was entered (the root is level 0). */
        default void enter(ThreadStack t, int level, long time) {
        }

        /** Level {@code level} was left: returned from, or dropped ({@code lost}) when the flow was lost. */
        default void leave(ThreadStack t, int level, long time, boolean lost) {
        }
    }

    /** Which thread ran on a CPU at a time. */
    public interface Threads {
        /**
         * {pid, tid} of the task on {@code cpu} at perf time {@code time} (-1: unknown), or null if not known; the
         * same array for the same task on that CPU while it runs there (the stacks take that as the same thread).
         */
        int[] at(int cpu, long time);
    }

    private final Threads threads;
    private final Listener listener;
    private final Map<Long, ThreadStack> stacks = new HashMap<>();

    public CallStacks(Threads threads, Listener listener) {
        this.threads = threads;
        this.listener = listener;
    }

    /**
     * The thread {@code item} belongs to: by the sideband's task, else (no task known, or the idle task) per CPU. A
     * CPU runs the same task for many items: while {@link Threads#at} answers with the same array as last time on
     * that CPU, the same stack is taken without a lookup.
     */
    public ThreadStack threadOf(FlowItem item) {
        int cpu = item.cpu();
        int[] task = threads.at(cpu, item.time());
        int c = cpu + 1;
        if (c >= 0 && c < lastTask.length && task != null && lastTask[c] == task) {
            return lastStack[c];
        }
        long key = task == null || task[1] <= 0 ? -2L - cpu : task[1];
        ThreadStack t = stacks.get(key);
        if (t == null) {
            t = new ThreadStack(key, task == null ? -1 : task[0], task == null ? -1 : task[1]);
            stacks.put(key, t);
        }
        t.cpu = cpu;
        if (c >= 0) {
            if (c >= lastTask.length) {
                lastTask = java.util.Arrays.copyOf(lastTask, c * 2);
                lastStack = java.util.Arrays.copyOf(lastStack, c * 2);
            }
            lastTask[c] = task;
            lastStack[c] = t;
        }
        return t;
    }

    /** Per CPU (index cpu + 1): the task array {@link Threads#at} last answered, and its stack. */
    private int[][] lastTask = new int[8][];
    private ThreadStack[] lastStack = new ThreadStack[8];

    /** Takes one item of the merged flow in; returns its thread. */
    public ThreadStack apply(FlowItem item) {
        ThreadStack t = threadOf(item);
        long time = item.time();
        if (item instanceof FlowItem.Branch b && t.depth < 0) {
            root(t, b.from() != 0 ? b.from() : b.to(), time);
        }
        t.insns += item.insns();
        t.returnInsns = -1;
        t.returnCycles = -1;
        if (item instanceof FlowItem.Branch b) {
            t.cycles += b.cycles();
        }
        if (t.depth >= 0 && item.insns() > 0) {
            listener.ran(t, item.insns(), time);
        }
        if (time >= 0) {
            t.lastTime = time;
        }
        if (item instanceof FlowItem.Loss l && l.code() == ptfence.flow.PtError.NOMAP) {
            // perf keeps its thread stack where a walk found no code: its scan for the next IP goes on in the same
            // trace (trace_nr unchanged), and the trace begin there pops to its return address as usual
            t.untrusted = true;
        } else if (item instanceof FlowItem.Loss) {
            drop(t, time);
            t.untrusted = true;
        } else if (item instanceof FlowItem.Branch b) {
            branch(t, b, time);
        }
        return t;
    }

    private void branch(ThreadStack t, FlowItem.Branch b, long time) {
        int f = b.flags();
        if ((f & BranchFlags.CALL) != 0) {
            long ret = b.from() + b.insnLen();
            if (b.to() == 0 || ret == b.to()) {
                return; // target not traced, or a call to the next instruction (call/pop)
            }
            if (t.depth + 1 >= ThreadStack.MAX_DEPTH) {
                drop(t, time);
                t.untrusted = true;
                root(t, b.to(), time);
                return;
            }
            t.push(ret, b.to(), time, (f & BranchFlags.TRACE_END) != 0);
            listener.enter(t, t.depth, time);
        } else if ((f & BranchFlags.TRACE_BEGIN) != 0) {
            // Tracing resumed: where a call's return left the traced code (a return through a thunk outside an
            // address filter, or a callee that ran untraced) it resumes at that call's return address, which ends
            // the call; then calls that ended the trace are not expected to return.
            popTo(t, b.to(), time);
            t.returnInsns = -1; // a return unseen: its instructions are not all known
            t.returnCycles = -1;
            while (t.depth > 0 && t.traceEnd[t.depth]) {
                listener.leave(t, t.depth--, time, false);
            }
            if (t.depth == 0 && t.rootLeft && b.to() != 0) {
                // the root function left the traced code by a jump or return and did not come back: the trace
                // resumes in another function (a tail call through a thunk, the next run of a program)
                listener.leave(t, 0, t.rootLeftTime, false);
                t.depth = -1;
                root(t, b.to(), time);
            }
        } else if ((f & BranchFlags.RETURN) != 0 && b.from() != 0) {
            if (!popTo(t, b.to(), time) && t.depth == 0 && b.to() != 0 && (f & BranchFlags.TRACE_END) == 0) {
                // returned from the root: the caller, unseen so far, is the new root
                listener.leave(t, 0, time, false);
                t.depth = -1;
                root(t, b.to(), time);
            }
        }
        if ((f & BranchFlags.TRACE_END) != 0) {
            // the root was left for untraced code other than by a call or an interruption
            t.rootLeft = t.depth == 0 && (f & (BranchFlags.CALL | BranchFlags.ASYNC)) == 0;
            t.rootLeftTime = time;
        } else if ((f & BranchFlags.TRACE_BEGIN) == 0) {
            t.rootLeft = false;
        }
    }

    /**
     * Pops to the newest frame whose return address is {@code to}, that frame included (perf's thread_stack__pop:
     * frames above it are calls seen not to return, as with longjmp); nothing when no frame matches. True if one did.
     */
    private boolean popTo(ThreadStack t, long to, long time) {
        for (int i = t.depth; i > 0; i--) {
            if (t.ret[i] == to) {
                t.returnInsns = t.insns - t.enterInsns[i];
                t.returnCycles = t.cycles - t.enterCycles[i];
                while (t.depth >= i) {
                    listener.leave(t, t.depth--, time, false);
                }
                return true;
            }
        }
        return false;
    }

    private void root(ThreadStack t, long address, long time) {
        t.push(0, address, time, false);
        listener.enter(t, 0, time);
    }

    /** Drops every level, innermost first. */
    private void drop(ThreadStack t, long time) {
        while (t.depth >= 0) {
            listener.leave(t, t.depth--, time, true);
        }
    }

    /** Ends every thread's stack at the end of the trace (each thread at its last time). */
    public void end() {
        for (ThreadStack t : stacks.values()) {
            while (t.depth >= 0) {
                listener.leave(t, t.depth--, t.lastTime, false);
            }
        }
    }
}

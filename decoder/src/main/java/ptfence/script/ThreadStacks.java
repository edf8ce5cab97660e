package ptfence.script;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import ptfence.sideband.Sideband;

/**
 * perf's thread stack (the call chain of --itrace=g, the last branches of l, callindent's depth) is one per thread, not
 * per CPU (per CPU only for the idle task; tools/perf/util/thread-stack.c), and it is emptied at the first branch whose
 * trace number (the AUX buffer run's, numbered over all CPUs) is not the one it was filled under. So where a thread
 * moves to another CPU, the samples the new CPU makes for it before its first branch there (a PSB+'s psb and cbr)
 * carry the stack as the previous CPU left it, and that first branch empties it; a thread back on a CPU after branches
 * elsewhere is emptied at its first branch there even within one run of that CPU's trace.
 *
 * <p>Each CPU decodes on its own thread ahead of the printer, with its own {@link CallDepth}; what crosses CPUs goes
 * through the printer ({@link ScriptMerge}), which meets every line in perf's order. The sideband says where each
 * thread ran: a CPU whose run of a thread is followed by a run elsewhere places the thread's stack, as its run left it,
 * as a mark at the run's end; a CPU meeting a thread that ran elsewhere since its own last branch of it asks the
 * printer, at the time of its sample or branch, for the stack last placed for that thread. Only those waits cost: a
 * thread that stays on its CPU never asks.
 */
public final class ThreadStacks {
    /** Each thread's runs on the traced CPUs, by start: [start, end) on cpu. */
    private record Runs(long[] start, long[] end, int[] cpu, long[] maxEnd, int[] nextOther, boolean[] mixedAfter) {}

    private final Map<Integer, Runs> runs = new HashMap<>();
    /** The stack last placed for each thread, in the printed order: read and written on the printer's thread only. */
    private final Map<Integer, Placed> placed = new HashMap<>();

    /** The threads' runs on {@code cpus} from the sideband's task timelines. */
    public ThreadStacks(Sideband sideband, Collection<Integer> cpus) {
        Map<Integer, List<long[]>> byTid = new HashMap<>();
        for (int cpu : cpus) {
            List<Sideband.Task> l = sideband.tasks(cpu);
            for (int i = 0; i < l.size(); i++) {
                Sideband.Task t = l.get(i);
                if (t.tid() <= 0) {
                    continue; // the idle task's stack is per CPU; an unknown thread has none to carry
                }
                long end = i + 1 < l.size() ? l.get(i + 1).time() : Long.MAX_VALUE;
                byTid.computeIfAbsent(t.tid(), x -> new ArrayList<>()).add(new long[] {t.time(), end, cpu});
            }
        }
        for (Map.Entry<Integer, List<long[]>> e : byTid.entrySet()) {
            List<long[]> l = e.getValue();
            l.sort((a, b) -> Long.compare(a[0], b[0]));
            int n = l.size();
            long[] start = new long[n];
            long[] end = new long[n];
            int[] cpu = new int[n];
            long[] maxEnd = new long[n];
            for (int i = 0; i < n; i++) {
                start[i] = l.get(i)[0];
                end[i] = l.get(i)[1];
                cpu[i] = (int) l.get(i)[2];
                maxEnd[i] = Math.max(end[i], i == 0 ? Long.MIN_VALUE : maxEnd[i - 1]);
            }
            int[] nextOther = new int[n];
            boolean[] mixedAfter = new boolean[n];
            for (int i = n - 1; i >= 0; i--) {
                nextOther[i] = i + 1 < n && cpu[i + 1] != cpu[i] ? i + 1 : i + 1 < n ? nextOther[i + 1] : n;
                mixedAfter[i] = nextOther[i] < n;
            }
            runs.put(e.getKey(), new Runs(start, end, cpu, maxEnd, nextOther, mixedAfter));
        }
    }

    /**
     * Whether the thread of runs {@code r} ran on a CPU other than {@code cpu} in a run that began before
     * {@code before} and ended after {@code after}.
     */
    private static boolean elsewhere(Runs r, int cpu, long after, long before) {
        if (r == null) {
            return false;
        }
        int hi = lastBefore(r.start, before);
        if (hi < 0) {
            return false;
        }
        int lo = firstAbove(r.maxEnd, after);
        if (lo > hi) {
            return false;
        }
        // a run on another CPU in [lo, hi] (taking in runs that overlap others may ask where it need not: that costs
        // a wait, not a line)
        return r.cpu[lo] != cpu || r.nextOther[lo] <= hi;
    }

    /** Whether the thread of runs {@code r} runs on a CPU but {@code cpu} in a run beginning after {@code from}. */
    private static boolean movesOn(Runs r, int cpu, long from) {
        if (r == null) {
            return false;
        }
        int i = lastBefore(r.start, from + 1) + 1; // the first run that begins after from
        return i < r.start.length && (r.cpu[i] != cpu || r.mixedAfter[i]);
    }

    /** Index of the last value below {@code x} in the sorted {@code a}; -1 if none. */
    private static int lastBefore(long[] a, long x) {
        int lo = 0;
        int hi = a.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (a[mid] < x) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return hi;
    }

    /** Index of the first value above {@code x} in the sorted {@code a}; a.length if none. */
    private static int firstAbove(long[] a, long x) {
        int lo = 0;
        int hi = a.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (a[mid] > x) {
                hi = mid - 1;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }

    /** A thread's stack as one CPU's run of it left it, placed among the lines at the run's end. */
    private final class Placed implements Runnable {
        final int cpu;
        final int tid;
        final CallDepth.Stack stack;

        Placed(int cpu, int tid, CallDepth.Stack stack) {
            this.cpu = cpu;
            this.tid = tid;
            this.stack = stack;
        }

        @Override
        public void run() {
            placed.put(tid, this);
        }
    }

    /** One CPU's side: its sink's {@link CallDepth} and its lines' producer. */
    Cpu cpu(int cpu, CallDepth calls, ScriptMerge.Producer out) {
        return new Cpu(cpu, calls, out);
    }

    final class Cpu {
        private final int cpu;
        private final ScriptMerge.Producer out;
        private final CallDepth calls;
        private final Ask ask = new Ask();
        /** The run whose stack is placed when it ends (made once, fired by the producer). */
        private final Runnable place = this::place;
        private int placeTid;
        private CallDepth.Stack placeStack;
        private long placeAt;
        /** The runs of the thread looked up last (a thread's samples come in runs: no map lookup each). */
        private int runsTid = Integer.MIN_VALUE;
        private Runs runsOfTid;

        private Cpu(int cpu, CallDepth calls, ScriptMerge.Producer out) {
            this.cpu = cpu;
            this.calls = calls;
            this.out = out;
        }

        /** The question to the printer: the stack last placed for a thread. */
        private final class Ask extends ScriptMerge.Turn {
            int tid;
            Placed answer;

            @Override
            protected void answer() {
                answer = placed.get(tid);
            }
        }

        private Runs runs(int tid) {
            if (tid != runsTid) {
                runsOfTid = runs.get(tid);
                runsTid = tid;
            }
            return runsOfTid;
        }

        /** The stack placed for {@code tid} last before perf time {@code time} in perf's order (null: none). */
        private Placed ask(int tid, long time) {
            ask.tid = tid;
            ask.answer = null;
            out.await(time, ask);
            return ask.answer;
        }

        private void place() {
            out.mark(placeAt, new Placed(cpu, placeTid, placeStack.copy()));
        }

        /**
         * Before a branch of thread {@code tid} (stack {@code s}) at perf time {@code time} in its run
         * [{@code runFrom}, {@code runTo}) on this CPU, trace run {@code traceNr}: at the run's first branch, perf's
         * flush where the stack was last filled on another CPU since this one's last branch of it; and the stack
         * placed at the run's end where the thread runs elsewhere later.
         */
        void branch(CallDepth.Stack s, int tid, long time, long runFrom, long runTo, long traceNr) {
            if (tid <= 0 || time < 0 || s.checkedRun == runFrom) {
                return;
            }
            s.checkedRun = runFrom;
            Runs r = runs(tid);
            if (elsewhere(r, cpu, s.lastTime, time)) {
                Placed p = ask(tid, time);
                if (p != null && p.cpu != cpu && p.stack.lastTime > s.lastTime) {
                    CallDepth.flush(s, traceNr); // the stack's trace number is the other CPU's
                }
            }
            if (runTo != Long.MAX_VALUE && movesOn(r, cpu, runFrom)) {
                out.before(runTo, place); // a run still waiting to be placed is placed now
                placeTid = tid;
                placeStack = s;
                placeAt = runTo - 1; // before any line of the thread's next run, wherever it is
            }
        }

        /**
         * The stack a sample of thread {@code tid} at perf time {@code time} in its run from {@code runFrom} takes:
         * this CPU's, or where the thread ran elsewhere since this CPU's last branch of it and no branch of this run
         * came yet, the one the other CPU left.
         */
        CallDepth.Stack sample(int tid, long time, long runFrom) {
            CallDepth.Stack s = calls.find(tid);
            if (tid <= 0 || time < 0 || s != null && s.checkedRun == runFrom) {
                return s;
            }
            long last = s == null ? Long.MIN_VALUE : s.lastTime;
            if (!elsewhere(runs(tid), cpu, last, time)) {
                return s;
            }
            Placed p = ask(tid, time);
            return p != null && p.cpu != cpu && p.stack.lastTime > last ? p.stack : s;
        }
    }
}

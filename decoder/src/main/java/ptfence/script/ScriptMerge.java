package ptfence.script;

import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import ptfence.dlfilter.DlFilter;

/**
 * perf script's lines of every CPU (and of the sideband) in time order, with bounded memory: each source builds its
 * lines as bytes into batches on its own thread (all of a line but its time field, which only the printer can write:
 * --reltime and --deltatime depend on the line printed before); the printer takes the earliest line of any source and
 * copies its bytes out. As perf, a source whose line ties with the last one printed goes on (perf decodes one CPU's
 * queue until its time passes the next one's), and the sideband goes before a CPU's line of the same time.
 */
public final class ScriptMerge {
    private static final int BATCH_LINES = 2048;
    private static final int BATCH_BYTES = 1 << 17;
    private static final int QUEUED_BATCHES = 4;

    /** One batch of lines: line i is bytes [ends[i-1], ends[i]) with its time field at splits[i] (-1: none). */
    private static final class Batch {
        final long[] times = new long[BATCH_LINES + 2];
        final int[] ends = new int[BATCH_LINES + 2];
        final int[] splits = new int[BATCH_LINES + 2];
        final boolean[] skippable = new boolean[BATCH_LINES + 2];
        /** A line's {@link DsoData} gate (0: none): perf's per-file state decides there whether it is printed. */
        final int[] gates = new int[BATCH_LINES + 2];
        /** A line's {@link LineCall} state (made on first use, reused with the batch) and whether it has one. */
        final DlFilter.Sample[] calls = new DlFilter.Sample[BATCH_LINES + 2];
        final boolean[] called = new boolean[BATCH_LINES + 2];
        /** A line's event file (--per-event-dump; 0: stdout). */
        final int[] streams = new int[BATCH_LINES + 2];
        /** A mark in place of a line (null: a line): run by the printer at its turn, printing nothing. */
        final Runnable[] marks = new Runnable[BATCH_LINES + 2];
        final LineBytes text = new LineBytes(BATCH_BYTES + 4096);
        int count;
        boolean end;
    }

    private final List<BlockingQueue<Batch>> queues = new ArrayList<>();
    private final List<BlockingQueue<Batch>> free = new ArrayList<>();
    private final boolean[] sideband;
    private final Semaphore turns;
    private volatile boolean abandoned;
    /** The printer stopped (its output failed, or it is done): a source waiting for a {@link Turn} stops too. */
    private volatile boolean stopped;
    private DsoData dsoData;
    private LineCall lineCall;
    private long[] queueLimits = new long[0];
    /** The mark of a state with no line: taken in its turn, it prints nothing and runs nothing. */
    private static final Runnable STATE = () -> { };
    private PerEventDump perEvent;
    /** How many CPU sources (producers that hold a decoding turn) there are: ties among them need states. */
    private int cpuSources;

    /**
     * @param sources how many sources (CPUs, then sideband sources)
     * @param turns the decoding threads' turns: a source waiting for the printer gives its turn back
     */
    public ScriptMerge(int sources, Semaphore turns) {
        this.turns = turns;
        this.sideband = new boolean[sources];
        for (int i = 0; i < sources; i++) {
            queues.add(new ArrayBlockingQueue<>(QUEUED_BATCHES));
            BlockingQueue<Batch> f = new ArrayBlockingQueue<>(QUEUED_BATCHES + 2);
            for (int k = 0; k < QUEUED_BATCHES + 2; k++) {
                f.add(new Batch());
            }
            free.add(f);
        }
    }

    /** The times of the recording's records, which order the CPUs' lines of equal time ({@link QueueOrder}). */
    public void queueLimits(long[] times) {
        queueLimits = times;
    }

    /** The per-file state the lines' gates go through, in the printed order (before {@link #drain}). */
    public void gates(DsoData d) {
        dsoData = d;
    }

    /** --per-event-dump: the lines given an event file go there, the others to the output (before {@link #drain}). */
    public void perEvent(PerEventDump d) {
        perEvent = d;
    }

    /** The call made on a line as it is printed (perf's --dlfilter), before {@link #producer}. */
    public void calls(LineCall c) {
        lineCall = c;
    }

    /**
     * A call made on a line when its turn to be printed comes, in the printed order: perf hands each sample to its
     * --dlfilter in the order it delivers them (its queues merged by time, as printed), not in the order a CPU's
     * decoder makes them, so a filter whose state spans CPUs counts as under perf.
     */
    public interface LineCall {
        /** A new state object for one line (filled by the producer, reused). */
        DlFilter.Sample fresh();

        /** The call on {@code call}: what it prints goes to {@code out} ahead of the line; false drops the line. */
        boolean keep(DlFilter.Sample call, LineBytes out);
    }

    /** The producing end of source {@code i}; {@code isSideband}: it wins ties with CPU lines. */
    public Producer producer(int i, boolean isSideband) {
        sideband[i] = isSideband;
        cpuSources += isSideband ? 0 : 1;
        return new Producer(i, !isSideband);
    }

    /**
     * A question a source asks the printer, answered on the printer's thread when its turn comes in the printed
     * order: every line of every source before its time has been printed and every mark before it run (perf's one
     * thread meets its samples in that order). The source waits for the answer ({@link Producer#await}).
     */
    public abstract static class Turn implements Runnable {
        private boolean done;

        /** On the printer's thread, at the turn. */
        protected abstract void answer();

        @Override
        public final void run() {
            answer();
            synchronized (this) {
                done = true;
                notifyAll();
            }
        }
    }

    /** One source's lines, written by one thread. */
    public final class Producer {
        private final int index;
        /** A CPU's producer holds a decoding turn, which it gives back while it waits; the sideband's holds none. */
        private final boolean holdsTurn;
        private Batch batch;
        private int start;
        private int split = -1;
        private int gate;
        private boolean calling;
        private int stream;
        /** A mark to place before the first line at or after {@link #dueAt} (null: none). */
        private Runnable due;
        private long dueAt;
        /** The times of the states without a line this source tells the merge (perf's queue stops there too). */
        private final ptfence.calls.MergeTimes states = new ptfence.calls.MergeTimes(t -> mark(t, STATE));

        private Producer(int index, boolean holdsTurn) {
            this.index = index;
            this.holdsTurn = holdsTurn;
        }

        /** The buffer the current line is appended to (the line started at the last {@link #commit}). */
        public LineBytes line() {
            if (batch == null) {
                batch = take(free.get(index), holdsTurn);
                batch.count = 0;
                batch.end = false;
                batch.text.clear();
                start = 0;
            }
            return batch.text;
        }

        /** The time field goes here. */
        public void timeHere() {
            split = line().length();
        }

        /** The line being built is a sample of event {@code s} (1 up: its place in the events, --per-event-dump). */
        public void stream(int s) {
            stream = s;
        }

        /**
         * The line being built goes through {@link DsoData} when it is its turn to be printed: {@code g} > 0, a walk
         * failure in that file (printed only if perf reports it); {@code g} < 0, a read of that file's data (printed;
         * an empty line only marks the read).
         */
        public void gate(int g) {
            gate = g;
        }

        /**
         * The line being built (committed next, possibly empty) gets the merge's {@link LineCall}: the state to fill
         * for it.
         */
        public DlFilter.Sample call() {
            line();
            Batch b = batch;
            DlFilter.Sample c = b.calls[b.count];
            if (c == null) {
                c = lineCall.fresh();
                b.calls[b.count] = c;
            }
            calling = true;
            return c;
        }

        /**
         * {@code r} runs (it places a {@link #mark}) just before the first line committed at or after perf time
         * {@code at}, or at {@link #end}; one such mark waits at a time, so one still waiting runs now.
         */
        public void before(long at, Runnable r) {
            runDue();
            due = r;
            dueAt = at;
        }

        private void runDue() {
            Runnable r = due;
            if (r != null) {
                due = null;
                r.run();
            }
        }

        /**
         * A mark at perf time {@code time}, ahead of the line being built: the printer runs {@code m} at its turn
         * (among the lines by time) and prints nothing for it.
         */
        public void mark(long time, Runnable m) {
            int i = entry(time, m, -1, false, 0, false);
            Batch b = batch;
            // the line being built moves up one: its call state (taken at index i) goes with it
            DlFilter.Sample c = b.calls[i];
            b.calls[i] = b.calls[i + 1];
            b.calls[i + 1] = c;
            boolean building = b.text.length() != start || split >= 0 || gate != 0 || calling;
            if (b.count >= BATCH_LINES && !building) {
                flush();
            } else if (b.count > BATCH_LINES) {
                throw new IllegalStateException("marks ahead of a line fill the batch");
            }
        }

        /** The batch's next entry, a line (its bytes up to now) or a mark (none), after a mark due by then. */
        private int entry(long time, Runnable m, int split, boolean skippable, int gate, boolean called) {
            if (due != null && time >= dueAt) {
                runDue();
            }
            line();
            Batch b = batch;
            int i = b.count++;
            b.times[i] = time;
            b.ends[i] = m != null ? start : b.text.length();
            b.splits[i] = split;
            b.skippable[i] = skippable;
            b.gates[i] = gate;
            b.called[i] = called;
            b.marks[i] = m;
            b.streams[i] = 0;
            return i;
        }

        /**
         * Asks the printer {@code t} at perf time {@code time} (no line being built) and waits for its answer; the
         * lines before are handed to the printer first, and the decoding turn is given back meanwhile.
         */
        public void await(long time, Turn t) {
            synchronized (t) {
                t.done = false;
            }
            mark(time, t);
            flush();
            if (holdsTurn) {
                turns.release();
            }
            try {
                synchronized (t) {
                    while (!t.done) {
                        if (stopped || abandoned) {
                            throw new IllegalStateException("the merge stopped while a CPU waited for its turn");
                        }
                        t.wait(100);
                    }
                }
                if (holdsTurn) {
                    turns.acquire();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while merging CPUs");
            }
        }

        /**
         * Whether this CPU's lines can tie with another CPU's, so that its {@link #state}s order them: false with one
         * CPU (its ties with the sideband do not depend on them). Asked once the CPUs' producers are all made.
         */
        public boolean tiesWithCpus() {
            return holdsTurn && cpuSources > 1;
        }

        /**
         * A state perf's decoder returns at perf time {@code time} with no line of its own (an unsampled branch, a
         * PSB): it orders this CPU's lines among the others' as a line would ({@link QueueOrder}).
         */
        public void state(long time) {
            if (time >= 0) {
                states.left(time);
            }
        }

        /** Ends the line: sorted by perf time {@code time} (-1: untimed, printed as it comes). */
        public void commit(long time, boolean skippable) {
            if (time >= 0) {
                states.item(time);
            }
            int i = entry(time, null, split, skippable, gate, calling);
            Batch b = batch;
            b.streams[i] = stream;
            split = -1;
            gate = 0;
            calling = false;
            stream = 0;
            start = b.ends[i];
            if (b.count >= BATCH_LINES || b.text.length() >= BATCH_BYTES) {
                flush();
            }
        }

        /** Drops the line being built. */
        public void cancel() {
            if (batch != null) {
                batch.text.len = start;
            }
            split = -1;
            gate = 0;
            calling = false;
            stream = 0;
        }

        private void flush() {
            if (batch != null && batch.count > 0) {
                put(queues.get(index), batch, holdsTurn);
                batch = null;
            }
        }

        /** No more lines: must be called however the source ends, else the printer waits forever. */
        public void end() {
            states.flush();
            runDue();
            flush();
            Batch b = take(free.get(index), holdsTurn);
            b.count = 0;
            b.end = true;
            put(queues.get(index), b, holdsTurn);
        }
    }

    private Batch take(BlockingQueue<Batch> q, boolean holdsTurn) {
        Batch b = q.poll();
        if (b != null || !holdsTurn) {
            try {
                return b != null ? b : q.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while merging CPUs");
            }
        }
        turns.release(); // waiting on the printer: another CPU may decode meanwhile
        try {
            b = q.take();
            turns.acquire();
            return b;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while merging CPUs");
        }
    }

    private void put(BlockingQueue<Batch> q, Batch b, boolean holdsTurn) {
        if (q.offer(b)) {
            return;
        }
        if (!holdsTurn) {
            try {
                q.put(b);
                return;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while merging CPUs");
            }
        }
        turns.release();
        try {
            q.put(b);
            turns.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while merging CPUs");
        }
    }

    /** The decode failed before every source ended: {@link #drain} returns. */
    public void abandon() {
        abandoned = true;
    }

    /** Writes every line of every source, earliest first, with its time field as {@code clock} formats it. */
    public void drain(OutputStream out, TimeField clock, long skip) throws IOException, InterruptedException {
        try {
            drainAll(out, clock, skip);
        } finally {
            stopped = true;
        }
    }

    private void drainAll(OutputStream out, TimeField clock, long skip) throws IOException, InterruptedException {
        int k = queues.size();
        Batch[] head = new Batch[k];
        int[] pos = new int[k];
        boolean[] ended = new boolean[k];
        LineBytes buf = new LineBytes(1 << 16);
        LineBytes one = perEvent == null ? null : new LineBytes(4096);
        int current = -1;
        QueueOrder order = new QueueOrder(k, queueLimits);
        long skipLeft = skip;
        while (true) {
            int best = -1;
            long bestTime = 0;
            for (int i = 0; i < k; i++) {
                if (ended[i]) {
                    continue;
                }
                if (head[i] == null || pos[i] == head[i].count) {
                    if (head[i] != null) {
                        free.get(i).put(head[i]);
                        head[i] = null;
                    }
                    Batch b;
                    while ((b = queues.get(i).poll(100, TimeUnit.MILLISECONDS)) == null) {
                        if (abandoned) {
                            out.write(buf.b, 0, buf.len);
                            return;
                        }
                    }
                    if (b.end) {
                        ended[i] = true;
                        free.get(i).put(b);
                        continue;
                    }
                    head[i] = b;
                    pos[i] = 0;
                }
                long t = head[i].times[pos[i]];
                if (best < 0 || earlier(t, i, bestTime, best, current, order)) {
                    best = i;
                    bestTime = t;
                }
            }
            if (best < 0) {
                break;
            }
            if (order.reach(bestTime)) {
                // a record's time stopped the running CPU: the ties are ordered again
                for (int i = 0; i < k; i++) {
                    if (!ended[i] && i != best && earlier(head[i].times[pos[i]], i, bestTime, best, current, order)) {
                        best = i;
                        bestTime = head[i].times[pos[i]];
                    }
                }
            }
            Batch b = head[best];
            int i = pos[best]++;
            if (b.marks[i] == STATE) {
                b.marks[i] = null;
                current = best;
                order.taken(best);
                continue;
            }
            if (b.marks[i] != null) {
                Runnable m = b.marks[i];
                b.marks[i] = null;
                m.run(); // no line: the order of the lines around it stays perf's
                continue;
            }
            current = best;
            if (!sideband[best]) {
                order.taken(best);
            }
            // the call before the gate: a read of a file's data (a negative gate) is made for printed samples only;
            // a line the initial skip takes is never handed to the call (perf skips before it delivers)
            if (b.called[i] && lineCall != null && !(b.skippable[i] && skipLeft > 0) && !call(b.calls[i], buf, out)) {
                continue;
            }
            if (b.gates[i] > 0 && dsoData != null && !dsoData.pass(b.gates[i])) {
                continue;
            }
            if (b.skippable[i] && skipLeft > 0) {
                skipLeft--;
                continue;
            }
            if (b.gates[i] < 0 && dsoData != null) {
                dsoData.pass(b.gates[i]); // a printed sample's read; one the initial skip took was never delivered
            }
            int from = i == 0 ? 0 : b.ends[i - 1];
            int to = b.ends[i];
            int split = b.splits[i];
            if (perEvent != null && b.streams[i] != 0) {
                one.len = 0;
                append(one, b, from, to, split, b.times[i], clock);
                perEvent.write(b.streams[i], one.b, one.len);
                continue;
            }
            if (lines != null) {
                if (to > from) {
                    lines.line(b.times[i], b.text.b, from, split, to);
                }
                continue;
            }
            append(buf, b, from, to, split, b.times[i], clock);
            if (buf.len >= 1 << 16) {
                out.write(buf.b, 0, buf.len);
                buf.len = 0;
            }
        }
        out.write(buf.b, 0, buf.len);
    }

    /** A line's bytes [from, to) of batch {@code b}, its time field at {@code split} (-1: none). */
    private static void append(LineBytes out, Batch b, int from, int to, int split, long time, TimeField clock) {
        if (split < 0) {
            out.bytes(b.text.b, from, to - from);
        } else {
            out.bytes(b.text.b, from, split - from);
            clock.write(out, time);
            out.bytes(b.text.b, split, to - split);
        }
    }

    /** The line's call; where it stops the run (a filter's error), what was merged before it is written first. */
    private boolean call(DlFilter.Sample state, LineBytes buf, OutputStream out) throws IOException {
        try {
            return lineCall.keep(state, buf);
        } catch (RuntimeException e) {
            out.write(buf.b, 0, buf.len);
            buf.len = 0;
            throw e;
        }
    }

    /** Whether source {@code i}'s line at {@code t} goes before the best so far (perf's order on ties). */
    private boolean earlier(long t, int i, long bestTime, int best, int current, QueueOrder order) {
        if (t < 0 || bestTime < 0) {
            // untimed: a CPU's lines come after the sideband's (perf decodes an untimed trace once all records are
            // read), else as they come
            if (sideband[i] != sideband[best]) {
                return sideband[i];
            }
            return t < 0 && bestTime >= 0;
        }
        if (t != bestTime) {
            return t < bestTime;
        }
        if (sideband[i] != sideband[best]) {
            return sideband[i];
        }
        return sideband[i] ? i == current : order.before(i, best);
    }

    /** Where {@link #collect} hands the lines: each with its perf time, its bytes [from, to) and its time field's place. */
    public interface LineSink {
        /** {@code split}: where the time field goes (-1: none); the bytes are the merge's, valid during the call. */
        void line(long time, byte[] text, int from, int split, int to);
    }

    /** Set by {@link #collect}: the lines go there instead of to an output stream. */
    private LineSink lines;

    /**
     * Hands every line of every source to {@code sink}, earliest first, without their time fields (a caller that
     * prints them among lines of its own writes those): what a view with a printer of its own takes from the merge.
     */
    public void collect(LineSink sink) throws IOException, InterruptedException {
        lines = sink;
        drain(OutputStream.nullOutputStream(), (out, time) -> { }, 0);
    }

    /** Writes a line's time field (perf's formats, --reltime and --deltatime count from lines printed before). */
    public interface TimeField {
        void write(LineBytes out, long time);
    }
}

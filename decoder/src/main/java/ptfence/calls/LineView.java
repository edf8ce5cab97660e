package ptfence.calls;

import java.io.IOException;
import java.io.Writer;
import ptfence.symbol.Symbol;
import ptfence.symbol.Symbolizer;

/**
 * A view that prints a line per item of the merged flow: in text as perf script prints it ({@link PerfLines}: the
 * branches the view shows, and with {@code events} the synthesized events, with {@code errors} the trace errors), or
 * in JSON Lines (every event and loss). Only items in the --time range (untimed ones always).
 */
abstract class LineView implements CallView {
    private final LineBuffer buf;
    final boolean jsonl;
    final Symbolizer names;
    final PerfLines perf;
    private final LineOptions options;
    final StringBuilder sb = new StringBuilder(160);
    /** Per CPU (index cpu + 1): perf's IPC counts since its last branch sample (ptfence.flow.SampleCycles' rule). */
    private ptfence.flow.SampleCycles.Since[] ipcSince = new ptfence.flow.SampleCycles.Since[8];
    private int[] lastFlags = new int[8];
    /**
     * Per CPU: where the instruction that ended its trace is, while the trace is off (0: none). perf's decoder state
     * keeps the instruction it walked last, and a trace begin's sample carries it (-F insn).
     */
    private long[] endedAt = new long[8];
    /** When (perf time): perf keeps the instruction's bytes as they were then. */
    private long[] endedTime = new long[8];
    /** Where the instruction of the branch being shown is (see {@link #endedAt}). */
    private long insnIp;
    private long insnTime;
    /** perf's per-file data status: which walk failures in missing code it reports (in merge order, as perf). */
    private final ptfence.script.DsoData dsoData = new ptfence.script.DsoData();
    /** perf's reads of files outside the walks (perf time, file), by time: each makes a missing file's status ERROR. */
    private long[] readTimes = new long[0];
    private String[] readFiles = new String[0];
    private int readNext;
    /** Where the reads come from, asked at the first loss (only a loss reads them): null once asked. */
    private java.util.function.Supplier<ptfence.script.RecordReads.Files> reads;

    /** perf's reads of files outside its decoder's walks: at perf times {@code times} (ascending), {@code files}. */
    public record FileReads(long[] times, String[] files) {
    }

    /** perf's filters of samples by who and where: a filtered branch or event prints no line (its state moves on). */
    private ptfence.script.SampleFilters filters = ptfence.script.SampleFilters.NONE;

    LineView(Writer out, boolean jsonl, Symbolizer names, PerfLines.Comms comms, PerfLines.Recording rec,
            LineOptions options) {
        this.buf = new LineBuffer(out);
        this.jsonl = jsonl;
        this.names = names;
        this.options = options;
        this.perf = new PerfLines(buf, options.fields(), options.eventFields(), names, comms, rec);
    }

    /**
     * Lines go to {@code stream} as bytes: the stream under the writer given at construction (the command's output),
     * which saves encoding every line's characters once more.
     */
    public final void bytesTo(java.io.OutputStream stream) {
        buf.bytesTo(stream);
    }

    /** Recorded samples of other events to print among the lines (perf time ascending; pid, tid, cpu). */
    private long[] sampleTimes = new long[0];
    private int[][] sampleTasks = new int[0][];
    private long[] sampleIps = new long[0];
    private long[] samplePeriods = new long[0];
    private String[] sampleEvents = new String[0];
    /** Each recorded sample's misc column (perf's letters of its header). */
    private String[] sampleMiscs = new String[0];
    private int sampleNext;
    private final java.util.Map<Integer, ThreadStack> sampleThreads = new java.util.HashMap<>();

    /** The recording's code, which -F insn and insnlen read instructions from. */
    public final void code(PerfLines.Code c) {
        perf.code(c);
    }

    /** perf script's --pid, --tid, --comms, --dsos and -S (text views): the errors stay, as perf's. */
    public final void filters(ptfence.script.SampleFilters f) {
        filters = f;
    }

    /** --graph-function's names (null: every function). */
    private java.util.Set<String> graphFunctions;

    /** perf script's --graph-function: only the listed functions and what they call (text views). */
    public final void graphFunctions(java.util.Collection<String> names) {
        graphFunctions = names == null ? null : java.util.Set.copyOf(names);
    }

    /**
     * perf's show_event for a sample of thread {@code t} with branch flags {@code flags} from {@code from} to
     * {@code to}: inside a listed function, every sample until one at or above the depth it was entered at (which is
     * not shown); outside, only a call or trace begin into one (its target's function) or a return or trace end out of
     * one (its source's). The state is the thread's, changed only by samples the other filters kept.
     */
    private boolean graphShown(ThreadStack t, int flags, long from, long to, long time) {
        if (graphFunctions == null) {
            return true;
        }
        int depth = Math.max(0, t.depth());
        if (t.graphShown) {
            if (depth <= t.graphEntryDepth) {
                t.graphShown = false;
                return false;
            }
            return true;
        }
        String name = (flags & (BranchFlags.CALL | BranchFlags.TRACE_BEGIN)) != 0 ? function(to, time, t.pid())
                : (flags & (BranchFlags.RETURN | BranchFlags.TRACE_END)) != 0 ? function(from, time, t.pid()) : null;
        if (name == null || !graphFunctions.contains(name)) {
            return false;
        }
        t.graphShown = true;
        t.graphEntryDepth = depth;
        return true;
    }

    /** Whether perf's filters keep a sample of thread {@code t} at {@code ip}, perf time {@code time}. */
    private boolean kept(ThreadStack t, long ip, long time) {
        if (!filters.any()) {
            return true;
        }
        return filters.kept(names, t.pid(), t.tid(), perf.comm(t, time), ip, time);
    }

    /** The errors are not filtered by their own time: perf's decoder filter (BranchSink's) decided them. */
    private boolean errorsUnfiltered;

    /** perf script's --time: the errors its decoder meets print whatever their time (the sample views' rule). */
    public final void errorsUnfiltered() {
        errorsUnfiltered = true;
    }

    /**
     * Recorded samples to print (text views): at perf times {@code times} (ascending), each {pid, tid, cpu}, with
     * its IP, period and event's name.
     */
    public final void recordedSamples(long[] times, int[][] tasks, long[] ips, long[] periods, String[] events,
            String[] miscs) {
        sampleMiscs = miscs;
        sampleTimes = times;
        sampleTasks = tasks;
        sampleIps = ips;
        samplePeriods = periods;
        sampleEvents = events;
        sampleNext = 0;
    }

    /**
     * Prints the recorded samples before perf time {@code time} (all: Long.MAX_VALUE) and the records' lines at or
     * before it, in time order (a record's line before a sample of its time).
     */
    private void recordsBefore(long time) throws IOException {
        while (true) {
            boolean sample = sampleNext < sampleTimes.length && sampleTimes[sampleNext] < time;
            if (recordLines != null && recordLines.nextAtOrBefore(sample ? sampleTimes[sampleNext] : time)) {
                recordLines.printNext(perf);
            } else if (sample) {
                printSample(sampleNext++);
            } else {
                return;
            }
        }
    }

    private void printSample(int i) throws IOException {
        long at = sampleTimes[i];
        int[] k = sampleTasks[i];
        if (jsonl || at < options.from() || at > options.to()) {
            return;
        }
        ThreadStack th = sampleThreads.computeIfAbsent(k[1], tid -> new ThreadStack(tid, k[0], tid));
        perf.recorded(th, k[2], at, sampleIps[i], samplePeriods[i], sampleEvents[i], sampleMiscs[i]);
    }

    /**
     * perf script fetched the instruction at a printed sample's {@code ip} (script_fetch_insn): a read of that file's
     * data ({@link ptfence.script.DsoData}).
     */
    private void codeFetched(long ip, long time, int pid) {
        String dso = ip == 0 ? null : names.dso(ip, time, pid);
        if (dso != null) {
            dsoData.probe(dsoData.id(dso));
        }
    }

    @Override
    public final boolean countsIpc() {
        return !jsonl && options.fields().has(SampleFields.IPC);
    }

    /** The recording's own records' lines (--show-*-events), printed among the items by time; null: none. */
    private RecordLines recordLines;

    /**
     * Prints {@code r}'s lines among the items: before an item of the same time (perf delivers the record first); with
     * {@code timeless} (a trace without timestamps, which perf decodes once the records are all delivered) before all.
     */
    public final void recordLines(RecordLines r, boolean timeless) {
        recordLines = r;
        if (timeless) {
            recordsFirst = true;
        }
    }

    private boolean recordsFirst;

    /** perf's --reltime or --deltatime (text views). */
    public final void clock(ptfence.script.PerfTime c) {
        perf.clock(c);
    }

    @Override
    public final void item(ThreadStack t, FlowItem item) throws IOException {
        if (recordsFirst) {
            recordsFirst = false;
            while (recordLines.nextAtOrBefore(Long.MAX_VALUE)) {
                recordLines.printNext(perf);
            }
        }
        if (item.time() > 0) {
            recordsBefore(item.time());
        }
        if (item instanceof FlowItem.Branch b) {
            int c = Math.max(0, b.cpu() + 1);
            if (c >= lastFlags.length) {
                ipcSince = java.util.Arrays.copyOf(ipcSince, c * 2);
                lastFlags = java.util.Arrays.copyOf(lastFlags, c * 2);
                endedAt = java.util.Arrays.copyOf(endedAt, c * 2);
                endedTime = java.util.Arrays.copyOf(endedTime, c * 2);
            }
            insnIp = b.from() != 0 ? b.from() : endedAt[c];
            insnTime = b.from() != 0 ? b.time() : endedTime[c];
            endedAt[c] = (b.flags() & BranchFlags.TRACE_END) != 0 && b.insnLen() > 0 ? b.from() : 0;
            endedTime[c] = b.time();
            // perf prints an event with its CPU's state's flags: the last branch's kind, its trace end left out
            lastFlags[c] = b.flags() & ~BranchFlags.TRACE_END;
        } else if (item instanceof FlowItem.Loss l) {
            if (reads != null) {
                ptfence.script.RecordReads.Files r = reads.get();
                reads = null;
                readTimes = r.times();
                readFiles = r.files();
            }
            while (readNext < readTimes.length && readTimes[readNext] <= l.time()) {
                dsoData.probe(dsoData.id(readFiles[readNext++]));
            }
            int c = Math.max(0, l.cpu() + 1);
            if (c < lastFlags.length) {
                lastFlags[c] = 0; // perf's state after an error is no branch: its next events show no flags
                endedAt[c] = 0;
            }
            if (!reported(t, l)) {
                return;
            }
        }
        if (item.time() >= 0 && (item.time() < options.from() || item.time() > options.to())
                && !(errorsUnfiltered && item instanceof FlowItem.Loss)) {
            return;
        }
        if (!jsonl) {
            if (item instanceof FlowItem.Branch b) {
                if (shows(b)) {
                    int c = Math.max(0, b.cpu() + 1);
                    boolean kept = kept(t, b.from(), b.time()) && graphShown(t, b.flags(), b.from(), b.to(), b.time());
                    // perf counts from this sample, printed or not (a branch its filter leaves out is none)
                    ptfence.flow.SampleCycles.Since since = ipcSince[c];
                    if (since == null) {
                        since = ipcSince[c] = new ptfence.flow.SampleCycles.Since();
                    }
                    since.sample(b.stateCycles() >= 0, b.stateInsns(), b.stateCycles());
                    if (kept) {
                        perf.branch(t, b, depth(t, b), since.insns(), since.cycles(), insnIp, insnTime);
                    }
                    if (kept && ptfence.script.RecordReads.readsBranchCode(b.from(), b.insnLen())) {
                        codeFetched(b.from(), b.time(), t.pid());
                    }
                }
            } else if (item instanceof FlowItem.Mark m) {
                if (options.events()) {
                    // perf shows a PSB with no flags, other events with their CPU's last branch kind
                    int c = Math.max(0, m.cpu() + 1);
                    boolean psb = m.name().equals("psb");
                    int flags = m.flags() >= 0 ? m.flags()
                            : psb || c >= lastFlags.length ? 0 : lastFlags[c];
                    if (kept(t, m.sampleIp(), m.time()) && graphShown(t, 0, 0, 0, m.time())) {
                        perf.mark(t, m, flags);
                        codeFetched(m.sampleIp(), m.time(), t.pid()); // a synthesized sample has no instruction
                    }
                }
            } else if (options.errors()) {
                perf.error(t, (FlowItem.Loss) item);
            }
            return;
        }
        Lines.head(sb, t, item);
        if (Lines.other(sb, item)) {
            emit();
        } else {
            json(t, (FlowItem.Branch) item);
        }
    }

    /**
     * The files perf reads outside its decoder's walks (a printed recorded sample's code, a vdso mapping probing the
     * process's files): where their code is missing, perf reports one walk failure there instead of two
     * ({@link ptfence.script.DsoData}). Only a loss reads them, so {@code reads} is asked at the first one: a
     * recording decoded without losses never reads its records for them.
     */
    public final void fileReads(java.util.function.Supplier<ptfence.script.RecordReads.Files> reads) {
        this.reads = reads;
        readNext = 0;
    }

    /**
     * Whether perf reports loss {@code l}: a walk into a file whose code is missing fails quietly once perf has seen
     * that file's data status twice ({@link ptfence.script.DsoData}); the status changes whether or not errors show.
     */
    private boolean reported(ThreadStack t, FlowItem.Loss l) {
        if (l.code() != ptfence.flow.PtError.NOMAP || l.ip() == 0) {
            return true;
        }
        String dso = names.dso(l.ip(), l.mapsAt(), t.pid());
        return dso == null || dsoData.failure(dsoData.id(dso));
    }

    /** Writes {@link #sb} as a line. */
    final void emit() throws IOException {
        buf.chars(sb).endLine();
    }

    /** "name" or "name+0x12" for {@code a}, or null (also for 0, no address). */
    final String describe(long a, long time, int pid) {
        Symbol s = a == 0 ? null : names.symbol(a, time, pid);
        return s == null ? null : s.describe(a);
    }

    /** The function holding {@code a} (its name alone, as perf's call trace names it), or null. */
    final String function(long a, long time, int pid) {
        Symbol s = a == 0 ? null : names.symbol(a, time, pid);
        return s == null ? null : s.name();
    }

    /** The call depth perf's callindent shows for {@code b}: the stack's after a call, before a return. */
    static int depth(ThreadStack t, FlowItem.Branch b) {
        return Math.max(0, t.depth()) + ((b.flags() & BranchFlags.RETURN) != 0 ? 1 : 0);
    }

    /** True if the view prints {@code b}. */
    abstract boolean shows(FlowItem.Branch b);

    /** Writes {@code b} of thread {@code t} as JSON, if the view shows it; {@link #sb} holds the line's head. */
    abstract void json(ThreadStack t, FlowItem.Branch b) throws IOException;

    @Override
    public void end() throws IOException {
        recordsBefore(Long.MAX_VALUE);
        buf.flush();
    }
}

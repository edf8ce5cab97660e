package ptfence.ptdecode;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import picocli.CommandLine.Option;
import ptfence.calls.BranchSink;
import ptfence.calls.BranchView;
import ptfence.calls.CallStacks;
import ptfence.calls.CallTraceView;
import ptfence.calls.CallView;
import ptfence.calls.FlowItem;
import ptfence.calls.FoldedView;
import ptfence.calls.LineOptions;
import ptfence.calls.PerfLines;
import ptfence.calls.SampleFields;
import ptfence.calls.PerfettoView;
import ptfence.calls.ThreadStack;
import ptfence.cli.BadInputException;
import ptfence.perfdata.EventAttr;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;
import ptfence.script.RecordReads;
import ptfence.sideband.Sideband;

/**
 * The whole-recording views built on branches and call stacks (--call-trace, --call-ret-trace, --branches,
 * --format perfetto and folded without --func): their options, and the run that feeds every CPU's branches, merged by
 * time, through the threads' stacks into the view.
 */
final class CallViews {
    @Option(names = "--call-trace", description = "Calls of every thread, indented by call depth (perf script "
            + "--call-trace).")
    boolean callTrace;

    @Option(names = "--call-ret-trace", description = "Calls and returns, indented, with flags (perf script "
            + "--call-ret-trace).")
    boolean callRetTrace;

    @Option(names = "--branches", description = "Every taken branch: from -> to with flags (call, return, jcc, jmp, "
            + "syscall, sysret, int, iret, hw int, tr strt, tr end, ...), as perf script --itrace=b.")
    boolean branches;

    @Option(names = "--segment-bytes", hidden = true, paramLabel = "N",
            description = "perf's text call views with threads to spare: decode a CPU in PSB segments of N bytes of "
                    + "trace (default 0: off, one thread a CPU; not yet the sequential bytes in every case, "
                    + "docs/script.md).")
    long segmentBytes;

    @Option(names = "--stat:segments", hidden = true, description = "Print on stderr how many PSB segments the call "
            + "views' decode used and decoded again (tests, profiling).")
    boolean statSegments;

    /** Items a segment decoded ahead of its turn may hold (a few MB each). */
    static final int SEGMENT_ITEMS = 1 << 16;

    @Option(names = "--weight", paramLabel = "insns|time",
            description = "--format folded: weigh stacks by instructions (default) or by time.")
    String weight = "insns"; // an initializer, not defaultValue: QuickLines' lines start from it too


    /**
     * perf script's --itrace=c / r on the branch view: only branches with one of these flags (perf's branches_filter:
     * calls, asynchronous transfers and trace ends for c; returns and trace begins for r); 0: every branch.
     */
    int branchFilter;

    /** perf's --time ranges (perf script's entry): the recorded samples outside them are dropped, as the sample views'. */
    ptfence.script.TimeRanges timeRanges = ptfence.script.TimeRanges.ALL;
    /** perf script's filters of samples by who and where (the text call views). */
    ptfence.script.SampleFilters filters = ptfence.script.SampleFilters.NONE;
    /** perf script's --graph-function names (null: none). */
    List<String> graphFunctions;
    /** The recording's own records to print among the text call views' lines (--show-*-events; null: none). */
    ptfence.calls.RecordLines recordLines;
    /** perf script's --reltime or --deltatime on the text call views (null: times as they are). */
    ptfence.script.PerfTime clock;
    /**
     * perf script's fields with -F given (set by the command; null: the view's defaults): the call view's own field
     * changes applied among the -F as perf applies them, checked against the recording's events.
     */
    ptfence.script.FieldSet fields;

    /** The field changes perf's --call-trace makes (parse_call_trace), as a -F value. */
    static final String CALL_TRACE_FIELDS = "-ip,-addr,-event,-period,+callindent";
    /** The field changes perf's --call-ret-trace makes, as a -F value. */
    static final String CALL_RET_TRACE_FIELDS = CALL_TRACE_FIELDS + ",+flags";
    /** The output's bytes under the writer the text views are given (null: the writer alone): lines skip an encoder. */
    java.io.OutputStream bytes;

    /** True if the command line asks for one of these views (given no --func). */
    boolean wanted(String format) {
        return callTrace || callRetTrace || branches || format.equals("perfetto") || format.equals("folded");
    }

    /** Refuses combinations that would silently drop a view. */
    void check(String format, String func) {
        int views = (callTrace ? 1 : 0) + (callRetTrace ? 1 : 0) + (branches ? 1 : 0);
        if (views > 1) {
            throw new BadInputException("--call-trace, --call-ret-trace and --branches are views of the recording: "
                    + "give one");
        }
        if (views > 0 && func != null) {
            throw new BadInputException("--call-trace, --call-ret-trace and --branches show the whole recording: "
                    + "leave out --func");
        }
        if (views > 0 && !format.equals("text") && !format.equals("jsonl")) {
            throw new BadInputException("--format " + format + " draws call stacks: give it without --call-trace, "
                    + "--call-ret-trace or --branches");
        }
        if (format.equals("folded") && func != null) {
            throw new BadInputException("--format folded is for a whole recording: leave out --func");
        }
        if (!weight.equals("insns") && !weight.equals("time")) {
            throw new BadInputException("--weight " + weight + ": expected insns or time");
        }
    }

    /** Runs the view asked for over the whole recording, text as perf prints it by default. */
    void run(RecordingDecode rd, RecordingDecode.Request req, String format, PrintWriter out) throws Exception {
        run(rd, req, format, out, null);
    }

    /**
     * Runs the view asked for; {@code options} (perf's -F fields and the events and errors --itrace asks for) shape
     * the text of --call-trace, --call-ret-trace and --branches, null for perf's defaults of each.
     */
    void run(RecordingDecode rd, RecordingDecode.Request req, String format, PrintWriter out, LineOptions options)
            throws Exception {
        CallNames names = new CallNames(rd.symbols);
        boolean jsonl = format.equals("jsonl");
        Sideband sideband = rd.sideband;
        PerfLines.Comms comms = new PerfLines.Comms() {
            public String comm(int tid, long time) {
                return sideband.commAt(tid, time);
            }

            public long nextChange(int tid, long time) {
                return sideband.nextCommChange(tid, time);
            }
        };
        PerfLines.Recording rec = perfRecording(rd);
        CallView view;
        if (format.equals("perfetto")) {
            ptfence.sideband.BpfOutputs outputs = rd.bpfOutputs();
            // a recording with samples and no trace (ptrec --sideband-only --bpf-output) is timed by its samples
            view = new PerfettoView(req.recording().toString(), out, names, rd.tscEnabled || rd.traces.isEmpty(),
                    tid -> rd.sideband.commAt(tid, -1)).samples(outputs.all(),
                    outputs.isEmpty() ? null : rd.bpfOutputFormat());
        } else if (format.equals("folded")) {
            view = new FoldedView(out, names, weight.equals("time"));
        } else if (branches) {
            LineOptions o = options != null ? options : new LineOptions(defaults(rd, SampleFields.branches()),
                    events(rd, SampleFields.branches()), false, false, req.timeFrom(), req.timeTo());
            BranchView v = new BranchView(out, jsonl, names, comms, rec, o);
            if (bytes != null) {
                v.bytesTo(bytes);
            }
            view = v;
            if (branchFilter != 0) {
                view = filtered(view, branchFilter);
            }
        } else {
            SampleFields f = callRetTrace ? SampleFields.callRetTrace() : SampleFields.callTrace();
            LineOptions o = options != null ? options : fields != null
                    ? new LineOptions(given(fields, ptfence.script.FieldSet.Type.HW, f),
                            given(fields, ptfence.script.FieldSet.Type.SYNTH, f), true, true, req.timeFrom(),
                            req.timeTo())
                    : new LineOptions(defaults(rd, f), events(rd, f), true, true, req.timeFrom(), req.timeTo());
            CallTraceView v = new CallTraceView(out, jsonl, callRetTrace, names, comms, rec, o);
            if (o.fields().has(SampleFields.INSN | SampleFields.INSNLEN)
                    || o.eventFields().has(SampleFields.INSN | SampleFields.INSNLEN)) {
                v.code(code(rd));
            }
            if (bytes != null) {
                v.bytesTo(bytes);
            }
            if (!jsonl) {
                v.filters(filters);
                v.graphFunctions(graphFunctions);
                recordReads(rd, v, timeRanges, filters, graphFunctions != null);
                if (recordLines != null) {
                    v.recordLines(recordLines, !rd.tscEnabled); // perf's timeless decoding: no TSC in the trace
                }
                if (clock != null) {
                    v.clock(clock);
                }
            }
            view = v;
        }
        // perf's text call views need calls, returns and trace begins and ends only: other branches only move the
        // clock (the JSON form and the stack views count every branch's instructions in its thread)
        // perf script's call views (text) decode under perf's --time filter: its fast forward and stop decide which
        // failures happen, and the errors are not filtered by their own time (the sample views' rule)
        boolean perfTime = !jsonl && view instanceof CallTraceView && !timeRanges.isEmpty() && rd.code.timed();
        if (perfTime) {
            ((CallTraceView) view).errorsUnfiltered();
        }
        java.util.List<ptfence.calls.CallSegments> used = java.util.Collections.synchronizedList(new ArrayList<>());
        // the cycles of a branch settled at a seam's PSB are not checked at run time (docs/script.md): where a view
        // shows them (IPC) the CPU is decoded in one piece
        boolean ipc = options != null && options.fields().has(SampleFields.IPC)
                || options == null && defaults(rd, callRetTrace ? SampleFields.callRetTrace()
                        : SampleFields.callTrace()).has(SampleFields.IPC);
        run(rd, view, !jsonl && view instanceof CallTraceView, perfTime ? timeRanges : null, ipc ? 0 : segmentBytes,
                used::add);
        if (statSegments) {
            int segments = 0;
            int redone = 0;
            for (ptfence.calls.CallSegments c : used) {
                segments += c.segments();
                redone += c.redone();
            }
            System.err.println("call views: " + used.size() + " runs in PSB segments, " + segments + " segments, "
                    + redone + " decoded again");
        }
    }

    /**
     * What the text call views take from the recording's own records, by the sample views' rule
     * ({@link RecordReads}): the samples of other recorded events, printed among the lines, and the files perf reads
     * outside its decoder's walks (those samples' code, the files a vdso mapping probes), which decide the walk
     * failures in missing code it reports. The records are read again at once where other events' samples are to be
     * printed, else only at the view's first loss (the reads matter nowhere else): a recording of the trace alone
     * decoded without a loss is read once.
     */
    private static void recordReads(RecordingDecode rd, CallTraceView view, ptfence.script.TimeRanges time,
            ptfence.script.SampleFilters filters, boolean graphFunction)
            throws IOException {
        java.util.Map<Long, String> printed = new java.util.HashMap<>(); // the printed events' ids: their names
        String single = null; // one event recorded: every sample is its, whatever its id says (as SidebandLines)
        List<String> eventNames = rd.perfEventNames();
        for (int i = 0; i < rd.eventAttrs.size() && i < rd.eventIds.size(); i++) {
            EventAttr a = rd.eventAttrs.get(i);
            if (RecordReads.printed(a.type(), a.config(), rd.pt.pmuType())) {
                for (long id : rd.eventIds.get(i)) {
                    printed.put(id, eventNames.get(i));
                }
                single = rd.eventAttrs.size() == 1 ? eventNames.get(i) : null;
            }
        }
        if (printed.isEmpty() && single == null) {
            view.fileReads(() -> {
                try {
                    return readRecords(rd, printed, null, null, time, filters);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            return;
        }
        if (graphFunction) {
            // perf's show_event decides each recorded sample by its thread's state at its turn, and whether it is
            // printed decides the file reads that make perf report walk failures: not modelled yet
            throw new BadInputException("--graph-function on a recording with samples of other events ("
                    + rd.perfEventNames().stream().filter(n -> !n.startsWith("intel_pt") && !n.startsWith("dummy"))
                    .findFirst().orElse("recorded") + "): not done yet");
        }
        RecordReads.Files reads = readRecords(rd, printed, single, view, time, filters);
        view.fileReads(() -> reads);
    }

    /**
     * One pass over the records: the file reads, and the printed samples handed to {@code view} (if not null); a
     * sample outside the --time ranges is neither (RecordReads.dropped, the sample views' rule).
     */
    private static RecordReads.Files readRecords(RecordingDecode rd, java.util.Map<Long, String> printedIds,
            String single,
            CallTraceView view, ptfence.script.TimeRanges ranges,
            ptfence.script.SampleFilters filters) throws IOException {
        List<long[]> at = new ArrayList<>();
        List<String> files = new ArrayList<>();
        List<long[]> printed = new ArrayList<>();
        List<String> miscColumns = new ArrayList<>();
        List<String> printedNames = new ArrayList<>();
        try (PerfDataFile f = rd.openPerfData()) {
            PerfDataFile.RecordReader r = f.records();
            try {
                while (r.hasNext()) {
                    PerfRecord rec = r.next();
                    if (rec instanceof PerfRecord.Sample s) {
                        String name = single != null ? single : printedIds.get(s.id() != 0 ? s.id() : s.identifier());
                        if (name != null
                                && !RecordReads.dropped(ranges, s.time()) && (!filters.any()
                                || filters.kept(rd.symbols, s.pid(), s.tid(), rd.sideband.commAt(s.tid(), s.time()),
                                        s.ip(), s.time()))) {
                            printed.add(new long[] {s.time(), s.pid(), s.tid(), s.cpu(), printed.size(), s.ip(),
                                s.period()});
                            printedNames.add(name);
                            miscColumns.add(ptfence.script.SidebandLines.miscColumn(s));
                            read(at, files, s.time(), RecordReads.ofSample(rd.symbols, s, s.time()));
                        }
                    } else if (RecordReads.vdso(rec)) {
                        long time = rec.sampleId().time();
                        for (String file : RecordReads.ofMapping(rd.symbols, rec, time)) {
                            read(at, files, time, file);
                        }
                    }
                }
            } catch (BadInputException e) {
                // the decode reported the damage; the reads stop where the records do
            }
        }
        at.sort(Comparator.<long[]>comparingLong(x -> x[0]).thenComparingLong(x -> x[1]));
        long[] times = new long[at.size()];
        String[] names = new String[at.size()];
        for (int i = 0; i < times.length; i++) {
            times[i] = at.get(i)[0];
            names[i] = files.get((int) at.get(i)[1]);
        }
        if (view != null) {
            printed.sort(Comparator.<long[]>comparingLong(x -> x[0]).thenComparingLong(x -> x[4]));
            long[] sampleTimes = new long[printed.size()];
            int[][] tasks = new int[printed.size()][];
            long[] ips = new long[printed.size()];
            long[] periods = new long[printed.size()];
            String[] events = new String[printed.size()];
            String[] miscs = new String[printed.size()];
            for (int i = 0; i < sampleTimes.length; i++) {
                long[] p = printed.get(i);
                sampleTimes[i] = p[0];
                tasks[i] = new int[] {(int) p[1], (int) p[2], (int) p[3]};
                ips[i] = p[5];
                periods[i] = p[6];
                events[i] = printedNames.get((int) p[4]);
                miscs[i] = miscColumns.get((int) p[4]);
            }
            view.recordedSamples(sampleTimes, tasks, ips, periods, events, miscs);
        }
        return new RecordReads.Files(times, names);
    }

    private static void read(List<long[]> at, List<String> files, long time, String file) {
        if (file != null) {
            at.add(new long[] {time, at.size()});
            files.add(file);
        }
    }

    /** {@code view} with only the branches that have one of {@code flags} (the stacks still see every one). */
    private static CallView filtered(CallView view, int flags) {
        return new CallView() {
            @Override
            public void item(ThreadStack t, ptfence.calls.FlowItem item) throws IOException {
                if (!(item instanceof ptfence.calls.FlowItem.Branch b) || (b.flags() & flags) != 0) {
                    view.item(t, item);
                }
            }

            @Override
            public void end() throws IOException {
                view.end();
            }

            @Override
            public boolean countsIpc() {
                return view.countsIpc();
            }

            @Override
            public void ran(ThreadStack t, long insns, long time) {
                view.ran(t, insns, time);
            }

            @Override
            public void enter(ThreadStack t, int level, long time) {
                view.enter(t, level, time);
            }

            @Override
            public void leave(ThreadStack t, int level, long time, boolean lost) {
                view.leave(t, level, time, lost);
            }
        };
    }

    /**
     * perf's default fields as this recording can show them: no cpu for a per-thread one, no time untimed, and as
     * perf checks a type's fields against the first event of that type, not those a recorded hardware event (cycles
     * sampled beside intel_pt) lacks: the synthesized branches are hardware events too.
     */
    static SampleFields defaults(RecordingDecode rd, SampleFields view) {
        long st = rd.hardwareSampleType;
        boolean cpu = rd.pt.perCpuMmaps() && (st < 0 || (st & ptfence.perfdata.SampleType.CPU) != 0);
        boolean time = rd.tscEnabled && (st < 0 || (st & ptfence.perfdata.SampleType.TIME) != 0);
        SampleFields f = view.forRecording(cpu, time);
        if (st >= 0 && (st & ptfence.perfdata.SampleType.IP) == 0 && !f.userSet()) {
            f = new SampleFields(f.bits() & ~SampleFields.IP, false, f.nanosecs(), f.dsoPad());
        }
        return f;
    }

    /**
     * The fields of events of type {@code type} as -F and the view's own changes left them ({@code view}: the view's
     * defaults, for how it prints: nanoseconds, the dso padding); perf's flags switch is one for all types.
     */
    static SampleFields given(ptfence.script.FieldSet fields, ptfence.script.FieldSet.Type type, SampleFields view) {
        long bits = fields.fields(type) | (fields.flags() ? SampleFields.FLAGS : 0);
        return new SampleFields(bits, fields.userSet(type), view.nanosecs(), view.dsoPad());
    }

    /**
     * The recording's code as perf script reads an instruction a sample does not carry (-F insn, insnlen): the
     * bytes at the address as the CPU's task had them mapped then, decoded for the instruction's length.
     */
    private static PerfLines.Code code(RecordingDecode rd) {
        java.util.Map<Integer, ptfence.image.CodeSpace> spaces = new java.util.HashMap<>();
        ptfence.insn.X86Decoder x86 = new ptfence.insn.X86Decoder();
        byte[] bytes = new byte[16];
        return (ip, time, cpu, pid, into) -> {
            ptfence.image.CodeSpace space = spaces.computeIfAbsent(pid, p -> rd.code.forCpu(cpu, p));
            long at = !space.timed() || time < 0 ? ptfence.image.CodeSpace.ANY_TIME : rd.code.clock().toDecoder(time);
            int n = space.read(ip, at, bytes, 0, bytes.length);
            if (n <= 0 || x86.decode(bytes, 0, n, ptfence.insn.ExecMode.BITS64) == 0) {
                return 0;
            }
            System.arraycopy(bytes, 0, into, 0, x86.length);
            return x86.length;
        };
    }

    /** The same for synthesized events (psb, cbr, ...): perf shows their cpu also in a per-thread recording. */
    static SampleFields events(RecordingDecode rd, SampleFields view) {
        return view.forRecording(true, rd.tscEnabled);
    }

    /**
     * What perf's lines take from the recording: the synthesized branches event's name and the event name width,
     * the TSC frequency (intel_pt's ns-to-ticks of one second) and the maximum non-turbo ratio (as recorded, else
     * the TSC frequency in 100 MHz steps) for cbr.
     */
    static PerfLines.Recording perfRecording(RecordingDecode rd) {
        String branches = rd.ptAttr == null ? "branches"
                : ptfence.perfdata.EventNames.synthesized("branches", rd.ptAttr);
        int width = branches.length();
        for (String n : rd.perfEventNames()) {
            width = Math.max(width, n.length());
        }
        long mult = rd.pt.timeMult();
        long shift = rd.pt.timeShift();
        long ns = 1_000_000_000L;
        long tscHz = mult == 0 ? 0 : (ns / mult << shift) + (ns % mult << shift) / mult;
        int ratio = (int) rd.pt.maxNonTurboRatio();
        if (ratio == 0) {
            ratio = (int) ((tscHz + 50_000_000) / 100_000_000);
        }
        return new PerfLines.Recording(branches, width, tscHz, ratio);
    }

    /**
     * The sideband's task on a CPU at a time, remembered per CPU with the span it runs for, so consecutive items of
     * one task (nearly all) take no lookup and get the same array back.
     */
    private static final class CpuTasks implements CallStacks.Threads {
        private final Sideband sb;
        private final java.util.Map<Integer, long[]> span = new java.util.HashMap<>();
        private final java.util.Map<Integer, int[]> task = new java.util.HashMap<>();
        private int lastCpu = Integer.MIN_VALUE;
        private long[] lastSpan;
        private int[] lastTask;

        /** perf's timeless decoding: a CPU's task is the one its sideband ends with, whatever the item's time. */
        private final boolean timeless;

        CpuTasks(Sideband sb, boolean timeless) {
            this.sb = sb;
            this.timeless = timeless;
        }

        @Override
        public int[] at(int cpu, long time) {
            time = Sideband.taskTime(time, timeless);
            long[] s = cpu == lastCpu ? lastSpan : span.get(cpu);
            if (s != null && time >= s[0] && time < s[1]) {
                return cpu == lastCpu ? lastTask : task.get(cpu);
            }
            int[] t;
            long from;
            long until;
            if (time < 0) {
                // untimed: the CPU's one task, if it ran only one (as the sample views' TaskCursor: perf's thread
                // there is the same for both)
                Sideband.Task only = sb.onlyTask(cpu);
                t = only == null || only.pid() < 0 ? null : new int[] {only.pid(), only.tid()};
                from = Long.MIN_VALUE;
                until = 0;
            } else {
                Sideband.Task k = sb.taskAt(cpu, time);
                Sideband.Task next = sb.taskAfter(cpu, time);
                t = k == null || k.pid() < 0 ? null : new int[] {k.pid(), k.tid()};
                from = k == null ? Long.MIN_VALUE : k.time();
                until = next == null ? Long.MAX_VALUE : next.time();
            }
            s = new long[] {from, until};
            span.put(cpu, s);
            task.put(cpu, t);
            lastCpu = cpu;
            lastSpan = s;
            lastTask = t;
            return t;
        }
    }

    /** The code a CPU's sink reads its far branches' opcodes from. */
    private static ptfence.image.CodeSpace sinkSpace(RecordingDecode rd, RecordingDecode.CpuTrace t) {
        return rd.code.forCpu(t.cpu(), t.tid() >= 0 ? t.tid() : -1);
    }

    /** Every CPU's branches, merged by time, through the threads' stacks into {@code view}. */
    static void run(RecordingDecode rd, CallView view) throws Exception {
        run(rd, view, false, null);
    }

    /**
     * As {@link #run(RecordingDecode, CallView)}; {@code callsOnly}: {@link BranchSink}'s items for the call views;
     * {@code perfTime}: the --time ranges perf's decoder filter runs with (null: none).
     */
    static void run(RecordingDecode rd, CallView view, boolean callsOnly, ptfence.script.TimeRanges perfTime)
            throws Exception {
        run(rd, view, callsOnly, perfTime, 0, null);
    }

    /**
     * As {@link #run(RecordingDecode, CallView, boolean, ptfence.script.TimeRanges)}, a CPU's run in PSB segments of
     * {@code segmentBytes} (0: none) where the rule allows; {@code segmentStats} is given each segmented run's decode.
     */
    static void run(RecordingDecode rd, CallView view, boolean callsOnly, ptfence.script.TimeRanges perfTime,
            long segmentBytes, java.util.function.Consumer<ptfence.calls.CallSegments> segmentStats)
            throws Exception {
        Sideband sb = rd.sideband;
        CallStacks stacks = new CallStacks(new CpuTasks(sb,
                ptfence.script.PerfEvents.timeless(rd.eventAttrs, rd.pt)), view);
        boolean timed = rd.code.timed();
        rd.<FlowItem>decodeMerged((t, q) -> {
            BranchSink.Out o = new BranchSink.Out() {
                @Override
                public void add(FlowItem item) {
                    q.add(item.time(), item);
                }

                @Override
                public void time(long time) {
                    q.add(time, null);
                }
            };
            BranchSink s = new BranchSink(t.cpu(), o, sinkSpace(rd, t), callsOnly, rd.traces.size() > 1);
            if (perfTime != null) {
                s.timeFilter(PerfScript.timeFilter(rd, perfTime, t));
            }
            if (view.countsIpc()) {
                s.countIpc();
            }
            java.util.function.LongUnaryOperator toPerf = tsc -> timed ? rd.code.clock().toPerf(tsc) : -1;
            // perf's text call views with threads to spare: a CPU's run in PSB segments on several threads
            // (docs/script.md, "PSB segments for the call views"); not under perf's --time filter, whose fast forward
            // and stop follow the whole queue
            int threads = rd.request().threads() > 0 ? rd.request().threads()
                    : Runtime.getRuntime().availableProcessors();
            int perCpu = threads / Math.max(1, rd.traces.size());
            // CPUs merged by time too: a segment's items and the times told to the merge (MergeTimes) are the
            // sequential sink's, so the merge's order is; a CPU of several runs is decoded in one piece
            // (RecordingDecode: its sink carries its state from run to run)
            RecordingDecode.RunDecode segmented = !callsOnly || perfTime != null || view.countsIpc() || perCpu < 2 || segmentBytes <= 0
                    ? null : (run, space, missing) -> {
                        ptfence.flow.PsbSegments segs = new ptfence.flow.PsbSegments(space, rd.config,
                                b -> ptfence.flow.CursorInput.of(b, rd.config.errata), run, segmentBytes);
                        if (segs.starts().length < 2) {
                            return -1;
                        }
                        ptfence.calls.CallSegments cs = new ptfence.calls.CallSegments(segs, perCpu, SEGMENT_ITEMS,
                                items -> new BranchSink(t.cpu(), items, sinkSpace(rd, t), true,
                                        rd.traces.size() > 1),
                                (sink, d) -> sink.decoder(d, toPerf), missing);
                        cs.run(o);
                        if (segmentStats != null) {
                            segmentStats.accept(cs);
                        }
                        return cs.errors();
                    };
            return new RecordingDecode.CpuPart(s, d -> s.decoder(d, toPerf), () -> { }, segmented);
        }, item -> {
            ThreadStack th = stacks.apply(item);
            try {
                view.item(th, item);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        stacks.end();
        view.end();
    }
}

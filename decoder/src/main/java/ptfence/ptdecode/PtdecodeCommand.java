package ptfence.ptdecode;

import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import ptfence.cli.BadInputException;
import ptfence.cli.CommandOutput;
import ptfence.cli.Tool;
import ptfence.func.FuncPrinter;
import ptfence.func.InsnCounts;
import ptfence.func.FunctionNames;
import ptfence.func.Invocation;

@Command(name = "ptdecode", mixinStandardHelpOptions = true, version = "ptdecode " + ptfence.cli.Version.NUMBER,
        description = {"Decode Intel PT: a recording's control flow (every CPU, merged by time), the flow through one "
                + "function (--func), or raw traces (subcommands).",
                "Code comes from, in order: the ptfence archive (by boot, address and time), perf's BPF_PROG_INFO, "
                        + "--kcore, --vmlinux, and the files processes mapped (under --sysroot).",
                "With DEBUGINFOD_URLS set (as for perf and gdb), images the recording names and the archive lacks, "
                        + "and mapped files found nowhere here, are fetched by their key or build id and checked; "
                        + "images are kept in the archive (docs/fleet.md)."},
        footer = {"", "Examples:",
                "  ptdecode                                        # ./perf.data: every CPU's flow, merged by time",
                "  perf record -o - -e intel_pt//u ls | ptdecode -  # a pipe-mode recording on stdin",
                "  ptdecode --func bpf_prog_6deef7357e7b4530 perf.data   # each run of one BPF program",
                "  ptdecode --func 6dee --summary perf.data        # (a unique tag prefix is enough) aggregate view",
                "  ptdecode --func my_prog --format jsonl perf.data     # schema: docs/func.md",
                "  ptdecode --call-trace perf.data                 # calls indented by depth (also --call-ret-trace)",
                "  ptdecode --branches --format jsonl perf.data    # every taken branch with perf's flags",
                "  ptdecode --format perfetto -o t.json perf.data  # call stacks per thread for ui.perfetto.dev",
                "  ptdecode --format folded perf.data | flamegraph.pl > f.svg   # flame graph by instructions",
                "  ptdecode --packets perf.data                    # the recording's PT packets, per AUX buffer",
                "  DEBUGINFOD_URLS=http://srv:8002 ptdecode perf.data   # a recording made on another host",
                "  ptdecode packets trace.pt                       # a raw trace, as libipt's ptdump prints it",
                "  ptdecode flow --pt trace.pt --raw code.bin:0x1000   # a raw trace, as libipt's ptxed decodes it"})
public final class PtdecodeCommand implements Callable<Integer>, ptfence.cli.LazySubcommands, ptfence.cli.QuickLine {
    @Override
    public boolean takeQuickly(String... args) {
        return QuickLines.take(this, args);
    }

    @Override
    public List<Subcommand> subcommands() {
        return List.of(new Subcommand(PacketsCommand.class, PacketsCommand::new),
                new Subcommand(FlowCommand.class, FlowCommand::new));
    }

    @Override
    public boolean allWhenNoneNamed() {
        return false; // the recording is ptdecode's own argument
    }

    @Parameters(index = "0", arity = "0..1", paramLabel = "RECORDING",
            description = "A perf.data recording (ptrec's, or perf record -e intel_pt//'s); default ./perf.data, as "
                    + "perf script; '-' reads a pipe-mode recording from stdin (perf record -o - ... | ptdecode -).")
    String recording;

    /** Positionals after RECORDING: a -s script's own arguments (PerfScriptOptions.scriptArgs). */
    @Parameters(index = "1..*", hidden = true, paramLabel = "ARG")
    List<String> moreArgs = new java.util.ArrayList<>();

    @Option(names = "--func", paramLabel = "NAME", description = "Show each invocation of NAME: bpf_prog_<tag> "
            + "(a unique tag prefix is enough), bpf_prog_<tag>_<name>, a BPF program name, or a kernel/user symbol.")
    String func;

    @Option(names = "--summary", description = "With --func: the aggregate view (counts, paths, coverage).")
    boolean summary;

    @Option(names = "--source", description = "With --func: the flow as BPF source lines, where the archive has "
            + "line info; for a program without (bcc's), the source bcc stored for it, then the flow.")
    boolean source;

    @Option(names = "--bpf-output-type", paramLabel = "STRUCT", description = "Decode bpf-output payloads as this "
            + "BTF struct (the recording's BPF programs' BTF, else the kernel's); default: the one struct of the "
            + "programs' BTF whose size is the payload's, if only one is (docs/func.md).")
    String bpfOutputType;

    // Defaults here are field initializers, not defaultValue: picocli keeps a field's initial value when no
    // defaultValue is given, and the line QuickLines takes without picocli starts from the same fields.
    @Option(names = "--format", paramLabel = "text|jsonl|perfetto|folded",
            description = "Output format (default: ${DEFAULT-VALUE}); perfetto: call stacks per thread (with --func: "
                    + "its invocations); folded: stacks for flame graphs.")
    String format = "text";

    @picocli.CommandLine.Mixin
    CallViews calls = new CallViews();

    @Option(names = "--archive", paramLabel = "DIR", description = "The ptfence archive (default: $PTFENCE_ARCHIVE, "
            + "else ptarchive's default).")
    Path archive;

    @Option(names = "--recording", paramLabel = "ID", description = "The archive's recording to use when the "
            + "perf.data moved (default: matched by path, else by its BPF programs).")
    String recordingId;

    @Option(names = "--no-debuginfod", description = "Ask no debuginfod server. By default, with DEBUGINFOD_URLS set "
            + "(as perf and gdb read it), the images the recording names and the archive lacks, and mapped files "
            + "found nowhere here, are fetched by key or build id, checked, and images kept in the archive.")
    boolean noDebuginfod;
    @Option(names = "--kcore", paramLabel = "DIR", description = "A kcore copy (perf record --kcore's directory).")
    Path kcore;

    @Option(names = "--vmlinux", paramLabel = "FILE", description = "The kernel's ELF image.")
    Path vmlinux;

    @Option(names = "--kallsyms", paramLabel = "FILE", description = "A copy of /proc/kallsyms, for kernel symbols.")
    Path kallsyms;

    @Option(names = "--sysroot", paramLabel = "DIR", description = "Where the recorded processes' files are.")
    Path sysroot;

    @Option(names = "--jit-dir", paramLabel = "DIR", description = "Where the recorded processes' JIT files are "
            + "(jit-PID.dump, perf-PID.map), for a recording made elsewhere (default: beside the recording, then "
            + "/tmp for maps and the dump's recorded path).")
    List<Path> jitDirs = new java.util.ArrayList<>();

    @Option(names = "--time", paramLabel = "START,END", description = "Only this perf time range, in seconds as "
            + "perf script prints them (either end may be empty).")
    String time;

    @Option(names = {"-C", "--cpu"}, paramLabel = "CPUS", description = "Only these CPUs (0,2-3).")
    String cpus;

    @Option(names = "--threads", paramLabel = "N",
            description = "Decode CPUs on N threads (default: one per core).")
    int threads = 0; // one per core


    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal).")
    Boolean progress;

    @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "Write to FILE instead of stdout.")
    Path output;

    @Option(names = "--strict", description = "Exit with status 2 if the trace had decode errors (default: report "
            + "them, count them on stderr and go on, as perf does).")
    boolean strict;

    @Option(names = {"-v", "--verbose"}, description = "Also list on stderr each place whose code was missing "
            + "(without it: one line per kind, with counts); may be repeated, as perf's -v.")
    boolean[] verbose;

    @picocli.CommandLine.Mixin
    ThreadOptions threadOptions = new ThreadOptions();

    @picocli.CommandLine.Mixin
    PerfScriptOptions perf = new PerfScriptOptions();

    @Option(names = "--packets", description = "Print the recording's PT packets instead (as 'ptdecode packets').")
    boolean packets;

    /** Where output goes (tests replace it). */
    java.io.OutputStream stdout = ptfence.cli.Stdout.stream();
    PrintStream stderr = System.err;
    java.io.InputStream stdin = System.in;
    /** Where ./perf.data is looked for (the working directory; tests point it elsewhere). */
    Path directory = Path.of("");

    @Override
    public Integer call() throws Exception {
        if (perf.list || perf.listDlfilters) {
            // perf answers these while it reads its options, whatever else the line says
            java.io.PrintStream ps = new java.io.PrintStream(stdout, false, java.nio.charset.StandardCharsets.UTF_8);
            if (perf.list) {
                ptfence.script.InstalledTools.scripts(ps);
            } else {
                // perf lists while it parses its options, so a -v after it is not yet seen: the short list
                ptfence.script.InstalledTools.dlfilters(ps, false);
            }
            ps.flush();
            return Tool.EXIT_OK;
        }
        scriptArgs = perf.scriptArgs(recording, moreArgs);
        if (scriptArgs == null) {
            // with -i the first positional is the extra one ('ptdecode script -i FILE': perf's word, not the entry)
            throw new BadInputException("unexpected argument '" + (moreArgs.isEmpty() ? recording : moreArgs.get(0))
                    + "' (one RECORDING; "
                    + "arguments after it go to a script given by -s)");
        }
        if (perf.script != null && (perf.input != null || perf.perfEntry)) {
            recording = null; // perf: what follows the options is the script's
        }
        if (perf.input != null) {
            if (recording != null && !recording.equals(perf.input)) {
                throw new BadInputException("-i " + perf.input + " and " + recording + ": give the recording once");
            }
            recording = perf.input;
        }
        if (perf.symfs != null) {
            if (sysroot != null && !sysroot.equals(perf.symfs)) {
                throw new BadInputException("--symfs and --sysroot name two directories: give one");
            }
            sysroot = perf.symfs;
        }
        if (perf.vmlinux != null) {
            vmlinux = perf.vmlinux;
        }
        if (recording == null) {
            recording = directory.resolve("perf.data").toString(); // as perf script (and where ptrec writes)
            if (!java.nio.file.Files.exists(Path.of(recording))) {
                throw new BadInputException("perf.data: no such file (with no RECORDING ptdecode reads ./perf.data; "
                        + "record with 'ptrec' or 'perf record -e intel_pt//', or see 'ptdecode --help')");
            }
        }
        if (packets) {
            if (!List.of("text", "jsonl").contains(format)) {
                throw new BadInputException("--packets --format " + format + ": expected text (ptdump's) or jsonl");
            }
            PacketsCommand p = new PacketsCommand();
            p.trace = recording;
            p.stdout = stdout;
            p.stderr = stderr;
            p.stdin = stdin;
            p.output = output;
            p.format = format.equals("jsonl") ? PacketsCommand.Format.jsonl : PacketsCommand.Format.ptdump;
            return p.call();
        }
        if (!List.of("text", "jsonl", "perfetto", "folded").contains(format)) {
            throw new BadInputException("--format " + format + ": expected text, jsonl, perfetto or folded");
        }
        if (func == null && (summary || source)) {
            throw new BadInputException("--summary and --source need --func NAME");
        }
        calls.check(format, func);
        if (func == null && calls.wanted(format) && (threadOptions.srcline || threadOptions.dso
                || threadOptions.perThread)) {
            // the call views name functions, one per thread already: these shape the instruction listing only
            throw new BadInputException((threadOptions.srcline ? "--srcline" : threadOptions.dso ? "--dso"
                    : "--per-thread") + " is an option of the instruction listing, not of the call views (--call-trace, "
                    + "--call-ret-trace, --branches, --format perfetto or folded)");
        }
        // Each is one view of the invocations; silently printing one of two asked for would hide the other.
        if (summary && source) {
            throw new BadInputException("--summary and --source are two views of --func: give one");
        }
        if (format.equals("perfetto") && (summary || source)) {
            throw new BadInputException((summary ? "--summary" : "--source") + " has no perfetto form (--format "
                    + "perfetto draws the invocations themselves): use --format text or jsonl");
        }
        if (threads < 0) {
            throw new BadInputException("--threads " + threads + ": expected a count of threads (0: one per core)");
        }
        boolean perfMode = perf.given();
        perf.callViews = calls.callTrace || calls.callRetTrace;
        if (perfMode && perf.unsupported() != null) {
            throw new BadInputException(perf.unsupported());
        }
        if (perfMode && func != null) {
            throw new BadInputException("--func is a view of ptdecode's own, not of perf script's options (-F, --itrace, "
                    + "...): leave one out");
        }
        if (perfMode && !format.equals("text")) {
            throw new BadInputException("--format " + format + " with perf script's options: perf script prints text");
        }
        if (perf.reltime && perf.deltatime) {
            throw new BadInputException("--reltime and --deltatime: give one (as perf script)");
        }
        long[] range = time == null || needsSampleTimes(time, perf.reltime) ? new long[] {Long.MIN_VALUE,
            Long.MAX_VALUE} : hull(ptfence.script.TimeRanges.parse(time, 0, 0, false));
        if (sysroot != null) {
            InputKind.requireDirectory(sysroot, sysroot.equals(perf.symfs) ? "--symfs" : "--sysroot");
        }
        Path file = Path.of(recording);
        Path kcoreDir = kcore;
        if (java.nio.file.Files.isDirectory(file) && java.nio.file.Files.isRegularFile(file.resolve("data"))) {
            // perf record --kcore writes a directory: the recording in "data", the kernel text in "kcore_dir"
            if (kcoreDir == null && java.nio.file.Files.isDirectory(file.resolve("kcore_dir"))) {
                kcoreDir = file.resolve("kcore_dir");
            }
            file = file.resolve("data");
        }
        RecordingDecode rd = new RecordingDecode(new RecordingDecode.Request(file, archive,
                archive != null, recordingId, kcoreDir, vmlinux, kallsyms, sysroot, func, format, summary, source,
                range[0], range[1], cpuSet(cpus), threads,
                ptfence.cli.Progress.wanted(progress), !noDebuginfod), stderr);
        rd.threads = threadOptions.validate();
        rd.lenientCpus = perfMode;
        rd.recordsOnly = perfMode;
        rd.outputsOnly = func == null; // a --bpf-output recording without trace still has samples to show
        rd.bpfOutputType = bpfOutputType;
        for (Path d : jitDirs) {
            InputKind.requireDirectory(d, "--jit-dir");
        }
        rd.jitDirs = jitDirs;
        rd.verbose = verbose != null && verbose.length > 0;
        if (func != null && (threadOptions.srcline || threadOptions.perThread)) {
            throw new BadInputException((threadOptions.srcline ? "--srcline" : "--per-thread") + " is a view of the "
                    + "whole recording's flow, not of --func (--pid, --tid and --comm do select invocations)");
        }
        if (perfMode && (perf.header || perf.headerOnly) && recording.equals("-")) {
            // perf's "captured on" is its input's mtime, taken as it opens it (a pipe's: its last write by then)
            captured = java.nio.file.Files.getLastModifiedTime(Path.of("/proc/self/fd/0")).toInstant();
        }
        if (recording.equals("-")) {
            rd.fromStdin(java.nio.ByteBuffer.wrap(stdin.readAllBytes()));
        } else if (InputKind.isFifo(file)) {
            rd.fromStream(file.toString(), java.nio.ByteBuffer.wrap(java.nio.file.Files.readAllBytes(file)));
        }
        List<Path> inputs = new java.util.ArrayList<>(java.util.Arrays.asList(file, vmlinux, kallsyms));
        if (archive != null) {
            inputs.add(archive.resolve("data.mdb"));
            inputs.add(archive.resolve("lock.mdb"));
        }
        try (CommandOutput co = CommandOutput.open(output, stdout, inputs)) {
            if (perfMode && perf.headerOnly) {
                rd.checkInput();
                try (ptfence.perfdata.PerfDataFile f = rd.openRecording()) {
                    co.writer().print(header(f));
                }
                return co.finish(0);
            }
            rd.load();
            if (perfMode && cpus != null) {
                perfCpuCheck(rd.eventAttrs, cpuSet(cpus), rd.nrCpusAvail, stderr);
            }
            ptfence.script.TimeRanges ranges = ptfence.script.TimeRanges.parse(time, rd.firstSampleTime,
                    rd.lastSampleTime, perf.reltime);
            if (time != null) {
                long[] h = hull(ranges);
                rd.timeRange(h[0], h[1]);
            }
            calls.bytes = co.stream();
            int status = perfMode ? perfScript(rd, ranges, co) : decode(rd, co.writer());
            return co.finish(status); // a failed --strict leaves an existing -o file as it was
        }
    }

    private static boolean needsSampleTimes(String spec, boolean reltime) {
        return reltime || spec.indexOf('%') >= 0;
    }

    /** The earliest and latest perf time the ranges keep. */
    private static long[] hull(ptfence.script.TimeRanges r) {
        if (r.isEmpty()) {
            return new long[] {Long.MIN_VALUE, Long.MAX_VALUE};
        }
        long from = r.earliest() == 0 ? Long.MIN_VALUE : r.earliest();
        return new long[] {from, r.latest()};
    }

    /** -s: the script's own arguments (PerfScriptOptions.scriptArgs). */
    private List<String> scriptArgs = List.of();

    /** stdin's mtime, for --header's "captured on" (a file's is read from the file opened). */
    private java.time.Instant captured;

    /**
     * --header's lines (perf_session__fprintf_info), and in pipe mode with --header or -I the feature records' own
     * (perf prints each as it reads it, ahead of the samples).
     */
    private String header(ptfence.perfdata.PerfDataFile f) throws java.io.IOException {
        StringBuilder sb = new StringBuilder();
        if (perf.header || perf.headerOnly) {
            if (captured == null) {
                captured = f.lastModified();
            }
            sb.append(ptfence.perfdata.HeaderInfo.text(f, captured, java.time.ZoneId.systemDefault(), perf.showInfo));
        }
        if (f.pipeMode() && !perf.headerOnly) {
            var all = f.features();
            all.all().values().forEach(x -> sb.append(ptfence.perfdata.HeaderInfo.feature(x, all, f.attrs(),
                    perf.showInfo)));
        }
        return sb.toString();
    }

    /**
     * perf script's fields for --call-trace or --call-ret-trace with -F: the view's own changes applied where the
     * option stands among the -F (perf parses its options in order), then perf's checks against the events the
     * view's --itrace letters synthesize, as the sample views check theirs; perf's warnings go to stderr.
     */
    private ptfence.script.FieldSet callViewFields(RecordingDecode rd) {
        ptfence.script.FieldSet fields = new ptfence.script.FieldSet();
        int at = perf.callViewAt < 0 ? perf.fields.size() : perf.callViewAt;
        for (int i = 0; i <= perf.fields.size(); i++) {
            if (i == at) {
                fields.parse(calls.callRetTrace ? CallViews.CALL_RET_TRACE_FIELDS : CallViews.CALL_TRACE_FIELDS);
            }
            if (i < perf.fields.size()) {
                fields.parse(perf.fields.get(i));
            }
        }
        ptfence.script.ItraceOptions itrace = ptfence.script.ItraceOptions.parseAll(List.of(calls.callRetTrace
                ? "crewp" : "cewp"));
        new ptfence.script.PerfEvents(rd.eventAttrs, rd.perfEventNames(), rd.pt, itrace).check(fields, true);
        fields.warn(stderr);
        return fields;
    }

    /** The recording's own records perf's --show-*-events ask to print. */
    private ptfence.script.SidebandLines.Show shownRecords() {
        return new ptfence.script.SidebandLines.Show(perf.showTask, perf.showMmap, perf.showSwitch, perf.showLost,
                perf.showBpf, perf.showTextPoke, perf.showNamespace, perf.showCgroup);
    }

    /** perf script's view of the recording, as its options ask. */
    private int perfScript(RecordingDecode rd, ptfence.script.TimeRanges ranges, CommandOutput co) throws Exception {
        PrintWriter out = co.writer();
        if (perf.header || perf.showInfo) {
            try (ptfence.perfdata.PerfDataFile f = rd.openRecording()) {
                out.print(header(f));
                out.flush();
            }
        }
        perfOptionsOnRecording(rd);
        if (perf.showRound && !perf.dumpRaw && !perf.dumpUnsorted) {
            roundEvents(rd);
        }
        if (perf.perEventDump && (calls.callTrace || calls.callRetTrace || perf.dumpRaw || perf.dumpUnsorted)) {
            throw new BadInputException("--per-event-dump with " + (perf.dumpRaw || perf.dumpUnsorted ? "-D"
                    : "--call-trace or --call-ret-trace") + ": not done yet");
        }
        if (calls.callTrace || calls.callRetTrace) {
            if (!perf.noItrace && ptfence.script.ItraceOptions.parseAll(perf.itraceSpecs()).quick > 0) {
                // perf's quick decode makes its calls and returns from IP packets alone (no code read): the call
                // views walk the code, so they would print a full decode
                throw new BadInputException("--call-trace or --call-ret-trace with --itrace=q: not done yet (perf's "
                        + "quick decode is done for the sample views: --itrace=bq, iq...)");
            }
            if (perf.dlfilter != null) {
                throw new BadInputException("--dlfilter with --call-trace or --call-ret-trace: not done yet (the "
                        + "filter sees the samples of --itrace's other views)");
            }
            calls.timeRanges = ranges;
            calls.filters = sampleFilters();
            calls.fields = perf.fields.isEmpty() ? null : callViewFields(rd);
            calls.graphFunctions = perf.graphFunction == null ? null
                    : java.util.Arrays.stream(perf.graphFunction.split(",")).filter(x -> !x.isEmpty()).toList();
            if (perf.reltime || perf.deltatime) {
                calls.clock = new ptfence.script.PerfTime(true, perf.reltime, perf.deltatime);
            }
            ptfence.script.SidebandLines.Show show = shownRecords();
            if (!show.equals(ptfence.script.SidebandLines.Show.NONE)) {
                // perf prints the records among the call view's lines as among the samples: the sample views' lines
                ptfence.script.ItraceOptions itrace = ptfence.script.ItraceOptions.parseAll(List.of(calls.callRetTrace
                        ? "crewp" : "cewp"));
                ptfence.script.FieldSet fields = calls.fields;
                if (fields == null) {
                    fields = new ptfence.script.FieldSet();
                    fields.parse(calls.callRetTrace ? CallViews.CALL_RET_TRACE_FIELDS : CallViews.CALL_TRACE_FIELDS);
                }
                ptfence.script.ScriptConfig cfg = new ptfence.script.ScriptConfig(itrace, fields,
                        new ptfence.script.PerfEvents(rd.eventAttrs, rd.perfEventNames(), rd.pt, itrace), ranges,
                        rd.pt, true, perf.reltime, perf.deltatime, cpuSet(cpus), calls.filters);
                calls.recordLines = PerfScript.recordLines(rd, cfg, show);
            }
            calls.run(rd, rd.request(), "text", out);
            return done(rd, out);
        }
        // perf's branch samples (--itrace=b, c, r, its default cepwx) are SampleSink's too: with them come the psb,
        // cbr, ptwrite and error lines the call views' branch listing does not print
        // under --no-itrace and -D perf synthesizes no events from the trace (nor counts them in the name column)
        ptfence.script.PythonScript script = null;
        if (perf.script != null) {
            if (perf.dlfilter != null || perf.dumpRaw || perf.dumpUnsorted) {
                throw new BadInputException("-s with " + (perf.dlfilter != null ? "--dlfilter" : "-D") + ": give one");
            }
            try {
                script = ptfence.script.PythonScript.start(perf.script, scriptArgs);
            } catch (ptfence.script.PythonScript.Ended e) {
                co.stream().write(e.takePrinted());
                co.stream().flush();
                if (e.status == 0) {
                    return done(rd, out); // sys.exit(0): the script's own normal end
                }
                throw e;
            }
        }
        List<String> specs = perf.itraceSpecs();
        if (script != null && perf.itrace == null && perf.insnTrace == null && script.itrace() != null) {
            specs = List.of(script.itrace()); // perf_set_itrace_options: the script's letters where the user gave none
        }
        ptfence.script.ItraceOptions itrace = perf.noItrace || perf.dumpRaw || perf.dumpUnsorted
                ? ptfence.script.ItraceOptions.parse("") : ptfence.script.ItraceOptions.parseAll(specs);
        ptfence.script.FieldSet fields = new ptfence.script.FieldSet();
        if (perf.insnTrace != null) {
            fields.parse(perf.insnTrace.equals("disasm") ? "+insn,-event,-period" : "+insn,-event,-period");
        }
        for (String f : perf.fields) {
            fields.parse(f);
        }
        if (itrace.timeless && !ptfence.script.PerfEvents.timeless(rd.eventAttrs, rd.pt)) {
            // perf then decodes each CPU's whole trace after the records, its threads and errors untimed: a random
            // sweep of --itrace=...Z on the HASE recordings printed other threads and lines than perf's
            throw new BadInputException("itrace letter Z on a recording with timestamps: not done yet (perf's timeless "
                    + "decoding of a timed trace); without Z the lines are perf's");
        }
        ptfence.script.PerfEvents events = new ptfence.script.PerfEvents(rd.eventAttrs, rd.perfEventNames(), rd.pt, itrace);
        events.check(fields, true);
        fields.warn(stderr);
        ptfence.script.PerfConfig.load(System.getenv(), stderr).check(stderr); // perf's ~/.perfconfig and others
        ptfence.script.SampleFilters filters = sampleFilters();
        ptfence.script.ScriptConfig cfg = new ptfence.script.ScriptConfig(itrace, fields, events, ranges, rd.pt,
                perf.ns || perf.insnTrace != null, perf.reltime, perf.deltatime, cpuSet(cpus), filters);
        cfg.maxBlocks = perf.maxBlocks == null ? 0 : perf.maxBlocks;
        cfg.fullSourcePath = perf.fullSourcePath;
        if (perf.dumpRaw || perf.dumpUnsorted) {
            PerfScript.dumpRaw(rd, cfg, recording, !perf.noItrace, co.stream(),
                    perf.dumpUnsorted || perf.showRound, perf.showRound);
            return done(rd, out);
        }
        if (script != null) {
            try (ptfence.script.PythonScript py = script) {
                cfg.script = py;
                co.stream().write(py.prologue());
                PerfScript.run(rd, cfg, ptfence.script.SidebandLines.Show.NONE, py.output(co.stream()), !perf.noItrace);
                co.stream().write(py.end());
            } catch (Exception ex) {
                // however the merge wrapped it: the script ended the run
                ptfence.script.PythonScript.Ended e = ptfence.script.PythonScript.Ended.in(ex);
                if (e == null) {
                    throw ex;
                }
                co.stream().write(e.takePrinted()); // (nothing where a handler's call already wrote it)
                co.stream().flush();
                if (e.status == 0) {
                    return done(rd, out);
                }
                throw e;
            }
            return done(rd, out);
        }
        if (perf.dlfilter != null) {
            cfg.dlfilter = ptfence.dlfilter.DlFilter.load(perf.dlfilter, perf.dlargs);
            cfg.dlfilter.start(co.stream());
        }
        // --xed: perf pipes its lines through xed -F insn: -A -64; the project's disassembler stands in for XED
        java.io.OutputStream lines = perf.xed ? new ptfence.script.XedFilter(co.stream()) : co.stream();
        if (perf.perEventDump) {
            cfg.perEvent = perEventDump(cfg.events);
        }
        try {
            PerfScript.run(rd, cfg, shownRecords(), lines, !perf.noItrace);
            if (perf.xed) {
                lines.close();
            }
            if (cfg.perEvent != null) {
                cfg.perEvent.finish(co.stream());
            }
        } finally {
            if (cfg.perEvent != null) {
                cfg.perEvent.close();
            }
            if (cfg.dlfilter != null) {
                // what stop() prints comes after every line, as in perf; perf's cleanup calls it after a failed run
                // too (a filter_event that stopped it)
                cfg.dlfilter.stop(co.stream());
            }
        }
        return done(rd, out);
    }

    private static java.util.Set<Integer> ints(List<String> values) {
        java.util.Set<Integer> out = new java.util.LinkedHashSet<>();
        for (String v : values) {
            out.add(Integer.parseInt(v.trim()));
        }
        return out;
    }

    /** The view asked for, into {@code out}; the exit status. */
    private int decode(RecordingDecode rd, PrintWriter out) throws Exception {
        {
            if (func == null && calls.wanted(format)) {
                calls.run(rd, rd.request(), format, out);
                return done(rd, out);
            }
            if (func == null) {
                rd.merged(out);
                return done(rd, out);
            }
            FunctionNames.Target target = FunctionNames.resolve(func, rd.code, rd.symbols, recording
                    + (rd.recordingUsed != null ? " and the archive" : ""));
            if (format.equals("perfetto")) {
                ptfence.func.PerfettoWriter.Stream w = new ptfence.func.PerfettoWriter.Stream(func, out,
                        !rd.tscEnabled).outputs(rd.bpfOutputFormat());
                rd.invocations(target, inv -> {
                    try {
                        w.add(inv);
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                w.end();
                return done(rd, out);
            }
            boolean jsonl = format.equals("jsonl");
            FuncPrinter p = new FuncPrinter(out, jsonl).outputs(rd.bpfOutputFormat());
            p.header(recording, target);
            InsnCounts counts = new InsnCounts();
            java.util.Set<String> programsRun = new java.util.LinkedHashSet<>();
            if (summary) {
                ptfence.func.FuncSummary.Builder b = new ptfence.func.FuncSummary.Builder(target.name());
                rd.invocations(target, inv -> {
                    b.add(inv);
                    programsRun.addAll(inv.programs());
                });
                ptfence.func.FuncSummary s = b.build(codeOf(rd, target, programsRun), 10);
                ptfence.func.SourceLines lines = jsonl ? null
                        : rd.sourceLines(target, rd.programsNamed(programsRun));
                for (String l : jsonl ? rd.runsOnJson(target.programs()) : rd.runsOn(target.programs())) {
                    out.append(l).append('\n');
                }
                out.append(jsonl ? s.json() + "\n" : s.text(lines == null || lines.isEmpty() ? null : lines));
                return done(rd, out);
            }
            ptfence.func.SourceLines lines = source ? rd.sourceLines(target, rd.tailCallCandidates(target)) : null;
            if (source && lines.lines().stream().noneMatch(l -> inside(target.functions(), l.address()))) {
                // No line info (bcc loads without BTF): the source bcc stored, if the archive kept it, then the flow
                List<ptfence.region.BpfMetadata.SourceFile> files = new java.util.ArrayList<>();
                target.programs().stream().filter(x -> x.metadata() != null)
                        .forEach(x -> x.metadata().sources().stream().filter(f -> !files.contains(f)).forEach(files::add));
                if (files.isEmpty()) {
                    throw new BadInputException("--source: no line info for " + func + " in the archive or "
                            + recording + " (BPF programs loaded with BTF have it; ptrec archives it, and bcc's "
                            + "stored source for programs without it)");
                }
                printBccSources(out, files, jsonl);
            } else if (source) {
                // The lines of every program a tail call may go on in; shown are the target's and those run.
                ptfence.func.SourceLines.Profiler profiler = lines.profiler();
                rd.invocations(target, inv -> {
                    profiler.add(inv);
                    counts.add(inv.instructions());
                    programsRun.addAll(inv.programs());
                });
                List<ptfence.sideband.CodeMap.Function> shown = new java.util.ArrayList<>();
                target.programs().forEach(x -> shown.addAll(x.functions()));
                rd.programsNamed(programsRun).forEach(x -> shown.addAll(x.functions()));
                ptfence.func.SourceLines.Profile profile = profiler.profile().where(a -> inside(shown, a));
                if (jsonl) {
                    profile.jsonLines().forEach(l -> out.append(l).append('\n'));
                } else {
                    out.append(profile.text());
                }
                p.summary(counts);
                return done(rd, out);
            }
            rd.invocations(target, inv -> {
                p.names(a -> {
                    for (var f : target.functions()) {
                        if (f.covers(a, inv.entryTime() >= 0 ? inv.entryTime() : f.from())) {
                            return null; // inside the function: the address says it all
                        }
                    }
                    ptfence.symbol.Symbol sym = rd.symbols.symbol(a, inv.entryTime(), inv.pid());
                    return sym != null ? sym.describe(a) : rd.code.describe(a, inv.entryTime());
                });
                long t = inv.entryTime() >= 0 ? rd.code.clock().toDecoder(inv.entryTime())
                        : ptfence.image.CodeSpace.ANY_TIME;
                p.invocation(inv, rd.code.forCpu(inv.cpu(), -1), t);
                counts.add(inv.instructions());
            });
            p.summary(counts);
            return done(rd, out);
        }
    }

    /**
     * The source files bcc stored for a program without line info, ahead of its flow: they cannot be mapped to
     * addresses, so they are shown whole, once. Text: "# source NAME (bcc's store, no line info)" then the file's
     * lines; jsonl: one {"type":"source-file",...} object per file.
     */
    private static void printBccSources(PrintWriter out, List<ptfence.region.BpfMetadata.SourceFile> files,
            boolean jsonl) {
        for (ptfence.region.BpfMetadata.SourceFile f : files) {
            String text = new String(f.content(), java.nio.charset.StandardCharsets.UTF_8);
            if (jsonl) {
                out.append("{\"type\":\"source-file\",\"file\":").append(ptfence.cli.Json.quote(f.name()))
                        .append(",\"origin\":\"bcc\",\"text\":").append(ptfence.cli.Json.quote(text)).append("}\n");
                continue;
            }
            out.append("# source ").append(f.name()).append(" (bcc's store, no line info)\n");
            text.lines().forEach(l -> out.append("#   ").append(l).append('\n'));
        }
    }

    /**
     * After a view: the decode errors on stderr in one line, as perf's warning counts them, and a thread filter that
     * matched nothing; with --strict, any decode error or damage to the recording makes the exit status 2 (an -o
     * file is then left as it was).
     */
    /** The perf script options whose meaning depends on the recording's events, as perf checks them. */
    private void perfOptionsOnRecording(RecordingDecode rd) {
        List<String> names = rd.perfEventNames();
        for (String[] sw : new String[][] {{"on", perf.switchOn}, {"off", perf.switchOff}}) {
            if (sw[1] != null && !names.contains(sw[1])) {
                // perf's evswitch__init: its words, and cmd_script's status for it (-2)
                stderr.println("ERROR: switch-" + sw[0] + " event not found (" + sw[1] + ")");
                stderr.println("HINT:  use 'perf evlist' to see the available event names");
                throw new PerfStatus(254);
            }
        }
        if (perf.switchOn != null || perf.switchOff != null) {
            throw new BadInputException("--switch-" + (perf.switchOn != null ? "on " + perf.switchOn : "off "
                    + perf.switchOff) + ": not done yet (perf's evswitch, which drops the samples between the events)");
        }
        if (perf.stitchLbr) {
            boolean lbrStacks = rd.eventAttrs.stream().anyMatch(a -> (a.sampleType()
                    & ptfence.perfdata.SampleType.BRANCH_STACK) != 0 && (a.branchSampleType() & (1L << 11)) != 0);
            if (lbrStacks) {
                throw new BadInputException("--stitch-lbr: not done yet (the recording has LBR call stacks; ptdecode "
                        + "prints no recorded call chains)");
            }
            // perf's words where there is no LBR call stack (PERF_SAMPLE_BRANCH_CALL_STACK) to stitch; it goes on
            stderr.println("Can't find LBR callchain. Switch off --stitch-lbr.");
            stderr.println("Please apply --call-graph lbr when recording.");
        }
        if (perf.perEventDump) {
            for (String n : names) {
                if (n.contains("/")) {
                    // perf opens FILE.EVENT.dump per event: a name with a '/' (intel_pt//u) names no such file
                    stderr.println("Couldn't create the per event dump files");
                    throw new PerfStatus(255);
                }
            }
        }
    }

    /**
     * --show-round-events: perf reads the records unordered, which its Intel PT decoder refuses (RoundEvents); its
     * words and status, after what it printed before (--header).
     */
    private void roundEvents(RecordingDecode rd) throws java.io.IOException {
        if (perf.script != null || perf.dlfilter != null) {
            throw new BadInputException("--show-round-events with " + (perf.script != null ? "-s" : "--dlfilter")
                    + ": not done yet");
        }
        ptfence.script.RoundEvents.Refusal refusal;
        try (ptfence.perfdata.PerfDataFile f = rd.openRecording()) {
            refusal = ptfence.script.RoundEvents.unordered(f);
        }
        if (refusal == null) {
            throw new BadInputException("--show-round-events: not done yet for a recording without Intel PT ahead of "
                    + "its records (perf prints them unordered, with the rounds)");
        }
        stderr.print(refusal.lines());
        stderr.flush();
        throw new PerfStatus(234);
    }

    /**
     * --per-event-dump: a file per event, named as perf names it, next to the recording as given; refused where
     * lines would go elsewhere than perf sends them (not done yet).
     */
    private ptfence.script.PerEventDump perEventDump(ptfence.script.PerfEvents events) throws java.io.IOException {
        if (perf.script != null || perf.dlfilter != null || perf.xed || recording.equals("-")) {
            throw new BadInputException("--per-event-dump with " + (perf.script != null ? "-s"
                    : perf.dlfilter != null ? "--dlfilter" : perf.xed ? "--xed" : "a pipe") + ": not done yet");
        }
        List<String> files = new java.util.ArrayList<>();
        for (ptfence.script.PerfEvents.Event e : events.events()) {
            files.add(ptfence.script.PerEventDump.fileName(recording, events.openName(e)));
        }
        return new ptfence.script.PerEventDump(files);
    }

    /** perf's exit status for a failure perf reports in its own words (already printed); ptdecode adds none. */
    static final class PerfStatus extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int status;

        PerfStatus(int status) {
            super(null, null, false, false);
            this.status = status;
        }
    }

    /**
     * A -S entry perf takes as an address (setup_addrlist: strtoul base 16 reads all of it, blanks aside; "0x" or not,
     * a sign), or null: a symbol name (one too big for 64 bits stays a name, as strtoul's ERANGE).
     */
    static Long symbolAddress(String entry) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\s*([+-]?)(?:0[xX])?([0-9a-fA-F]+)\\s*")
                .matcher(entry);
        if (!m.matches()) {
            return null;
        }
        try {
            long v = Long.parseUnsignedLong(m.group(2), 16);
            return m.group(1).equals("-") ? -v : v;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** perf script's filters of samples by who and where: --pid, --tid, --comms, --dsos, -S with --addr-range. */
    private ptfence.script.SampleFilters sampleFilters() {
        ptfence.script.ScriptConfig.SymbolFilter symbolFilter = null;
        if (perf.symbols != null) {
            java.util.Set<String> names = new java.util.LinkedHashSet<>();
            List<Long> addrs = new java.util.ArrayList<>();
            for (String s : perf.symbols) {
                String v = s.trim();
                Long address = symbolAddress(v);
                if (address != null) {
                    addrs.add(address); // perf moves it to its addr_list: it no longer names a symbol
                } else {
                    names.add(v);
                }
            }
            symbolFilter = new ptfence.script.ScriptConfig.SymbolFilter(names,
                    addrs.stream().mapToLong(Long::longValue).toArray(), perf.addrRange == null ? 0 : perf.addrRange);
        }
        java.util.Set<Integer> pids = threadOptions.pids == null ? null : ints(threadOptions.pids);
        java.util.Set<Integer> tids = threadOptions.tids == null ? null : ints(threadOptions.tids);
        java.util.Set<String> comms = threadOptions.comms == null ? null
                : new java.util.LinkedHashSet<>(threadOptions.comms);
        return new ptfence.script.SampleFilters(pids, tids, comms,
                perf.dsos == null ? null : new java.util.LinkedHashSet<>(perf.dsos), symbolFilter);
    }

    private int done(RecordingDecode rd, PrintWriter out) {
        out.flush();
        long errors = rd.reportErrors();
        String unmatched = rd.threads.unmatched(rd.sideband);
        if (unmatched != null) {
            stderr.println("ptdecode: " + unmatched);
        }
        return strict && (errors > 0 || rd.damaged()) ? Tool.EXIT_BAD_INPUT : Tool.EXIT_OK;
    }

    /** True if {@code address} lies in one of {@code functions} (at any time). */
    private static boolean inside(List<ptfence.sideband.CodeMap.Function> functions, long address) {
        return functions.stream().anyMatch(f -> Long.compareUnsigned(address - f.address(), f.length()) < 0);
    }

    /** The code of the function and of every program its invocations ran through, as decoded. */
    private static List<ptfence.image.Section> codeOf(RecordingDecode rd, FunctionNames.Target target,
            java.util.Set<String> programsRun) {
        java.util.Map<String, ptfence.image.Section> byContent = new java.util.LinkedHashMap<>();
        for (var f : target.functions()) {
            var s = rd.code.section(f.address(), f.from() == Long.MIN_VALUE ? f.to() - 1 : f.from());
            if (s != null) {
                byContent.putIfAbsent(s.address() + "/" + s.contentId(), s);
            }
        }
        for (var prog : rd.code.programs()) {
            if (programsRun.contains(prog.fullName())) {
                for (var f : prog.functions()) {
                    var s = rd.code.section(f.address(), f.from() == Long.MIN_VALUE ? f.to() - 1 : f.from());
                    if (s != null) {
                        byContent.putIfAbsent(s.address() + "/" + s.contentId(), s);
                    }
                }
            }
        }
        return List.copyOf(byContent.values());
    }

    /**
     * A CPU list as perf reads -C (libperf's cpu map): numbers as strtoul reads them with base 0 (0x hex, a leading 0
     * octal), ranges A-B (an empty B is 0), separated by single commas; a trailing comma is taken, a leading one or
     * a blank is not; an empty list is the machine's online CPUs.
     */
    static Set<Integer> cpuSet(String spec) {
        if (spec == null) {
            return null;
        }
        Set<Integer> out = new TreeSet<>();
        int[] at = {0};
        while (at[0] < spec.length() && Character.isDigit(spec.charAt(at[0]))) {
            long a = strtoul(spec, at);
            char next = at[0] < spec.length() ? spec.charAt(at[0]) : 0;
            if (a >= Integer.MAX_VALUE || next != 0 && next != ',' && next != '-') {
                throw new BadInputException("Invalid cpu_list " + spec);
            }
            long b = a;
            if (next == '-') {
                at[0]++;
                b = strtoul(spec, at);
                next = at[0] < spec.length() ? spec.charAt(at[0]) : 0;
                if (b >= Integer.MAX_VALUE || next != 0 && next != ',' || b < a) {
                    throw new BadInputException("Invalid cpu_list " + spec);
                }
            }
            for (long c = a; c <= b; c++) {
                out.add((int) c);
            }
            if (next != 0) {
                at[0]++;
            }
        }
        if (out.isEmpty()) {
            if (at[0] < spec.length()) {
                throw new BadInputException("Invalid cpu_list " + spec);
            }
            for (int c = 0; c < Runtime.getRuntime().availableProcessors(); c++) {
                out.add(c);
            }
        }
        return out;
    }

    /** C's strtoul(s + at, &end, 0) over digits only (the caller saw a digit or takes an empty number as 0). */
    private static long strtoul(String s, int[] at) {
        int i = at[0];
        int radix = 10;
        if (i + 1 < s.length() && s.charAt(i) == '0' && (s.charAt(i + 1) == 'x' || s.charAt(i + 1) == 'X')
                && i + 2 < s.length() && Character.digit(s.charAt(i + 2), 16) >= 0) {
            radix = 16;
            i += 2;
        } else if (i < s.length() && s.charAt(i) == '0') {
            radix = 8;
        }
        long v = 0;
        while (i < s.length() && Character.digit(s.charAt(i), radix) >= 0) {
            v = Math.min((long) Integer.MAX_VALUE, v * radix + Character.digit(s.charAt(i), radix));
            i++;
        }
        at[0] = i;
        return v;
    }

    /**
     * perf script's checks of -C against the recording (perf_session__cpu_bitmap): the first event of each of the
     * kernel's generic types (hardware to breakpoint; Intel PT's own type is not among them) must record the CPU,
     * and every CPU asked for must be below the recording's available CPUs.
     */
    static void perfCpuCheck(List<ptfence.perfdata.EventAttr> attrs, Set<Integer> cpus, int nrCpusAvail,
            PrintStream err) {
        for (int type = 0; type < 6; type++) { // PERF_TYPE_MAX
            for (ptfence.perfdata.EventAttr a : attrs) {
                if (a.type() == type) {
                    if ((a.sampleType() & (1L << 7)) == 0) { // PERF_SAMPLE_CPU
                        throw new BadInputException("File does not contain CPU events. Remove -C option to proceed.");
                    }
                    break;
                }
            }
        }
        for (int c : cpus) {
            if (c >= 2048) { // perf's MAX_NR_CPUS: a warning first
                err.println("Perf can support 2048 CPUs. Consider raising MAX_NR_CPUS");
            }
            if (c >= Math.min(nrCpusAvail > 0 ? nrCpusAvail : 2048, 2048)) {
                throw new BadInputException("Requested CPU " + c + " too large. Consider raising MAX_NR_CPUS");
            }
        }
    }

    public static void main(String[] args) {
        Tool.fewNativeCalls();
        Tool.main("ptdecode", new PtdecodeCommand(), args);
    }
}

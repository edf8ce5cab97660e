package ptfence.ptdecode;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import ptfence.cli.BadInputException;
import ptfence.debuginfod.ClientSettings;
import ptfence.debuginfod.DebuginfodClient;
import ptfence.debuginfod.RemoteFiles;
import ptfence.debuginfod.RemoteImages;
import ptfence.flow.CursorInput;
import ptfence.flow.FlowConfig;
import ptfence.flow.FlowDecoder;
import ptfence.flow.FlowSink;
import ptfence.flow.PtError;
import ptfence.func.FunctionNames;
import ptfence.func.Invocation;
import ptfence.func.InvocationTracker;
import ptfence.image.CodeSpace;
import ptfence.perfdata.AttrIds;
import ptfence.perfdata.AuxBuffer;
import ptfence.perfdata.AuxRuns;
import ptfence.perfdata.Feature;
import ptfence.perfdata.IntelPtInfo;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.sideband.CodeMap;
import ptfence.sideband.Sideband;
import ptfence.store.Archive;
import ptfence.store.ArchiveLocation;
import ptfence.timing.TimingConfig;

/**
 * Decodes a whole recording: the sideband and every source of code make a {@link CodeMap}, each CPU's PT stream is
 * decoded against it (CPUs in parallel), and the result is either every CPU's flow merged by time or, with a
 * function name, that function's invocations. One file past 1k lines: loading and decoding share the recording's
 * state (code map, sideband, traces, clock); what the views make of it lives beside it (MergedFlow, CallViews,
 * RecordingOutputs).
 */
final class RecordingDecode {
    /** What the command line asked for. */
    record Request(Path recording, Path archive, boolean archiveGiven, String recordingId, Path kcore, Path vmlinux,
            Path kallsyms, Path sysroot, String func, String format, boolean summary, boolean source, long timeFrom,
            long timeTo, Set<Integer> cpus, int threads, boolean progress, boolean debuginfod) {
    }

    /** One CPU's PT: its runs of AUX buffers in order. */
    record CpuTrace(int cpu, int tid, List<List<AuxBuffer>> runs) {
    }

    private Request req;
    /** stderr: its warnings, and perf's where ptdecode answers as perf (PerfScript). */
    final PrintStream err;
    private final MissingCode missing = new MissingCode();
    /** -v: every place whose code is missing, not only a line per kind. */
    boolean verbose;

    Sideband sideband = new Sideband();
    /** The times of the records perf delivers in time order, ascending: they order the CPUs' ties (QueueOrder). */
    long[] queueLimits = new long[0];
    CodeMap code;
    /** --pid/--tid/--comm (and the flow's --srcline, --per-thread); the invocations of --func obey the filters. */
    ThreadOptions threads = new ThreadOptions().validate();
    /** Names for the recording's code (every view asks here). */
    ptfence.symbol.Symbolizer symbols = ptfence.symbol.Symbolizer.NONE;
    IntelPtInfo pt;
    /** The intel_pt event (perf's synthesized events take its modifiers). */
    ptfence.perfdata.EventAttr ptAttr;
    /** Every event's name as EVENT_DESC stored it, null where it stored none (in the order of eventAttrs). */
    private final List<String> storedEventNames = new ArrayList<>();
    /** The sample type of the recording's first hardware event (-1: none), which decides perf's hardware fields. */
    long hardwareSampleType = -1;
    FlowConfig config;
    List<CpuTrace> traces = new ArrayList<>();
    String recordingUsed;
    /** The PT event had the TSC bit: the trace carries times (else no instruction will have one). */
    boolean tscEnabled;
    private String recordingBoot;
    /** The text regions the recording names (ptrec writes them), or null. */
    private Feature.TextRegions namedRegions;

    RecordingDecode(Request req, PrintStream err) {
        this.req = req;
        this.err = err;
        this.turns = new java.util.concurrent.Semaphore(Math.max(1, req.threads() > 0 ? req.threads()
                : Runtime.getRuntime().availableProcessors()));
    }

    /** A pipe-mode recording read from stdin ("-"), held in memory; null: the file {@link Request#recording}. */
    private ByteBuffer stdinBytes;

    void fromStdin(ByteBuffer bytes) {
        stdinBytes = bytes;
    }

    /** The recording read from a stream that is not stdin (a FIFO), named {@code name} in messages. */
    void fromStream(String name, ByteBuffer bytes) {
        stdinBytes = bytes;
        streamName = name;
    }

    /** What the recording read as a stream is called in messages. */
    private String streamName = "stdin";

    /** The recording again (its records are read once more for the lines perf prints from them). */
    PerfDataFile openPerfData() throws IOException {
        return openRecording();
    }

    PerfDataFile openRecording() throws IOException {
        return stdinBytes != null ? PerfDataFile.of(streamName, stdinBytes.duplicate())
                : PerfDataFile.open(req.recording());
    }

    /** A recording that is not a file (a directory, a device, missing) named for what it is. */
    void checkInput() {
        if (stdinBytes == null && Files.isDirectory(req.recording())) {
            throw new BadInputException(req.recording() + ": is a directory, not a perf.data (nor a 'perf record "
                    + "--kcore' directory, which holds a file 'data')");
        }
        String notRegular = stdinBytes == null ? InputKind.notRegular(req.recording()) : null;
        if (notRegular != null) {
            throw new BadInputException(req.recording() + ": " + notRegular + (notRegular.startsWith("no such") ? ""
                    : ", not a perf.data file (ptdecode reads a perf.data file, or a recording streamed through a "
                    + "FIFO or stdin)"));
        }
    }

    /** Reads the recording and gathers the code. */
    void load() throws IOException {
        checkInput();
        List<AuxBuffer> buffers = new ArrayList<>();
        PerfRecord.AuxtraceInfo info = null;
        try (PerfDataFile f = openRecording()) {
            PerfDataFile.RecordReader r = f.records();
            BadInputException damage = null;
            java.util.stream.LongStream.Builder limits = java.util.stream.LongStream.builder();
            try {
                while (r.hasNext()) {
                    PerfRecord rec = r.next();
                    long limit = ptfence.script.QueueOrder.limitOf(rec);
                    if (limit != 0) {
                        limits.add(limit);
                    }
                    if (rec instanceof PerfRecord.Auxtrace a) {
                        buffers.add(new AuxBuffer(r.payloadOffset(), a.size(), a.offset(), a.reference(), a.idx(),
                                a.tid(), a.cpu(), copy(a.data())));
                    } else if (rec instanceof PerfRecord.AuxtraceInfo a) {
                        info = info == null ? a : info;
                    } else {
                        sideband.add(rec);
                    }
                }
            } catch (BadInputException e) {
                damage = e; // decode what came before, then report
            }
            queueLimits = limits.build().sorted().toArray();
            // perf script's lines of a recording without trace (bpf-output samples of a --sideband-only recording):
            // the recorded events' samples alone
            boolean traceless = info == null && buffers.isEmpty() && (recordsOnly && sampledEvents(f)
                    || outputsOnly && f.attrs().stream().anyMatch(a -> ptfence.perfdata.BpfOutput.isBpfOutput(a.attr())));
            if (damage != null && (info == null || buffers.isEmpty()) && !traceless) {
                throw new BadInputException(damage.getMessage() + " (no Intel PT data before it)");
            }
            if (info == null && buffers.isEmpty() && sidebandOnly(f) && !traceless) {
                throw new BadInputException(sidebandOnlyMessage(req.recording()));
            }
            if ((info == null || info.auxType() != PerfRecord.AuxtraceInfo.TYPE_INTEL_PT) && !traceless) {
                throw new BadInputException(req.recording() + ": no Intel PT data (no intel_pt AUXTRACE_INFO); record "
                        + "with 'ptrec' or 'perf record -e intel_pt//'");
            }
            if (buffers.isEmpty() && !traceless) {
                throw new BadInputException(req.recording() + ": no Intel PT data (no AUXTRACE records)");
            }
            if (damage != null) {
                err.println("ptdecode: " + damage.getMessage() + " (decoding the records before it)");
                damageReported++;
            }
            pt = traceless ? IntelPtInfo.NONE : IntelPtInfo.of(info);
            readEvents(f);
            long ptConfig = 0;
            for (AttrIds a : f.attrs()) {
                if (a.attr().type() == pt.pmuType()) {
                    ptConfig = a.attr().config();
                    ptAttr = a.attr();
                }
            }
            for (AttrIds a : f.attrs()) {
                if (a.attr().type() == 0 && hardwareSampleType < 0) {
                    hardwareSampleType = a.attr().sampleType(); // perf checks a type's fields on its first event
                }
            }
            // the decoder asks by time once the trace has told it the time (TSC packets), else by address only
            boolean timed = true;
            IntelPtInfo conv = pt;
            CodeMap.Clock clock = new CodeMap.Clock() {
                public long toDecoder(long perf) {
                    return conv.perfTimeToTsc(perf);
                }

                public long toPerf(long tsc) {
                    return tsc == Long.MIN_VALUE || tsc == Long.MAX_VALUE ? tsc : conv.tscToPerfTime(tsc);
                }
            };
            code = new CodeMap(sideband, clock, timed, req.sysroot());
            config = new FlowConfig();
            config.resyncAtIp = true; // as perf: lose only the trace up to the next full IP after an error
            config.perfClock = true; // a recording's times are perf's, to the nanosecond
            String cpuSpec = cpuSpec(f);
            if (cpuSpec != null) {
                config.setCpu(cpuSpec);
            }
            if (!traceless) {
                TimingConfig t = RecordingPackets.timingOf(f, info, config.errata);
                config.mtcFreq = t.mtcFreq();
                config.nomFreq = t.nomFreq();
                config.cpuid15Eax = t.cpuid15Eax();
                config.cpuid15Ebx = t.cpuid15Ebx();
            }
            config.noRetComp = pt.noretcompBit() != 0 && (ptConfig & pt.noretcompBit()) != 0;
            tscEnabled = pt.tscBit() != 0 && (ptConfig & pt.tscBit()) != 0;
            Optional<Feature.TextRegions> named = textRegions(f);
            namedRegions = named.orElse(null);
            ClientSettings settings = req.debuginfod() ? ClientSettings.fromEnvironment() : null;
            DebuginfodClient client = settings != null && settings.enabled() ? new DebuginfodClient(settings, err)
                    : null;
            try {
                RemoteImages.Outcome fetched = named.isPresent() ? completeArchive(named.get(), settings, client)
                        : RemoteImages.Outcome.NOTHING;
                addArchive(named.orElse(null), fetched, client != null);
                RemoteFiles remote = client == null ? null : new RemoteFiles(client);
                code.fetchFilesFrom(remote);
                addFileCode(f);
                code.fetchFilesFrom(null); // every mapped file is decided now: nothing is fetched while decoding
                if (remote != null) {
                    reportFiles(remote, settings);
                }
            } finally {
                if (client != null) {
                    client.close();
                }
            }
            symbols = new ptfence.symbol.RecordingSymbols(sideband, code, req.sysroot(), buildIds(f), req.vmlinux());
            boolean snapshot = pt.snapshotMode();
            Map<Integer, List<List<AuxBuffer>>> byCpu = new TreeMap<>();
            Map<Integer, Integer> tids = new TreeMap<>();
            for (List<AuxBuffer> run : AuxRuns.of(buffers, snapshot)) {
                AuxBuffer b = run.get(0);
                int key = b.cpu() >= 0 && b.cpu() != -1 ? b.cpu() : -2 - b.idx();
                byCpu.computeIfAbsent(key, k -> new ArrayList<>()).add(run);
                tids.put(key, b.cpu() == -1 ? b.tid() : -1);
            }
            if (req.cpus() != null) {
                Set<Integer> have = new java.util.TreeSet<>();
                byCpu.keySet().forEach(k -> have.add(k >= 0 ? k : -1));
                for (int c : req.cpus()) {
                    if (!have.contains(c)) {
                        String msg = "-C " + c + ": no Intel PT trace of CPU " + c + " in " + req.recording()
                                + " (it has CPUs " + have.toString().replaceAll("[\\[\\] ]", "") + ")";
                        if (!lenientCpus) {
                            throw new BadInputException(msg);
                        }
                        err.println("ptdecode: " + msg); // perf script prints nothing for it and goes on
                    }
                }
            }
            for (Map.Entry<Integer, List<List<AuxBuffer>>> e : byCpu.entrySet()) {
                int cpu = e.getKey() >= 0 ? e.getKey() : -1;
                if (req.cpus() != null && !req.cpus().contains(cpu)) {
                    continue;
                }
                traces.add(new CpuTrace(cpu, tids.get(e.getKey()), e.getValue()));
            }
        }
        if (bpfOutputType != null) {
            // a name no BTF here has is a wrong option, whether or not the recording has bpf-output samples: said
            // now, before anything is decoded (the programs' BTF is known from here on)
            bpfOutputFormat = RecordingOutputs.format(this, bpfOutputType);
        }
    }

    /** The perf events each archived BPF program ran on (by prog id), as ptrec found them; empty lists where none. */
    private final Map<Integer, List<ptfence.region.PerfAttachment>> perfAttachments = new java.util.HashMap<>();

    /** "runs on:" lines for --func's summary: the events the programs ran as overflow handlers of. */
    List<String> runsOn(java.util.Collection<CodeMap.Program> programs) {
        return runsOn(programs, (p, a) -> "runs on: " + a.describe()
                + (programs.size() > 1 ? " [prog " + p.progId() + "]" : ""));
    }

    /** Each program's attachments (a program named twice once), one line each as {@code line} makes it. */
    private List<String> runsOn(java.util.Collection<CodeMap.Program> programs,
            java.util.function.BiFunction<CodeMap.Program, ptfence.region.PerfAttachment, String> line) {
        List<String> out = new ArrayList<>();
        Set<Integer> seen = new HashSet<>();
        for (CodeMap.Program p : programs) {
            if (!seen.add(p.progId())) continue;
            for (ptfence.region.PerfAttachment a : perfAttachments.getOrDefault(p.progId(), List.of())) {
                out.add(line.apply(p, a));
            }
        }
        return out;
    }

    /** --bpf-output-type: the BTF struct bpf-output payloads are decoded with (null: picked by size). */
    String bpfOutputType;
    private ptfence.sideband.BpfOutputs bpfOutputs;
    private ptfence.sideband.BpfOutputFormat bpfOutputFormat;

    /** The recording's bpf-output samples within -C, --time and the thread filters ({@link RecordingOutputs}). */
    ptfence.sideband.BpfOutputs bpfOutputs() throws IOException {
        if (bpfOutputs == null) {
            bpfOutputs = RecordingOutputs.samples(this);
        }
        return bpfOutputs;
    }

    /** How the views show bpf-output payloads: hex, and fields where the programs' BTF describes them. */
    ptfence.sideband.BpfOutputFormat bpfOutputFormat() throws IOException {
        if (bpfOutputFormat == null) {
            bpfOutputFormat = bpfOutputs().isEmpty() ? ptfence.sideband.BpfOutputFormat.hexOnly()
                    : RecordingOutputs.format(this, bpfOutputType);
        }
        return bpfOutputFormat;
    }

    /**
     * The same as JSON objects for --func --summary --format jsonl: {"type":"runs-on","prog_id","event","type_id",
     * "config","period" or "freq","cpu","pid","via","link_id","text"}.
     */
    List<String> runsOnJson(java.util.Collection<CodeMap.Program> programs) {
        return runsOn(programs, (p, a) -> new ptfence.cli.Json().field("type", "runs-on").field("prog_id", p.progId())
                .field("event", a.eventName()).field("type_id", a.type())
                .field("config", Long.toUnsignedString(a.config()))
                .field(a.freq() ? "freq" : "period", a.period()).field("cpu", a.cpu()).field("pid", a.pid())
                .field("via", a.via()).field("link_id", a.linkId()).field("text", "runs on: " + a.describe())
                .toString());
    }

    /** -C naming a CPU without trace is a note, not an error (perf script's options: it prints nothing for it). */
    boolean lenientCpus;

    /**
     * perf script's options: a recording without trace whose events were sampled (bpf-output) loads with no trace
     * rather than failing, for the lines of its samples.
     */
    boolean recordsOnly;

    /** ptdecode's own whole-recording views: a recording without trace that has bpf-output samples loads too. */
    boolean outputsOnly;

    /** An event that is not a dummy, and so has samples of its own (a bpf-output event, a cycles event). */
    static boolean sampledEvents(PerfDataFile f) {
        return f.attrs().stream().anyMatch(a -> !(a.attr().type() == 1 && a.attr().config() == 9));
    }

    /** The recorded events (attrs in file order; names: EVENT_DESC's by id, else perf's from the attr). */
    List<ptfence.perfdata.EventAttr> eventAttrs = new ArrayList<>();
    List<List<Long>> eventIds = new ArrayList<>();
    /** HEADER_SAMPLE_TIME's first and last sample time (0, 0 when absent). */
    long firstSampleTime;
    long lastSampleTime;
    /** HEADER_NRCPUS's available CPUs (0 when absent): perf's bound for -C. */
    int nrCpusAvail;

    private void readEvents(PerfDataFile f) {
        Map<Long, String> names = new java.util.HashMap<>();
        try {
            for (ptfence.perfdata.Feature.EventDescEntry e : f.features().eventDesc()) {
                for (long id : e.ids()) {
                    names.put(id, e.name());
                }
            }
            f.features().get(ptfence.perfdata.Feature.SAMPLE_TIME, ptfence.perfdata.Feature.SampleTime.class)
                    .ifPresent(t -> {
                        firstSampleTime = t.start();
                        lastSampleTime = t.end();
                    });
            f.features().nrCpus().ifPresent(n -> nrCpusAvail = n.available());
        } catch (BadInputException e) {
            err.println("ptdecode: " + e.getMessage() + " (event names not used)");
        }
        for (AttrIds a : f.attrs()) {
            eventAttrs.add(a.attr());
            eventIds.add(a.ids());
            String n = null;
            for (long id : a.ids()) {
                n = names.get(id);
                if (n != null) {
                    break;
                }
            }
            storedEventNames.add(n != null && !n.isEmpty() ? n : null);
        }
    }

    /** perf's BPF_PROG_INFO, the kernel files, the mapped files (checked against their build ids), pokes, symbols. */
    private void addFileCode(PerfDataFile f) {
        try {
            code.addBpfProgInfo(f.features().bpfProgInfo());
        } catch (BadInputException e) {
            err.println("ptdecode: " + e.getMessage() + " (BPF_PROG_INFO not used)");
            damageReported++;
        }
        addKernelFiles();
        Path dir = req.recording().toAbsolutePath().getParent();
        if (dir != null) {
            code.searchIn(dir);
        }
        code.useBuildIds(buildIds(f));
        code.addMappedFiles();
        addJitCode(dir);
        code.addSidebandSymbols();
        code.applyPokes();
        code.symbols().describe(0); // sort once, before decoder threads share it
    }

    /** --jit-dir: where the recorded processes' jitdumps and perf-PID.map files are (a recording made elsewhere). */
    List<Path> jitDirs = List.of();

    /**
     * JIT code of the recorded processes: jitdumps in --jit-dir, beside the recording (ptrec copies them there),
     * else where the process wrote them; perf maps in --jit-dir, beside the recording, else in /tmp (under
     * --sysroot), where perf reads them.
     */
    private void addJitCode(Path recordingDir) {
        List<Path> dirs = new ArrayList<>(jitDirs);
        if (recordingDir != null) {
            dirs.add(recordingDir);
        }
        List<Path> mapDirs = new ArrayList<>(dirs);
        mapDirs.add(req.sysroot() == null ? Path.of("/tmp") : req.sysroot().resolve("tmp"));
        for (String note : code.addJitCode(dirs, mapDirs)) {
            err.println("ptdecode: " + note);
        }
    }

    /** The BUILD_ID header's ids by file name (none if the header is absent or damaged). */
    private Map<String, byte[]> buildIds(PerfDataFile f) {
        Map<String, byte[]> out = new java.util.HashMap<>();
        try {
            for (ptfence.perfdata.Feature.BuildIdEntry e : f.features().buildIds()) {
                out.putIfAbsent(e.filename(), e.id());
            }
        } catch (BadInputException e) {
            err.println("ptdecode: " + e.getMessage() + " (build ids not used)");
            damageReported++;
        }
        return out;
    }

    private static ByteBuffer copy(ByteBuffer b) {
        return b; // the file stays mapped by the reader's buffers; slices are independent
    }

    private static String cpuSpec(PerfDataFile f) {
        try {
            Optional<String> id = f.features().cpuId();
            if (id.isEmpty()) {
                return null;
            }
            String[] p = id.get().split(",");
            return p.length >= 4 && p[0].equals("GenuineIntel") ? p[1] + "/" + p[2] + "/" + p[3] : null;
        } catch (BadInputException e) {
            return null;
        }
    }

    /** The archive held the recording boot's kallsyms (with its core kernel text): /proc/kallsyms is not needed. */
    private boolean archivedKallsyms;

    /** The recording's own list of the text regions it used (ptrec writes one), if any and readable. */
    private Optional<Feature.TextRegions> textRegions(PerfDataFile f) {
        try {
            return f.features().textRegions();
        } catch (BadInputException e) {
            err.println("ptdecode: " + e.getMessage() + " (the recording's list of text regions not used)");
            return Optional.empty();
        }
    }

    /**
     * Adds to the local archive what the recording names and the archive lacks: images fetched from debuginfod
     * (client null: none), regions of images it holds (docs/fleet.md). Says on stderr what was fetched and, once
     * per image, what no server had.
     */
    private RemoteImages.Outcome completeArchive(Feature.TextRegions named, ClientSettings settings,
            DebuginfodClient client) {
        Path dir = ArchiveLocation.resolve(req.archive());
        Path perfData = stdinBytes != null ? null : req.recording();
        RemoteImages.Outcome o = RemoteImages.complete(named, dir, perfData, client);
        if (o.fetched() > 0) {
            err.println("ptdecode: debuginfod: fetched " + o.fetched() + " image(s), " + o.bytes() + " bytes, from "
                    + String.join(" ", o.servers()) + (o.kept() ? "; kept in the archive " + dir : ""));
        }
        if (!o.kept()) {
            err.println("ptdecode: " + o.note() + "; used for this decode only");
        }
        if (client == null) {
            // an --archive (or --recording) that is not there is the one error addArchive reports next: a note
            // about images "not in the archive" before it would be a second line about the same mistake
            boolean noSuchArchive = !ptfence.store.Archive.exists(dir) && (req.archiveGiven()
                    || req.recordingId() != null);
            if (!o.missing().isEmpty() && req.debuginfod() && !noSuchArchive) {
                err.println("ptdecode: " + o.missing().get(0) + " (set DEBUGINFOD_URLS to a debuginfod serving a "
                        + "'ptarchive publish' tree: docs/fleet.md)");
            }
            return o;
        }
        int shown = 0;
        for (String m : o.missing()) {
            if (shown++ == MISSING_SHOWN) {
                err.println("ptdecode: debuginfod: ... and " + (o.missing().size() - MISSING_SHOWN) + " more image(s) "
                        + "not found");
                break;
            }
            err.println("ptdecode: debuginfod: " + m);
        }
        return o;
    }

    /** At most this many lines about images not found; then a count. */
    private static final int MISSING_SHOWN = 100;

    private void reportFiles(RemoteFiles remote, ClientSettings settings) {
        if (remote.fetched() > 0) {
            err.println("ptdecode: debuginfod: fetched " + remote.fetched() + " file(s), " + remote.bytes()
                    + " bytes, from " + String.join(" ", remote.servers()) + " into " + settings.cache());
        }
        for (String m : remote.missing()) {
            err.println("ptdecode: debuginfod: " + m);
        }
    }

    /** @param fetching whether debuginfod was asked (then an --archive that does not exist is where it would keep) */
    private void addArchive(Feature.TextRegions named, RemoteImages.Outcome fetched, boolean fetching) {
        Path dir = ArchiveLocation.resolve(req.archive());
        if (!ptfence.store.Archive.exists(dir)) {
            if (!fetched.regions().isEmpty()) {
                addUnkept(named, fetched, null); // fetched, but no archive could be made to keep them
                return;
            }
            if ((req.archiveGiven() || req.recordingId() != null) && !(fetching && named != null)) {
                throw new BadInputException(dir + ": no ptfence archive there (--archive)");
            }
            return; // no archive: perf's own data only
        }
        try (Archive archive = Archive.openReadOnly(dir)) {
            archive.read(s -> {
                List<Recording> all = Recordings.all(s);
                Recording chosen = chooseRecording(all, s, named);
                String boot;
                if (chosen != null) {
                    boot = chosen.bootId();
                    recordingBoot = boot;
                    recordingUsed = chosen.id();
                } else if (req.archiveGiven() || System.getenv(ArchiveLocation.ENV) != null) {
                    // no capture of ours registered this perf.data: code this boot archived may still be what ran
                    // (perf record next to a ptrec --sideband-only fence); only when the user points at the archive
                    boot = currentBoot();
                } else {
                    boot = null;
                }
                if (boot != null) {
                    long from = sideband.firstTime() == Long.MAX_VALUE ? Long.MIN_VALUE : sideband.firstTime();
                    List<Region> regions = RegionIndex.all(s, r -> r.bootId().equals(boot)
                            && (r.validTo() == Region.OPEN || r.validTo() >= from));
                    List<Region> full = withContent(s, regions);
                    code.addArchiveRegions(full, r -> s.image(r.key()).orElse(null));
                    for (Region r : full) {
                        if (r.metadata() instanceof ptfence.region.BpfMetadata m && !perfAttachments.containsKey(m.progId())) {
                            perfAttachments.put(m.progId(), ptfence.region.PerfAttachment.load(s, boot, m.progId()));
                        }
                    }
                    for (Region r : full) {
                        if (r.metadata() instanceof ptfence.region.KernelMetadata k && k.kallsyms().length > 0) {
                            code.addKallsyms(r.name() + " kallsyms (archive)", k.kallsyms());
                            archivedKallsyms = true;
                        }
                    }
                }
                addUnkept(named, fetched, s);
                return null;
            });
        }
    }

    /** Regions completed from debuginfod that the archive could not keep: used for this decode only. */
    private void addUnkept(Feature.TextRegions named, RemoteImages.Outcome fetched, ptfence.store.Snapshot s) {
        if (fetched.kept() || fetched.regions().isEmpty()) {
            return;
        }
        if (recordingBoot == null) {
            recordingBoot = named.bootId();
        }
        code.addArchiveRegions(fetched.regions(), r -> {
            byte[] b = fetched.images().get(r.key());
            return b != null || s == null ? b : s.image(r.key()).orElse(null);
        });
    }

    /**
     * The regions with the content their metadata refers to put back: programs' BTF, the kernel's kallsyms (each
     * object read once, however many regions share it).
     */
    private static List<Region> withContent(ptfence.store.Snapshot s, List<Region> regions) {
        Map<ptfence.store.ContentKey, ptfence.region.RegionMetadata> resolved = new java.util.HashMap<>();
        List<Region> out = new ArrayList<>(regions.size());
        for (Region region : regions) {
            Region r = region;
            List<ptfence.store.ContentKey> keys = r.contentKeys();
            if (keys.size() > 1) {
                ptfence.region.RegionMetadata full = resolved.computeIfAbsent(keys.get(1),
                        k -> RegionIndex.withContent(s, region).metadata());
                if (full instanceof ptfence.region.BpfMetadata withBtf && r.metadata() instanceof ptfence.region.BpfMetadata m) {
                    full = m.withBtf(withBtf.btf()); // same BTF, this program's other fields
                }
                r = new Region(r.bootId(), r.address(), r.length(), r.validFrom(), r.validTo(), r.kind(), r.name(),
                        r.key(), full);
            }
            out.add(r);
        }
        return out;
    }

    /**
     * The archive's recording for this perf.data: the one named by --recording, the one the perf.data names (ptrec
     * writes its id), the one written to this path, or the one whose BPF regions the sideband's KSYMBOLs match best.
     */
    private Recording chooseRecording(List<Recording> all, ptfence.store.Snapshot s, Feature.TextRegions named) {
        if (req.recordingId() != null) {
            return all.stream().filter(r -> r.id().equals(req.recordingId()) || r.id().startsWith(req.recordingId()))
                    .findFirst().orElseThrow(() -> new BadInputException("--recording " + req.recordingId()
                            + ": no such recording in the archive (ptarchive ls --recordings lists them)"));
        }
        if (named != null) {
            for (Recording r : all) {
                if (r.id().equals(named.recordingId())) {
                    return r; // the recording names itself
                }
            }
        }
        String path = req.recording().toAbsolutePath().normalize().toString();
        for (Recording r : all) {
            if (r.perfDataPath().equals(path)) {
                return r;
            }
        }
        Recording best = null;
        int bestScore = 0;
        for (Recording r : all) {
            int score = 0;
            for (Region g : Recordings.regions(s, r.id())) {
                for (Sideband.KernelSymbol k : sideband.kernelSymbols()) {
                    if (k.address() == g.address() && k.name().equals(g.name())) {
                        score++;
                    }
                }
            }
            if (score > bestScore) {
                best = r;
                bestScore = score;
            }
        }
        return best;
    }

    private static String currentBoot() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (IOException e) {
            return null;
        }
    }

    private void addKernelFiles() {
        if (req.kcore() != null) {
            Path k = Files.isDirectory(req.kcore()) ? req.kcore().resolve("kcore") : req.kcore();
            if (!Files.isRegularFile(k)) {
                throw new BadInputException(req.kcore() + ": no kcore file there (--kcore takes perf record --kcore's "
                        + "directory)");
            }
            code.addKernelElf(k);
            Path ks = k.resolveSibling("kallsyms");
            if (Files.isRegularFile(ks)) {
                code.addKallsyms(ks);
            }
        }
        if (req.vmlinux() != null) {
            if (!Files.isRegularFile(req.vmlinux())) {
                throw new BadInputException(req.vmlinux() + ": no such file (--vmlinux)");
            }
            code.addKernelElf(req.vmlinux());
        }
        if (req.kallsyms() != null) {
            code.addKallsyms(req.kallsyms());
        } else if (!archivedKallsyms && recordingBoot != null && recordingBoot.equals(currentBoot())
                && Files.isReadable(Path.of("/proc/kallsyms"))) {
            // recorded on this boot: the running kernel's symbols are the recording's (helpers, kfuncs by name)
            code.addKallsyms(Path.of("/proc/kallsyms"));
        }
    }

    /**
     * Decodes each CPU with a sink from {@code sinks} (one per CPU), each on its own thread, at most --threads at
     * once ({@link #turns}: a CPU waiting for a {@link TimeMerge} gives its turn back). {@code ended} runs for every
     * CPU however its decode ends.
     */
    void decodeCpus(java.util.function.Function<CpuTrace, FlowSink> sinks,
            java.util.function.BiConsumer<CpuTrace, FlowDecoder> started,
            java.util.function.Consumer<CpuTrace> ended) throws Exception {
        List<java.util.concurrent.FutureTask<Void>> tasks = new ArrayList<>();
        for (CpuTrace t : traces) {
            java.util.concurrent.FutureTask<Void> task = new java.util.concurrent.FutureTask<>(() -> {
                turns.acquireUninterruptibly();
                try {
                    try {
                        decodeCpu(t, sinks, started);
                    } finally {
                        ended.accept(t); // holding the turn: it may wait on a merge, which gives the turn back
                    }
                } finally {
                    turns.release();
                }
                return null;
            });
            tasks.add(task);
            Thread th = new Thread(task, "ptdecode-cpu" + t.cpu());
            th.setDaemon(true);
            th.start();
        }
        if (req.progress()) {
            startProgress();
        }
        try {
            for (java.util.concurrent.FutureTask<Void> f : tasks) {
                try {
                    f.get();
                } catch (java.util.concurrent.ExecutionException e) {
                    if (e.getCause() instanceof RuntimeException re) {
                        throw re;
                    }
                    if (e.getCause() instanceof Error er) {
                        throw er;
                    }
                    throw e;
                }
            }
        } finally {
            tasks.forEach(f -> f.cancel(true));
            stopProgress();
        }
    }

    private void decodeCpu(CpuTrace t, java.util.function.Function<CpuTrace, FlowSink> sinks,
            java.util.function.BiConsumer<CpuTrace, FlowDecoder> started) throws Exception {
        FlowSink sink = missingReporter(t, sinks.apply(t));
        CodeSpace space = code.forCpu(t.cpu(), t.tid() >= 0 ? pidOf(t.tid()) : -1);
        RunDecode own = runDecodes.get(t);
        if (own != null) {
            ByteBuffer bytes = AuxRuns.bytes(t.runs().get(0));
            long errors = own.decode(bytes, space, this::reportMissing);
            if (errors >= 0) {
                errorsByCpu.merge(t.cpu(), errors, Long::sum);
                decodedBytes.addAndGet(bytes.remaining());
                return;
            }
        }
        for (List<AuxBuffer> run : t.runs()) {
            CursorInput in = CursorInput.of(AuxRuns.bytes(run), config.errata);
            FlowDecoder d = new FlowDecoder(space, config, in, sink, false);
            started.accept(t, d);
            active.add(in);
            d.run();
            active.remove(in);
            errorsByCpu.merge(t.cpu(), d.errors, Long::sum);
            decodedBytes.addAndGet(in.size());
        }
    }

    /** Decode errors per CPU (each a stretch of trace lost up to the next full IP). */
    private final Map<Integer, Long> errorsByCpu = new java.util.concurrent.ConcurrentSkipListMap<>();

    /** Software events only, no AUX: what 'ptrec --sideband-only' writes where there is no Intel PT. */
    static boolean sidebandOnly(PerfDataFile f) {
        return !f.attrs().isEmpty() && f.attrs().stream().allMatch(a -> a.attr().type() == 1);
    }

    /** What a sideband-only recording holds and how to see it (there is nothing for ptdecode to decode). */
    static String sidebandOnlyMessage(Object recording) {
        return recording + ": a sideband-only recording (no intel_pt event, as 'ptrec --sideband-only' writes): no "
                + "trace to decode, so no control flow and no --packets; its tasks, mappings and BPF events show with "
                + "'perf script --show-task-events --show-mmap-events --show-bpf-events -i " + recording + "', the BPF "
                + "code the fence archived with 'ptarchive ls --recordings'";
    }

    /** Warnings printed about damage in the recording itself (records or header sections cut short or malformed). */
    private int damageReported;

    /** Whether the recording itself was damaged (a warning said so): with --strict that is an error. */
    boolean damaged() {
        return damageReported > 0;
    }

    /**
     * Prints the code found nowhere (a line per kind, with -v a line per place), then how many decode errors there
     * were, per CPU, on one stderr line (nothing if none); returns the count.
     */
    long reportErrors() {
        for (String l : missing.lines(verbose)) {
            err.println("ptdecode: " + l);
        }
        long all = errorsByCpu.values().stream().mapToLong(Long::longValue).sum();
        if (all > 0) {
            StringBuilder sb = new StringBuilder("ptdecode: ").append(all).append(all == 1 ? " decode error" :
                    " decode errors");
            String sep = " (";
            for (Map.Entry<Integer, Long> e : errorsByCpu.entrySet()) {
                if (e.getValue() > 0) {
                    sb.append(sep).append("cpu ").append(e.getKey()).append(": ").append(e.getValue());
                    sep = ", ";
                }
            }
            err.println(sb.append("); each lost the trace up to the next full IP or PSB"));
        }
        return all;
    }

    /** How many CPUs decode at once. */
    final java.util.concurrent.Semaphore turns;

    private final Set<CursorInput> active = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final java.util.concurrent.atomic.AtomicLong decodedBytes = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean progressDone;
    private volatile boolean progressShown;
    private Thread progressThread;

    /** Prints how much of the trace is decoded, once a second, on one stderr line. */
    private void startProgress() {
        long total = 0;
        for (CpuTrace t : traces) {
            for (List<AuxBuffer> run : t.runs()) {
                for (AuxBuffer b : run) {
                    total += b.size();
                }
            }
        }
        long all = Math.max(1, total);
        progressThread = new Thread(() -> {
            while (!progressDone) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                long done = decodedBytes.get();
                for (CursorInput in : active) {
                    done += in.position();
                }
                err.printf("\rptdecode: %3d%% of %.1f MB of trace", Math.min(100, done * 100 / all), all / 1e6);
                progressShown = true;
                err.flush();
            }
        }, "ptdecode-progress");
        progressThread.setDaemon(true);
        progressThread.start();
    }

    private void stopProgress() {
        if (progressThread != null) {
            progressDone = true;
            progressThread.interrupt();
            if (progressShown) {
                err.print("\r\033[K");
                err.flush();
            }
        }
    }

    private int pidOf(int tid) {
        return tid; // per-thread recordings: the traced thread's own mappings (perf keys them by pid = tgid)
    }

    /** Reports each region whose code is nowhere once, with what would fix it; then passes the error on. */
    private FlowSink missingReporter(CpuTrace t, FlowSink inner) {
        return new FlowSink() {
            public void insn(long ip, int size, int cls, int mode, boolean speculative) {
                inner.insn(ip, size, cls, mode, speculative);
            }

            public void block(long ip, int count, ptfence.insn.CodeCache c, int off, int mode, boolean spec) {
                inner.block(ip, count, c, off, mode, spec);
            }

            public boolean branchesOnly() {
                return inner.branchesOnly();
            }

            public void straight(long ip, int count, ptfence.insn.CodeCache c, int off, int mode, boolean spec) {
                inner.straight(ip, count, c, off, mode, spec);
            }

            public boolean plainPaths() {
                return inner.plainPaths();
            }

            public boolean plainPath(long base, ptfence.insn.CodeCache c, ptfence.insn.TntPaths t, long first) {
                return inner.plainPath(base, c, t, first);
            }

            public boolean movingPaths() {
                return inner.movingPaths();
            }

            public void event(ptfence.flow.Event ev) {
                inner.event(ev);
            }

            public void error(String kind, int codeNo, long offset, long ip) {
                if (codeNo == PtError.NOMAP) {
                    reportMissing(ip);
                }
                inner.error(kind, codeNo, offset, ip);
            }

            public void endOfTrace() {
                inner.endOfTrace();
            }

            public void disabledAfterResync() {
                inner.disabledAfterResync();
            }

            public void resumedAtPsb() {
                inner.resumedAtPsb();
            }

            public void noCode(long ip, long tsc) {
                inner.noCode(ip, tsc);
            }

            public void hop(int kind, long from, long to) {
                inner.hop(kind, from, to);
            }
        };
    }

    /** The region the recording names at this address (the latest one), or null. */
    private Feature.TextRegion namedAt(long ip) {
        Feature.TextRegion found = null;
        if (namedRegions != null) {
            for (Feature.TextRegion r : namedRegions.regions()) {
                if (Long.compareUnsigned(ip - r.address(), r.length()) < 0
                        && (found == null || r.validFrom() > found.validFrom())) {
                    found = r;
                }
            }
        }
        return found;
    }

    /** Counts an error at {@code ip} against the code that is nowhere there (told at the end: {@link #reportErrors}). */
    private void reportMissing(long ip) {
        Sideband.KernelSymbol k = code.symbolAt(ip, Long.MAX_VALUE - 1);
        Feature.TextRegion named = namedAt(ip);
        if (named != null) {
            missing.add(MissingCode.Kind.NAMED, named.name() + " (image " + named.key() + ")", ip);
        } else if (k != null) {
            missing.add(k.bpf() ? MissingCode.Kind.BPF : MissingCode.Kind.KSYM, k.name(), ip);
        } else if (ip < 0) {
            missing.add(MissingCode.Kind.KERNEL, "0x" + Long.toHexString(ip & -4096), ip);
        } else {
            String file = symbols.dso(ip, -1, -1);
            if (file != null) {
                missing.add(MissingCode.Kind.FILE, file, ip);
            } else {
                missing.add(MissingCode.Kind.UNMAPPED, "0x" + Long.toHexString(ip & -4096), ip);
            }
        }
    }

    /**
     * Hands the requested function's invocations on every CPU to {@code each} as they are decoded, earliest entry
     * first (without timing, a CPU's in trace order), on the calling thread; memory stays bounded however many.
     */
    void invocations(FunctionNames.Target target, java.util.function.Consumer<Invocation> each) throws Exception {
        CodeMap.Clock c = code.clock();
        boolean timed = code.timed();
        ptfence.sideband.BpfOutputs outputs = bpfOutputs();
        this.<Invocation>decodeMerged((t, out) -> {
            InvocationTracker tr = new InvocationTracker(t.cpu(), target.functions(), code, sideband, inv -> {
                long entry = inv.entryTime();
                if ((entry < 0 || entry >= req.timeFrom() && entry <= req.timeTo()) && (!threads.filters()
                        || threads.accepts(inv.pid(), inv.tid(), sideband.commAt(inv.tid(), entry)))) {
                    out.add(entry, inv);
                }
            });
            ptfence.flow.SampleClock place = new ptfence.flow.SampleClock();
            if (!outputs.isEmpty() && timed) {
                tr.samples(outputs.ofCpu(t.cpu()), place, c::toPerf);
            }
            return new CpuPart(tr, d -> {
                place.decoder(d);
                tr.clock(() -> {
                    long tsc = d.time();
                    return timed && tsc >= 0 ? c.toPerf(tsc) : -1;
                });
            }, tr::close);
        }, each);
    }

    /**
     * One CPU's part in a merged decode: the sink its decoders report to (adding items to the CPU's stream), what to
     * do when a decoder starts on one of its runs, and what to do once the CPU is done (before its stream ends).
     */
    record CpuPart(FlowSink sink, java.util.function.Consumer<FlowDecoder> started, Runnable finished,
            RunDecode segmented) {
        CpuPart(FlowSink sink, java.util.function.Consumer<FlowDecoder> started, Runnable finished) {
            this(sink, started, finished, null);
        }
    }

    /**
     * A CPU part's own decode of a run (the call views' PSB segments, {@link ptfence.calls.CallSegments}): its items
     * go where the part's sink's would, in the same order.
     */
    interface RunDecode {
        /**
         * Decodes {@code run} with code {@code space}, telling {@code missing} the IP of each error where code is
         * missing; returns the decode errors, or -1 if it leaves the run to the part's sink (nothing decoded).
         */
        long decode(ByteBuffer run, CodeSpace space, java.util.function.LongConsumer missing) throws Exception;
    }

    /** The CPUs whose part decodes its runs itself (a CPU of one run: the part's sink would carry state between). */
    private final Map<CpuTrace, RunDecode> runDecodes = java.util.Collections.synchronizedMap(
            new java.util.IdentityHashMap<>());

    /**
     * Decodes every CPU into the part {@code partFor} makes for it, given the CPU and its stream, and hands every
     * item of every stream to {@code each} on the calling thread, earliest first ({@link TimeMerge}).
     */
    <T> void decodeMerged(java.util.function.BiFunction<CpuTrace, TimeMerge<T>.Producer, CpuPart> partFor,
            java.util.function.Consumer<T> each) throws Exception {
        TimeMerge<T> merge = new TimeMerge<>(traces.size(), turns, queueLimits);
        Map<CpuTrace, TimeMerge<T>.Producer> producers = new java.util.IdentityHashMap<>();
        for (int i = 0; i < traces.size(); i++) {
            producers.put(traces.get(i), merge.producer(i));
        }
        Map<CpuTrace, CpuPart> parts = java.util.Collections.synchronizedMap(new java.util.IdentityHashMap<>());
        Throwable[] failure = new Throwable[1];
        Thread decode = new Thread(() -> {
            try {
                decodeCpus(t -> {
                    CpuPart part = partFor.apply(t, producers.get(t));
                    parts.put(t, part);
                    if (part.segmented() != null && t.runs().size() == 1) {
                        runDecodes.put(t, part.segmented());
                    }
                    return part.sink();
                }, (t, d) -> parts.get(t).started().accept(d), t -> {
                    CpuPart part = parts.get(t);
                    try {
                        if (part != null) {
                            part.finished().run();
                        }
                    } finally {
                        producers.get(t).end();
                    }
                });
            } catch (Throwable e) { // an Error too (a mapped file cut short under us): the command reports it
                failure[0] = e;
                merge.abandon();
            }
        }, "ptdecode-decode");
        decode.setDaemon(true);
        decode.start();
        merge.drain(each);
        decode.join();
        if (failure[0] instanceof Exception e) {
            throw e;
        }
        if (failure[0] instanceof Error e) {
            throw e;
        }
    }

    /**
     * Line info for the target's BPF programs and for {@code others} (programs the invocations go on in by tail
     * calls): from the archive's metadata, else perf's BPF_PROG_INFO and BTF.
     */
    ptfence.func.SourceLines sourceLines(FunctionNames.Target target, java.util.Collection<CodeMap.Program> others)
            throws IOException {
        List<CodeMap.Program> programs = new ArrayList<>(target.programs());
        for (CodeMap.Program p : others) {
            if (!programs.contains(p)) {
                programs.add(p);
            }
        }
        List<ptfence.region.BpfMetadata> meta = new ArrayList<>();
        for (CodeMap.Program p : programs) {
            if (p.metadata() != null) {
                meta.add(p.metadata());
            }
        }
        if (!meta.isEmpty()) {
            ptfence.func.SourceLines s = ptfence.func.SourceLines.of(meta);
            if (!s.isEmpty()) {
                return s;
            }
        }
        try (PerfDataFile f = openRecording()) {
            Set<Integer> ids = new HashSet<>();
            programs.forEach(p -> ids.add(p.progId()));
            List<ptfence.perfdata.Feature.BpfProgInfo> infos = new ArrayList<>();
            for (var i : f.features().bpfProgInfo()) {
                if (ids.contains(i.progId())) {
                    infos.add(i);
                }
            }
            return ptfence.func.SourceLines.ofPerf(infos, f.features().bpfBtf());
        }
    }

    /** The recording's programs with these full names (the programs invocations ran through). */
    List<CodeMap.Program> programsNamed(java.util.Collection<String> fullNames) {
        return code.programs().stream().filter(p -> p.bpf() && fullNames.contains(p.fullName())).toList();
    }

    /**
     * Every BPF program but the target's whose code overlaps no other program's: what an invocation may go on in by
     * a tail call, known before the invocations are (the source view counts as they stream). A program whose
     * address another held at another time is left out, as an address alone would not say whose line it is.
     */
    List<CodeMap.Program> tailCallCandidates(FunctionNames.Target target) {
        Map<Integer, CodeMap.Program> byId = new java.util.LinkedHashMap<>();
        for (CodeMap.Program p : code.programs()) {
            if (p.bpf() && !target.programs().contains(p)) {
                byId.putIfAbsent(p.progId(), p);
            }
        }
        List<CodeMap.Program> all = new ArrayList<>(target.programs());
        all.addAll(byId.values());
        List<CodeMap.Program> out = new ArrayList<>();
        for (CodeMap.Program p : byId.values()) {
            boolean alone = all.stream().noneMatch(q -> q != p && overlap(p, q));
            if (alone) {
                out.add(p);
            }
        }
        return out;
    }

    private static boolean overlap(CodeMap.Program a, CodeMap.Program b) {
        for (CodeMap.Function f : a.functions()) {
            for (CodeMap.Function g : b.functions()) {
                if (Long.compareUnsigned(f.address() - g.address(), g.length()) < 0
                        || Long.compareUnsigned(g.address() - f.address(), f.length()) < 0) {
                    return true;
                }
            }
        }
        return false;
    }

    Request request() {
        return req;
    }

    /** Narrows the request to perf time [from, to] (a --time range known only once the recording is read). */
    void timeRange(long from, long to) {
        req = new Request(req.recording(), req.archive(), req.archiveGiven(), req.recordingId(), req.kcore(),
                req.vmlinux(), req.kallsyms(), req.sysroot(), req.func(), req.format(), req.summary(), req.source(),
                from, to, req.cpus(), req.threads(), req.progress(), req.debuginfod());
    }

    void merged(PrintWriter out) throws Exception {
        MergedFlow.print(this, out, req, threads);
    }

    /** Every event's name: EVENT_DESC's, else made from the attr ({@link ptfence.perfdata.EventNames#name}). */
    List<String> eventNames() {
        return namesOr(ptfence.perfdata.EventNames::name);
    }

    /** Every event's name as perf 6.1's script lines give it: EVENT_DESC's, else perf's for the attr. */
    List<String> perfEventNames() {
        return namesOr(ptfence.perfdata.EventNames::perfName);
    }

    private List<String> namesOr(java.util.function.Function<ptfence.perfdata.EventAttr, String> made) {
        List<String> names = new ArrayList<>(storedEventNames.size());
        for (int i = 0; i < storedEventNames.size(); i++) {
            String n = storedEventNames.get(i);
            names.add(n != null ? n : made.apply(eventAttrs.get(i)));
        }
        return names;
    }
}

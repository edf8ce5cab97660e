package ptfence.record;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongUnaryOperator;
import ptfence.bpf.ProgInfo;
import ptfence.bpf.ProgramMetadata;
import ptfence.perfdata.SampleId;
import ptfence.sys.Bpf;
import ptfence.sys.BpfException;
import ptfence.sys.BpfFd;
import ptfence.fence.ArchiveSink;
import ptfence.fence.CapturedText;
import ptfence.fence.TextSink;
import ptfence.fence.FenceCounters;
import ptfence.fence.Hook;
import ptfence.fence.RegionTracker;
import ptfence.fence.TextFence;
import ptfence.perfdata.AttrIds;
import ptfence.perfdata.EventAttr;
import ptfence.perfdata.Feature;
import ptfence.perfdata.PerfDataWriter;
import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.RecordTypes;
import ptfence.recording.Lease;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.ring.PerfRing;
import ptfence.store.Archive;
import ptfence.sys.Epoll;
import ptfence.sys.EventFd;
import ptfence.sys.Mmap;
import ptfence.sys.PerfEvent;

/**
 * One recording: opens the events of a {@link RecordingPlan}, drains their rings into a perf.data, runs the text
 * fence into the archive, and stops cleanly on {@link #requestStop()} (Ctrl-C, the command's exit).
 * <p>
 * Events per CPU: a "kernel text" dummy (ksymbol, bpf_event, text_poke) on its own small ring woken at every record
 * (watermark=1, wakeup_watermark=1) so fence triggers never wait behind context switches; a "sideband" dummy (mmap,
 * mmap2, comm, comm_exec, task) on a larger ring; a "switch" dummy (context_switch) on one of its own, so that a flood
 * of context switches on a loaded machine can only cost switch records, never the mappings and task records a decode
 * needs; and, unless sideband-only, intel_pt with its AUX area. All carry sample_id_all with TID|TIME|CPU|IDENTIFIER.
 * <p>
 * Clocks: every time ptrec writes into the archive (regions, the recording's start and end) is in the clock of the
 * perf.data's records, so a decoder picks code by (address, time of the trace). Sideband alone records in
 * CLOCK_MONOTONIC, the fence's own clock. With PT (or {@code --clock perf}) the records carry perf's clock, which
 * the TSC converts to; a {@link PerfClockProbe} then pairs the two clocks at the start and every
 * {@value #CLOCK_SAMPLE_MS} ms, and a {@link ClockMap} converts the fence's CLOCK_MONOTONIC stamps.
 * <p>
 * One file past 1k lines: it holds one ordering rule over one set of open events and rings (events open before the
 * child runs; records handled in ring order, the fence's triggers first; at the stop the rings drained, then the fence
 * closed, then the perf.data finished), and every step reads that same state. The fence, the clocks, the perf.data
 * writer and the perf attachments are classes of their own.
 */
public final class Recorder implements AutoCloseable {
    private static final long SAMPLE_TYPE = 0x2 | 0x4 | 0x80 | 0x10000; // TID|TIME|CPU|IDENTIFIER
    private static final int TRAILER = 32;
    private static final int CLOCK_MONOTONIC = 1;
    private static final int TEXT_PAGES = 512, SIDEBAND_PAGES = 128, SWITCH_PAGES = 256, PT_DATA_PAGES = 64;
    private static final Duration LEASE_TTL = Duration.ofMinutes(10);
    private static final long CHILD_GRACE_S = 5;

    /** One mapped ring and what it carries. */
    private record Ring(String kind, int cpu, PerfRing ring) {}

    private final RecordingPlan plan;
    private final PrintStream log;
    private final boolean verbose;
    private final List<PerfEvent> events = new ArrayList<>();
    private final List<Ring> rings = new ArrayList<>();
    private final EventFd wakeup = EventFd.create();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicBoolean snapshotWanted = new AtomicBoolean();
    private final RecordStats stats = new RecordStats();
    private final Map<Integer, Feature.BpfProgInfo> progInfos = new LinkedHashMap<>();
    private final Map<Integer, Feature.BpfBtf> btfs = new LinkedHashMap<>();
    private final List<Feature> hostFeatures;
    private final List<Feature.EventDescEntry> eventDesc = new ArrayList<>();
    private PerfDataWriter writer;
    private Archive archive;
    private Lease lease;
    private Recording recording;
    private int leaseLapses;
    private static final String LEASE_HOLDER = "ptrec pid " + ProcessHandle.current().pid();
    private String recordingId;
    private ArchiveSink regions;
    /** Where and when each region was, for the perf.data's list of the text it used. */
    private RegionLog regionLog;
    private String recordingBoot;
    private long recordingStart;
    private RegionTracker tracker;
    private TextFence fence;
    /** kallsyms and the vmlinux BTF, read once for the whole recording (fence, modules, attachments, core text). */
    private final ptfence.fence.RunningKernel kernel = ptfence.fence.RunningKernel.current();
    private String fenceNote = "";
    /** The module fence's summary line, or why it did not run. */
    private String moduleNote = "";
    private Process child;
    /** ptrec ended its command (stopped by a signal while the command ran): the command's status is not its own. */
    private boolean commandStopped;
    private Path fifo;
    /** The loop ran: a failure from here on cuts a real recording short rather than failing its start. */
    private boolean loopStarted;
    /** An existing output moved to .old at the start, put back if the start fails. */
    private PreviousOutput previousOutput;
    /** The recording ended cleanly, in the perf.data and the archive. */
    private boolean finished;
    private final boolean monotonicClock;
    private static final long CLOCK_SAMPLE_MS = 100;
    private PerfClockProbe clockProbe;
    private final ClockMap clockMap = new ClockMap();
    private long lastClockSample;

    public Recorder(RecordingPlan plan, PrintStream log, boolean verbose) {
        this.plan = plan;
        this.log = log;
        this.verbose = verbose;
        this.hostFeatures = HostFeatures.read(plan.cmdline());
        // With PT the TSC converts to perf's clock, which perf insists on; sideband alone uses CLOCK_MONOTONIC, the
        // clock of the fence's images, unless --clock perf asks for the PT path.
        this.monotonicClock = !plan.perfClock();
    }

    /** Asks the loop to stop; safe from a signal handler or another thread. */
    public void requestStop() {
        stop.set(true);
        wakeup.signal();
    }

    /** -S: copy the AUX areas out at the next turn of the loop. */
    public void requestSnapshot() {
        snapshotWanted.set(true);
        wakeup.signal();
    }

    /** Runs until stopped; returns the summary. */
    public RecordSummary run() throws IOException {
        // Opened here: the probe's event follows this thread, which runs the loop and samples.
        clockProbe = PerfClockProbe.open(monotonicClock ? CLOCK_MONOTONIC : -1);
        long start = sampleClock();
        openArchive(start);
        startChild();
        openEvents();
        previousOutput = PreviousOutput.moveAside(plan.output());
        writer = PerfDataWriter.createLive(plan.output(), attrIds());
        if (plan.pt() != null) writer.write(auxtraceInfo());
        if (plan.fence()) synthesizeLoadedPrograms();
        writeFeatures();
        writer.flush();
        startFence();
        for (PerfEvent e : events) {
            if (!(plan.command().isEmpty() || e.pid() < 0)) continue; // enable_on_exec starts the command's events
            e.enable();
        }
        startPerfAttachments();
        if (fence != null) startPinner();
        if (fence != null && plan.kernelText()) startKernelText();
        // after the enable: a task that maps or execs meanwhile is recorded twice rather than not at all
        synthesizeExistingTasks();
        // the rings filled while /proc was read (slowly, on a loaded machine): room for the command's first records
        drainAll();
        releaseChild();
        if (verbose) log.println("ptrec: recording " + rings.size() + " rings into " + plan.output() + "; Ctrl-C stops");
        loopStarted = true;
        previousOutput.keep();
        loop();
        return finish();
    }

    // ---- setup -----------------------------------------------------------------------------------------------

    /** Reads perf's clock against CLOCK_MONOTONIC into the clock map; returns the perf time read. */
    private long sampleClock() throws IOException {
        ClockMap.Pair p = clockProbe.sample();
        clockMap.add(p);
        lastClockSample = p.monoAfter();
        return p.perf();
    }

    private long clockSampleFailures;

    /**
     * A sample once recording: a failure must not end the recording; the map holds the offset from the last pair
     * (the clocks drift apart by well under a µs per second), and the summary counts it.
     */
    private void sampleClockOrCount() {
        try {
            sampleClock();
        } catch (IOException | RuntimeException e) {
            clockSampleFailures++;
            lastClockSample = System.nanoTime();
            if (verbose) log.println("ptrec: reading perf's clock: " + e.getMessage());
        }
    }

    private void openArchive(long startTime) {
        if (plan.archive() == null) return;
        // a write waiting for another process's transaction gives up at SIGINT/SIGTERM, not only at the timeout
        archive = Archive.open(plan.archive(), stop::get);
        recordingId = UUID.randomUUID().toString();
        String boot;
        try {
            boot = RegionTracker.currentBootId();
        } catch (IOException e) {
            boot = "unknown";
        }
        String bootId = boot;
        // one commit: the recording is live (gc keeps it, whatever --keep says) until the lease ends
        recording = Recording.started(recordingId, plan.output().toAbsolutePath().toString(), bootId, startTime);
        lease = Recordings.begin(archive, recording, LEASE_HOLDER, LEASE_TTL);
        regions = new ArchiveSink(archive, recordingId);
        regionLog = new RegionLog(regions);
        recordingBoot = bootId;
        recordingStart = startTime;
        tracker = new RegionTracker(bootId, regionLog, monotonicClock ? LongUnaryOperator.identity() : clockMap);
    }

    private void startFence() throws IOException {
        if (!plan.fence() || tracker == null) return;
        fence = TextFence.start(TextFence.Config.defaults(), kernel, new TextSink() {
            public void accept(CapturedText t) throws IOException {
                if (t.metadata() != null && t.functionIndex() == 0 && t.hook() == Hook.LOAD) fenced.add(t.metadata());
                tracker.accept(t);
            }

            public void accept(CapturedText t, ptfence.region.RegionMetadata m) throws IOException {
                tracker.accept(t, m);
            }

            public void metadata(ProgramMetadata m) throws IOException {
                tracker.metadata(m);
            }

            public void freeHookActive(boolean active) {
                tracker.freeHookActive(active);
            }

            public void flush() throws IOException {
                tracker.flush();
            }
        });
        metadataFenced = fence.metadataInKernel();
        if (fence.mode() != TextFence.Mode.IN_KERNEL) fenceNote = "user-space fence: " + fence.fallbackReason();
        String how = fenceNote.isEmpty() ? fence.copyNote() : fenceNote;
        if (verbose) log.println("ptrec: fence " + fence.mode() + (how.isEmpty() ? "" : " (" + how + ")"));
    }

    /** The command waits on a FIFO until its events exist, so nothing it does before exec escapes them. */
    private void startChild() throws IOException {
        if (plan.pid() >= 0) {
            // like perf record -p: the recording ends with the task
            ProcessHandle.of(plan.pid()).ifPresentOrElse(h -> h.onExit().thenRun(this::requestStop), this::requestStop);
        }
        if (plan.command().isEmpty()) return;
        Path dir = Files.createTempDirectory("ptrec");
        fifo = dir.resolve("go");
        try {
            int rc = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor();
            if (rc != 0) throw new IOException("mkfifo " + fifo + " failed");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
        // $0 names ptrec in the shell's own messages (the command was looked up beforehand; an exec can still fail)
        List<String> argv = new ArrayList<>();
        if (Files.isExecutable(SETPRIV)) {
            // the command never outlives ptrec, even a SIGKILLed one: the kernel kills it when the thread that started
            // it ends (this one, which runs the recording to its end)
            argv.addAll(List.of(SETPRIV.toString(), "--pdeathsig", "KILL", "--"));
        }
        argv.addAll(List.of("/bin/sh", "-c", "read _ < \"$1\"; shift; exec \"$@\"", "ptrec", fifo.toString()));
        argv.addAll(plan.command());
        child = new ProcessBuilder(argv).inheritIO().start();
        child.onExit().thenRun(this::requestStop);
    }

    /** util-linux's setpriv (Essential in Debian): sets the parent-death signal, then execs the command. */
    private static final Path SETPRIV = Path.of("/usr/bin/setpriv");

    private void releaseChild() throws IOException {
        if (child == null) return;
        try (OutputStream o = Files.newOutputStream(fifo)) {
            o.write('\n');
        }
        Files.deleteIfExists(fifo);
        Files.deleteIfExists(fifo.getParent());
    }

    private EventAttr attr(int type, long config, long flags, int wakeup, int auxWatermark) {
        EventAttr a = EventAttr.builder().type(type).config(config).sampleType(SAMPLE_TYPE)
                .samplePeriod(type == 1 ? 0 : 1).flags(flags).wakeupEvents(wakeup).auxWatermark(auxWatermark).build();
        return monotonicClock ? PerfClockProbe.withClock(a, CLOCK_MONOTONIC) : a;
    }

    private final MissingFeatures missingFeatures = new MissingFeatures();
    /** The sideband event's first instance: the id of the task records ptrec synthesizes. */
    private long sidebandIdentifier;
    private final List<EventAttr> attrs = new ArrayList<>();
    private final List<List<Long>> ids = new ArrayList<>();

    private void openEvents() {
        boolean task = plan.taskTarget();
        int targetPid = child != null ? (int) child.pid() : plan.pid();
        long common = EventAttr.FLAG_DISABLED | EventAttr.FLAG_SAMPLE_ID_ALL;
        long inherit = task ? EventAttr.FLAG_INHERIT : 0;
        long onExec = child != null && task ? EventAttr.FLAG_ENABLE_ON_EXEC : 0;
        int[] cpus = task ? CpuList.online() : plan.cpus();

        EventAttr text = attr(1, 9, common | EventAttr.FLAG_KSYMBOL | EventAttr.FLAG_BPF_EVENT
                | EventAttr.FLAG_TEXT_POKE | EventAttr.FLAG_WATERMARK, 1, 0);
        // mmap and mmap2 both, as perf sets them: the kernel counts mmap listeners on mmap alone (mmap2 only picks
        // the record's layout), so mmap2 by itself yields no record at all; mmap_data stays off (code only)
        EventAttr side = attr(1, 9, common | inherit | onExec | EventAttr.FLAG_MMAP | EventAttr.FLAG_MMAP2 | EventAttr.FLAG_COMM
                | EventAttr.FLAG_COMM_EXEC | EventAttr.FLAG_TASK, 0, 0);
        // context switches come by the thousand per second: a ring of their own, so losses there stay there
        EventAttr switches = attr(1, 9, common | inherit | onExec | EventAttr.FLAG_CONTEXT_SWITCH, 0, 0);
        EventAttr pt = null;
        if (plan.pt() != null) {
            long auxBytes = (long) plan.auxPages() * Mmap.PAGE_SIZE;
            pt = attr(plan.pt().type(), plan.ptConfig(), common | inherit | onExec | (1L << 20) /* exclude_guest */,
                    0, plan.snapshot() ? 0 : (int) Math.min(auxBytes / 4, Integer.MAX_VALUE));
        }
        // kernel text: always whole CPUs, since BPF loads by any task can unload text the traced code runs
        List<Long> textIds = new ArrayList<>(), sideIds = new ArrayList<>(), switchIds = new ArrayList<>(),
                ptIds = new ArrayList<>();
        for (int cpu : CpuList.online()) {
            PerfEvent e = open(text, "kernel-text sideband", -1, cpu);
            textIds.add(e.id());
            rings.add(new Ring("text", cpu, PerfRing.map(e, TEXT_PAGES)));
        }
        for (int cpu : cpus) {
            if (pt != null) {
                PerfEvent e = open(pt, "intel_pt", task ? targetPid : -1, cpu);
                ptIds.add(e.id());
                PerfRing r = PerfRing.map(e, PT_DATA_PAGES);
                r.mapAux(plan.auxPages(), plan.snapshot() ? Mmap.Protection.READ_ONLY : Mmap.Protection.READ_WRITE);
                if (!plan.kernelFilter().isEmpty()) e.setFilter(plan.kernelFilter());
                rings.add(new Ring("pt", cpu, r));
            }
            PerfEvent e = open(side, "sideband", task ? targetPid : -1, cpu);
            sideIds.add(e.id());
            rings.add(new Ring("sideband", cpu, PerfRing.map(e, SIDEBAND_PAGES)));
            PerfEvent sw = open(switches, "context switches", task ? targetPid : -1, cpu);
            switchIds.add(sw.id());
            rings.add(new Ring("switch", cpu, PerfRing.map(sw, SWITCH_PAGES)));
        }
        if (verbose && !missingFeatures.names().isEmpty()) {
            log.println("ptrec: this kernel refuses " + String.join(", ", missingFeatures.names())
                    + " (EINVAL): recording without");
        }
        if (!plan.bpfOutput().isEmpty()) openBpfOutput();
        if (pt != null) add(pt, "intel_pt//", ptIds);
        add(side, "dummy:sideband", sideIds);
        add(switches, "dummy:switch", switchIds);
        sidebandIdentifier = sideIds.get(0);
        add(text, "dummy:kernel-text", textIds);
    }

    /** The maps --bpf-output named; closed at the end, which takes ptrec's events out of them. */
    private BpfOutputMaps bpfOutput;
    private static final int BPF_OUTPUT_PAGES = 128;
    /** PERF_COUNT_SW_BPF_OUTPUT, and the sample layout perf record gives a bpf-output event (IP, PERIOD, RAW). */
    private static final long SW_BPF_OUTPUT = 10,
            BPF_OUTPUT_SAMPLE_TYPE = SAMPLE_TYPE | 0x1 | 0x100 | 0x400;

    /**
     * A bpf-output event per online CPU (what bpf_perf_event_output() with BPF_F_CURRENT_CPU writes into), each on a
     * ring of its own, put into each map's CPU index (see {@link BpfOutputMaps} for what that does to the map's own
     * reader). Whole CPUs whatever the target: the program runs where it runs.
     */
    private void openBpfOutput() {
        bpfOutput = BpfOutputMaps.open(plan.bpfOutput());
        EventAttr a = EventAttr.builder().type(1).config(SW_BPF_OUTPUT).sampleType(BPF_OUTPUT_SAMPLE_TYPE)
                .samplePeriod(1).flags(EventAttr.FLAG_DISABLED | EventAttr.FLAG_SAMPLE_ID_ALL).wakeupEvents(0).build();
        if (monotonicClock) a = PerfClockProbe.withClock(a, CLOCK_MONOTONIC);
        List<Long> outIds = new ArrayList<>();
        for (int cpu : CpuList.online()) {
            PerfEvent e = open(a, "bpf-output", -1, cpu);
            outIds.add(e.id());
            rings.add(new Ring("bpf-output", cpu, PerfRing.map(e, BPF_OUTPUT_PAGES)));
            bpfOutput.attach(cpu, e);
        }
        add(a, "bpf-output", outIds);
    }

    private PerfEvent open(EventAttr a, String name, int pid, int cpu) {
        PerfEvent e = missingFeatures.open(a, x -> PerfEvent.open(x, name, pid, cpu));
        events.add(e);
        return e;
    }

    private void add(EventAttr requested, String name, List<Long> eventIds) {
        EventAttr a = missingFeatures.strip(requested); // as opened
        attrs.add(a);
        ids.add(eventIds);
        eventDesc.add(new Feature.EventDescEntry(a, name, eventIds));
    }

    private List<AttrIds> attrIds() {
        List<AttrIds> out = new ArrayList<>();
        for (int i = 0; i < attrs.size(); i++) out.add(new AttrIds(attrs.get(i), ids.get(i)));
        return out;
    }

    /** PERF_RECORD_AUXTRACE_INFO for intel_pt, from the PMU and the first PT ring's time conversion. */
    private PerfRecord auxtraceInfo() {
        PerfRing first = rings.stream().filter(r -> r.kind().equals("pt")).findFirst().orElseThrow().ring();
        PerfRing.TimeConversion tc = first.timeConversion();
        var pmu = plan.pt();
        byte[] filter = plan.kernelFilter().getBytes(StandardCharsets.UTF_8);
        List<Long> priv = new ArrayList<>(List.of((long) pmu.type(), (long) tc.shift(), tc.mult(), tc.zero(),
                tc.capUserTimeZero() ? 1L : 0L, pmu.bit("tsc"), pmu.bit("noretcomp"), plan.taskTarget() ? 0L : 3L,
                plan.snapshot() ? 1L : 0L, plan.taskTarget() ? 0L : 1L, pmu.bit("mtc"), pmu.bit("mtc_period"),
                pmu.tscArtNumerator(), pmu.tscArtDenominator(), pmu.bit("cyc"), pmu.maxNonturboRatio(),
                (long) filter.length));
        if (filter.length > 0) {
            ByteBuffer b = ByteBuffer.allocate((filter.length + 1 + 7) / 8 * 8).order(ByteOrder.LITTLE_ENDIAN);
            b.put(filter).clear();
            while (b.hasRemaining()) priv.add(b.getLong());
        }
        priv.add(pmu.cap("event_trace"));
        return new PerfRecord.AuxtraceInfo(0, PerfRecord.AuxtraceInfo.TYPE_INTEL_PT, 0, priv);
    }

    /**
     * Like perf's perf_event__synthesize_bpf_events: KSYMBOL and BPF_EVENT(PROG_LOAD) records, and header info, for
     * the programs loaded before the recording, so perf can map (and decode through) their addresses too.
     */
    private void synthesizeLoadedPrograms() throws IOException {
        long identifier = ids.get(ids.size() - 1).get(0); // the kernel-text event's first instance
        SampleId sid = new SampleId(SAMPLE_TYPE, 0, 0, 0, 0, 0, 0, 0, identifier);
        Bpf bpf = Bpf.get();
        try {
            for (int id = bpf.progGetNextId(0); id > 0; id = bpf.progGetNextId(id)) {
                try (BpfFd fd = bpf.progGetFdById(id)) {
                    if (fd == null) continue; // gone meanwhile
                    ProgramMetadata m = ProgramMetadata.fetch(fd);
                    long[] addrs = m.info().jitedKsyms();
                    int[] lens = m.info().jitedFuncLens();
                    List<String> names = m.ksymNames();
                    if (addrs.length == 0) continue; // not JITed: no text
                    for (int i = 0; i < addrs.length && i < lens.length && i < names.size(); i++) {
                        writer.write(new PerfRecord.Ksymbol(0, addrs[i], lens[i], 1, 0, names.get(i), sid));
                    }
                    ByteBuffer tag = ByteBuffer.allocate(8).putLong(0, m.info().tag());
                    writer.write(new PerfRecord.BpfEvent(0, 1, 0, id, tag, sid));
                    progInfos.put(id, m.toPerfBpil());
                    m.toPerfBtf().ifPresent(b -> btfs.put(b.btfId(), b));
                    stats.synthesized++;
                } catch (ProgInfo.Raced e) {
                    // changed between the two info calls: it is being unloaded; the fence has its bytes
                }
            }
        } catch (BpfException e) {
            if (verbose) log.println("ptrec: programs loaded before the recording are not described: " + e.getMessage());
        }
    }

    /**
     * Like perf's synthesized task events: COMM and MMAP2 records, from /proc, of the tasks that exist already (-p's
     * process, or every process for whole CPUs), stamped at time 0 as perf stamps them, so an already running task's
     * code maps too. A command alone needs none: its exec is recorded.
     */
    private void synthesizeExistingTasks() throws IOException {
        if (plan.pid() < 0 && !plan.systemWide()) return;
        ExistingTasks tasks = new ExistingTasks(Path.of("/proc"));
        List<Integer> pids = plan.pid() >= 0 ? List.of(plan.pid()) : tasks.processes();
        long identifier = sidebandIdentifier;
        int processes = 0;
        long comms = 0, mmaps = 0;
        for (int pid : pids) {
            List<PerfRecord> records = tasks.records(pid,
                    (p, t) -> new SampleId(SAMPLE_TYPE, p, t, 0, 0, 0, 0, 0, identifier));
            if (!records.isEmpty()) processes++;
            for (PerfRecord r : records) {
                writer.write(r);
                if (r instanceof PerfRecord.Mmap2 m) jitFiles.mapped(m.pid(), m.filename());
                if (r instanceof PerfRecord.Comm) comms++;
                else mmaps++;
            }
        }
        if (verbose) log.println("ptrec: synthesized " + comms + " COMM and " + mmaps + " MMAP2 records for "
                + processes + " existing processes (from /proc)");
    }

    private void writeFeatures() {
        writeFeatures(Recording.RUNNING);
    }

    /** The header's features; {@code end}: the recording's end in perf time ({@link Recording#RUNNING} while it runs). */
    private void writeFeatures(long end) {
        if (regionLog != null) writer.setFeature(regionLog.feature(recordingId, recordingBoot, recordingStart, end));
        for (Feature f : hostFeatures) writer.setFeature(f);
        writer.setFeature(new Feature.EventDesc(eventDesc));
        if (!progInfos.isEmpty()) writer.setFeature(new Feature.BpfProgInfos(new ArrayList<>(progInfos.values())));
        if (!btfs.isEmpty()) writer.setFeature(new Feature.BpfBtfs(new ArrayList<>(btfs.values())));
    }

    // ---- the loop --------------------------------------------------------------------------------------------

    private void loop() throws IOException {
        try (Epoll epoll = Epoll.create(rings.size() + 1)) {
            epoll.add(wakeup.fd(), -1, "stop/snapshot eventfd");
            for (int i = 0; i < rings.size(); i++) epoll.add(rings.get(i).ring().event().fd(), i, rings.get(i).kind());
            int[] ready = new int[rings.size() + 1];
            long lastFlush = System.nanoTime(), lastLease = lastFlush;
            while (!stop.get()) {
                int n = epoll.wait(ready, 100);
                wakeup.drain();
                long now0 = System.nanoTime();
                // Kernel-text records wake us one by one: take those at once and leave the bulky rings to their
                // own wakeups (half full) or the 100 ms tick, so a program's pin never waits behind a batch of
                // context switches.
                boolean bulk = now0 - lastBulkDrain >= BULK_TICK_NS;
                for (int i = 0; i < n && !bulk; i++) {
                    if (ready[i] >= 0 && !rings.get(ready[i]).kind().equals("text")) bulk = true;
                }
                drain(bulk);
                if (bulk) lastBulkDrain = now0;
                if (snapshotWanted.getAndSet(false)) snapshot();
                long now = System.nanoTime();
                if (now - lastClockSample >= CLOCK_SAMPLE_MS * 1_000_000) sampleClockOrCount();
                if (now - lastFlush >= plan.flushInterval().toNanos()) {
                    writeFeatures();
                    writer.flush();
                    lastFlush = now;
                }
                if (lease != null && now - lastLease >= Duration.ofMinutes(1).toNanos()) {
                    renewLease();
                    lastLease = now;
                }
            }
        }
    }

    /**
     * Keeps the recording live. A lease that ran out (ptrec stopped for longer than its TTL, e.g. SIGSTOP) and was
     * removed by gc is begun again, with the recording registered again if gc dropped it; the summary says so, since
     * regions archived before may then be gone.
     */
    private void renewLease() {
        if (!Recordings.renewLease(archive, lease.id(), LEASE_TTL)) {
            lease = Recordings.begin(archive, recording, LEASE_HOLDER, LEASE_TTL);
            leaseLapses++;
        }
    }

    private static final long BULK_TICK_NS = 100_000_000L;
    private long lastBulkDrain;
    private long lastRoundRecords;

    private void drainAll() throws IOException {
        drain(true);
    }

    private final TextRecordOrder textOrder = new TextRecordOrder(TRAILER);
    private List<PerfRing> textRings;

    private void drain(boolean bulk) throws IOException {
        if (textRings == null) textRings = rings.stream().filter(r -> r.kind().equals("text")).map(Ring::ring).toList();
        textOrder.drain(textRings, rec -> onRecord(rec, "text")); // in time order across the CPUs' rings
        if (!pinnedIds.isEmpty()) describePinned();
        takeFenced();
        for (Ring r : rings) {
            if (bulk && !r.kind().equals("text")) r.ring().drain((rec, ring) -> onRecord(rec, r.kind()));
            if (bulk && r.kind().equals("pt") && !plan.snapshot()) {
                r.ring().drainAux((bytes, offset, ring) -> writeAux(bytes, offset, r));
            }
        }
        // A round is a pass over every ring: perf's ordered events rely on each round's records being newer than
        // everything drained before the previous FINISHED_ROUND.
        if (bulk && stats.records() > lastRoundRecords) {
            writer.write(new PerfRecord.FinishedRound(0));
            lastRoundRecords = stats.records();
        }
    }

    private void snapshot() throws IOException {
        for (Ring r : rings) {
            if (!r.kind().equals("pt")) continue;
            r.ring().event().disable();
            try {
                r.ring().snapshotAux((bytes, offset, ring) -> writeAux(bytes, offset, r));
            } finally {
                r.ring().event().enable();
            }
        }
        stats.snapshots++;
    }

    private long auxReference;

    private void writeAux(ByteBuffer bytes, long offset, Ring r) throws IOException {
        int n = bytes.remaining();
        int padded = (n + 7) & ~7; // perf pads AUXTRACE payloads to 8 bytes
        ByteBuffer payload = ByteBuffer.allocate(padded);
        payload.put(bytes).clear();
        int idx = rings.stream().filter(x -> x.kind().equals("pt")).toList().indexOf(r);
        writer.write(new PerfRecord.Auxtrace(0, padded, offset, ++auxReference, idx,
                plan.taskTarget() ? (int) (child != null ? child.pid() : plan.pid()) : -1, r.cpu(), 0, payload));
        stats.ptBytes.merge(r.cpu(), (long) n, Long::sum);
    }

    private void onRecord(ByteBuffer rec, String ringKind) throws IOException {
        int type = rec.getInt(0);
        int misc = Short.toUnsignedInt(rec.getShort(4));
        int size = Short.toUnsignedInt(rec.getShort(6));
        int fixed = KernelRecordSizes.trueSize(rec, size, TRAILER);
        if (fixed != size) {
            stats.sizeRepairs++;
            size = fixed;
            rec.putShort(6, (short) size);
        }
        if (type == RecordTypes.COMM && rec.getInt(12) == clockProbe.tid()) return; // our own clock reading
        ByteBuffer body = ByteBuffer.allocate(size - 8).order(ByteOrder.LITTLE_ENDIAN);
        body.put(0, rec, 8, size - 8);
        writer.write(new PerfRecord.Unknown(type, misc, body));
        stats.count(type);
        long time = size >= 8 + TRAILER ? rec.getLong(size - 24) : 0;
        switch (type) {
            case RecordTypes.LOST -> stats.lost.merge(ringKind, rec.getLong(16), Long::sum);
            case RecordTypes.AUX -> stats.auxFlags(rec.getLong(24));
            case RecordTypes.KSYMBOL -> onKsymbol(rec, size, time);
            case RecordTypes.BPF_EVENT -> onBpfEvent(rec);
            case RecordTypes.TEXT_POKE -> onTextPoke(rec, time);
            case RecordTypes.MMAP, RecordTypes.MMAP2 -> jitFiles.record(rec, type, size);
            default -> { }
        }
        // the kernel-text stream comes in time order: module frees taken before it have had their last pokes
        if (tracker != null && time > 0 && ringKind.equals("text")) tracker.sidebandTime(time);
    }

    private void onKsymbol(ByteBuffer rec, int size, long time) throws IOException {
        long addr = rec.getLong(8);
        int len = rec.getInt(16);
        int ksymType = Short.toUnsignedInt(rec.getShort(20));
        int flags = Short.toUnsignedInt(rec.getShort(22));
        String name = cString(rec, 24, size - TRAILER);
        if (tracker == null) return;
        if ((flags & 1) != 0) {
            if (fence != null) fence.kernelRangeGone(name, addr);
            tracker.ksymbolUnregistered(addr, name, time);
            return;
        }
        // Trampolines, dispatchers and OOL pages have no program to ask: copy them now, while they are there.
        boolean program = name.startsWith("bpf_prog_");
        if (fence != null && !program && (ksymType == 1 || ksymType == 2) && len > 0) {
            try {
                fence.rangeRegistered(name, addr, len, monotonicClock ? time : System.nanoTime());
                stats.kernelReads++;
            } catch (IOException | RuntimeException e) {
                stats.kernelReadFailures++;
                if (verbose) log.println("ptrec: could not copy " + name + ": " + e.getMessage());
            }
        }
    }

    /** Programs the pinner thread holds, by id, until the loop describes them. */
    private final java.util.concurrent.ConcurrentHashMap<Integer, BpfFd> early = new java.util.concurrent.ConcurrentHashMap<>();
    /**
     * Programs the loop has pinned itself, for a pinner that gets there later: its pin would otherwise keep the
     * program alive, unregistered and unfreed, until ptrec ends.
     */
    private final java.util.Set<Integer> pinnedByLoop = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private Thread pinner;

    /**
     * Like perf's side-band thread: watches only the kernel-text rings and pins each new program the moment its
     * BPF_EVENT(PROG_LOAD) is published, without consuming the record; the loop then finds it held. A program closed
     * by its loader within microseconds is otherwise gone before the loop gets there.
     */
    private void startPinner() {
        List<PerfRing> text = rings.stream().filter(r -> r.kind().equals("text")).map(Ring::ring).toList();
        Epoll ep = Epoll.create(text.size());
        for (int i = 0; i < text.size(); i++) ep.add(text.get(i).event().fd(), i, "kernel-text ring (pinner)");
        pinner = new Thread(() -> {
            int[] ready = new int[text.size()];
            PerfRing.RecordConsumer pin = (rec, ring) -> {
                if (rec.getInt(0) == RecordTypes.TEXT_POKE || rec.getInt(0) == RecordTypes.KSYMBOL) {
                    peekText(rec);
                    return;
                }
                if (metadataFenced) return; // the in-kernel fence keeps the metadata: nothing to pin
                if (rec.getInt(0) != RecordTypes.BPF_EVENT || rec.getShort(8) != 1) return;
                int id = rec.getInt(12);
                if (early.containsKey(id) || pinnedByLoop.remove(id)) return;
                try {
                    BpfFd fd = Bpf.get().progGetFdById(id);
                    if (fd != null && early.putIfAbsent(id, fd) != null) fd.close();
                    // the loop marks before it takes: if it has marked, it took before this put, so drop the pin
                    if (fd != null && pinnedByLoop.remove(id)) {
                        BpfFd late = early.remove(id);
                        if (late != null) late.close();
                    }
                } catch (IOException | RuntimeException e) {
                    // the loop tries again and counts it
                }
            };
            try (ep) {
                while (!stop.get()) {
                    ep.wait(ready, 20);
                    for (PerfRing r : text) r.peek(pin);
                }
            } catch (IOException | RuntimeException e) {
                if (verbose) log.println("ptrec: pinner stopped: " + e.getMessage());
            }
        }, "ptrec-pinner");
        pinner.setDaemon(true);
        pinner.start();
    }

    /**
     * The pinner's look at a KSYMBOL or TEXT_POKE before the loop gets there (the loop lagged 1.5 s behind the
     * kernel in the guest churn): a poke that switches a BPF dispatcher to a half, or calls a trampoline image, has
     * the fence copy that text now, while it is still the version the poke put in force ({@link TextFence#peeked}).
     */
    private void peekText(ByteBuffer rec) {
        try {
            int size = KernelRecordSizes.trueSize(rec, Short.toUnsignedInt(rec.getShort(6)), TRAILER);
            long time = size >= 8 + TRAILER ? rec.getLong(size - 24) : 0;
            if (rec.getInt(0) == RecordTypes.KSYMBOL) {
                int flags = Short.toUnsignedInt(rec.getShort(22));
                fence.ksymbolPeeked(rec.getLong(8), rec.getInt(16), cString(rec, 24, size - TRAILER),
                        (flags & 1) != 0);
                return;
            }
            int oldLen = Short.toUnsignedInt(rec.getShort(16)), newLen = Short.toUnsignedInt(rec.getShort(18));
            byte[] bytes = new byte[newLen];
            rec.get(20 + oldLen, bytes);
            fence.peeked(rec.getLong(8), bytes, time);
        } catch (RuntimeException e) {
            // the loop copies it when it gets there
        }
    }

    /** Programs pinned on their BPF_EVENT(PROG_LOAD), described once the kernel-text rings are drained. */
    private final List<BpfFd> pinned = new ArrayList<>();
    private final List<Integer> pinnedIds = new ArrayList<>();

    /**
     * Pins the program at once (one bpf() call) so a loader that closes it right away cannot free it before its
     * metadata is fetched; the slower fetch happens in {@link #describePinned} after the kernel-text rings.
     */
    private void onBpfEvent(ByteBuffer rec) {
        int eventType = Short.toUnsignedInt(rec.getShort(8));
        int id = rec.getInt(12);
        if (eventType != 1 || fence == null) return;
        if (metadataFenced) {
            if (!progInfos.containsKey(id)) undescribed.add(id);
            return;
        }
        try {
            if (pinnedByLoop.size() > 100_000) pinnedByLoop.clear(); // marks the pinner never came back for
            pinnedByLoop.add(id);
            BpfFd fd = early.remove(id);
            if (fd != null) pinnedByLoop.remove(id); // the pinner was first: nothing to undo
            if (fd == null) fd = Bpf.get().progGetFdById(id);
            pinned.add(fd);
            pinnedIds.add(id);
        } catch (IOException | RuntimeException e) {
            stats.metadataErrors++;
            if (verbose) log.println("ptrec: pinning BPF program " + id + ": " + e.getMessage());
        }
    }

    private Thread kernelText;
    private volatile String kernelTextNote = "";

    /**
     * This boot's kernel text and kallsyms into the archive (once per boot: later recordings link them), on a thread
     * of its own: the first copy takes seconds, and the recording must not wait for it.
     */
    private void startKernelText() {
        String bootId = tracker.bootId();
        kernelText = new Thread(() -> {
            try {
                var kt = ptfence.fence.KernelText.archive(archive, bootId, recordingId, fence.kernelMemory(), kernel);
                if (regionLog != null) kt.regions().forEach(regionLog::named); // named in the perf.data too
                kernelTextNote = kt.summary();
            } catch (IOException | RuntimeException e) {
                kernelTextNote = "kernel text not archived: " + e.getMessage();
            }
        }, "ptrec-kernel-text");
        kernelText.setDaemon(true);
        kernelText.start();
    }

    /** The LOAD hook delivers each program's metadata with its code: no pinning, no race (docs/fence.md). */
    private boolean metadataFenced;
    /** Metadata the fence delivered, for the BPF_PROG_INFO header (taken over by the loop thread). */
    private final java.util.concurrent.ConcurrentLinkedQueue<ProgramMetadata> fenced =
            new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** Programs a BPF_EVENT(PROG_LOAD) announced whose fenced metadata has not come (yet). */
    private final java.util.Set<Integer> undescribed = new java.util.LinkedHashSet<>();

    private void takeFenced() {
        for (ProgramMetadata m; (m = fenced.poll()) != null; ) {
            int id = m.info().id();
            undescribed.remove(id);
            progInfos.put(id, m.toPerfBpil());
            m.toPerfBtf().ifPresent(b -> btfs.putIfAbsent(b.btfId(), b));
        }
    }

    /**
     * At the end: programs announced but never fenced with their metadata (loaded where the LOAD hook cannot see,
     * or lost to a full ring) are asked of bpf() if they still exist; the rest count as metadata missing.
     */
    private void describeUnfenced() {
        takeFenced();
        for (int id : undescribed) {
            try {
                fence.onProgramLoaded(id).ifPresent(m -> {
                    progInfos.put(id, m.toPerfBpil());
                    m.toPerfBtf().ifPresent(b -> btfs.putIfAbsent(b.btfId(), b));
                });
            } catch (IOException | RuntimeException e) {
                stats.metadataErrors++;
            }
        }
        undescribed.clear();
    }

    private void describePinned() {
        for (int i = 0; i < pinnedIds.size(); i++) {
            int id = pinnedIds.get(i);
            try (BpfFd held = pinned.get(i)) {
                Optional<ProgramMetadata> m = fence.onProgramLoaded(id);
                if (m.isPresent()) {
                    progInfos.put(id, m.get().toPerfBpil());
                    m.get().toPerfBtf().ifPresent(b -> btfs.put(b.btfId(), b));
                }
            } catch (IOException | RuntimeException e) {
                stats.metadataErrors++;
                if (verbose) log.println("ptrec: metadata of BPF program " + id + ": " + e.getMessage());
            }
        }
        pinned.clear();
        pinnedIds.clear();
    }

    private void onTextPoke(ByteBuffer rec, long time) throws IOException {
        if (tracker == null) return;
        long addr = rec.getLong(8);
        int oldLen = Short.toUnsignedInt(rec.getShort(16));
        int newLen = Short.toUnsignedInt(rec.getShort(18));
        byte[] old = new byte[oldLen], bytes = new byte[newLen];
        rec.get(20, old);
        rec.get(20 + oldLen, bytes);
        tracker.textPoke(addr, old, bytes, time);
        if (fence != null) fence.textPoked(addr, bytes, time, monotonicClock ? time : System.nanoTime());
    }

    private static String cString(ByteBuffer b, int from, int limit) {
        int end = from;
        while (end < limit && b.get(end) != 0) end++;
        byte[] s = new byte[end - from];
        b.get(from, s);
        return new String(s, StandardCharsets.UTF_8);
    }

    // ---- the end ---------------------------------------------------------------------------------------------

    private RecordSummary finish() throws IOException {
        for (PerfEvent e : events) e.disable();
        if (pinner != null) {
            try {
                pinner.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        drainAll();
        if (bpfOutput != null) {
            bpfOutputNote = "bpf-output: " + stats.byType.getOrDefault(RecordTypes.SAMPLE, 0L) + " samples from "
                    + bpfOutput.describe() + ", lost " + stats.lost.getOrDefault("bpf-output", 0L);
            bpfOutput.close(); // the kernel takes ptrec's events out of the maps
        }
        sampleClockOrCount(); // brackets the fence's last images from after, rather than extrapolating to them
        if (child != null) {
            // stopped while the command runs (a signal to ptrec alone): like perf record, SIGTERM it; SIGKILL if it
            // outlives a grace period, so a stop always ends
            commandStopped = child.isAlive();
            if (commandStopped) child.destroy();
            try {
                if (!child.waitFor(CHILD_GRACE_S, TimeUnit.SECONDS)) {
                    child.destroyForcibly();
                    child.waitFor();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        FenceCounters fc = null;
        if (kernelText != null) {
            try {
                kernelText.join(); // its copy belongs to the recording (the fence's kernel reader must stay open)
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (fence != null) {
            fence.awaitQuiet(Duration.ofMillis(300), Duration.ofSeconds(3));
            if (metadataFenced) describeUnfenced();
            fence.close();
            fc = fence.finalCounters();
            moduleNote = String.join("; ", java.util.stream.Stream.of(fence.moduleSummary(),
                    fence.dispatcherSummary(), fence.trampolineSummary()).filter(n -> !n.isEmpty()).toList());
            fence = null;
        }
        if (perfAttachmentsAtStart != null) {
            try {
                perfAttachmentsAtStart.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        keepPerfAttachments();
        if (tracker != null) tracker.closeUnfreed();
        if (regions != null) regions.close();
        early.values().forEach(BpfFd::close); // pinned but their records were lost: nothing to describe
        early.clear();
        writeFeatures(endTime());
        writer.close();
        keepJitFiles();
        sampleClockOrCount();
        long end = endTime();
        if (verbose && !monotonicClock) log.println("ptrec: " + clockMap);
        String archiveNote = "";
        if (archive != null) {
            if (!archive.write(b -> Recordings.finish(b, recordingId, end))) {
                archiveNote = "recording " + recordingId + " is no longer in the archive: gc dropped it while ptrec's "
                        + "lease had lapsed";
            } else if (leaseLapses > 0) {
                archiveNote = "ptrec's lease on the archive lapsed " + leaseLapses + " time(s) (stopped longer than "
                        + LEASE_TTL.toMinutes() + " min?): regions archived before a lapse may have been collected";
            }
            Recordings.closeLease(archive, lease.id());
        }
        finished = true;
        Map<Hook, Long> byHook = fc == null ? Map.of() : fc.imagesByHook();
        return new RecordSummary(plan.output(), writer.records(), writer.dataSize(), stats.snapshot(),
                progInfos.size(), regions == null ? 0 : regions.regionsAdded(), byHook,
                fc == null ? -1 : fc.losses(),
                fc == null ? "" : fc.summary() + (moduleNote.isEmpty() ? "" : "; " + moduleNote), fenceNote, recordingId,
                child == null || commandStopped ? -1 : child.exitValue(), clockNote(), kernelTextNote, archiveNote,
                bpfOutputNote, perfAttachments.stream().map(a -> "BPF program " + a.progId() + " runs on "
                        + a.describe()).distinct().toList());
    }

    /** The JIT files the recorded processes mapped or wrote, copied beside the output at the end. */
    private final JitFiles jitFiles = new JitFiles();

    private void keepJitFiles() {
        Path dir = plan.output().toAbsolutePath().getParent();
        List<String> problems = new ArrayList<>();
        List<String> kept = jitFiles.keep(dir == null ? Path.of(".") : dir, problems);
        problems.forEach(p -> log.println("ptrec: " + p));
        if (!kept.isEmpty()) log.println("ptrec: kept " + String.join(", ", kept) + " beside " + plan.output()
                + " (the recorded JIT code)");
    }

    private String bpfOutputNote = "";
    /** Attachments found so far (at the start and at the end), for the summary. */
    private final java.util.Set<ptfence.region.PerfAttachment> perfAttachments = new java.util.LinkedHashSet<>();

    /**
     * Programs running as perf event overflow handlers, with their events, into the archive beside the programs
     * (ptfence.region.PerfAttachment): looked at when the recording starts and when it ends, so an attachment made
     * and undone between the two is not seen (docs/ptrec.md). Needs the fence (root, the archive).
     */
    private Thread perfAttachmentsAtStart;

    /** The first look, on a thread of its own: the recording must not wait for it. */
    private void startPerfAttachments() {
        if (!plan.fence() || archive == null || recordingBoot == null) return;
        perfAttachmentsAtStart = new Thread(this::keepPerfAttachments, "ptrec-perf-attachments");
        perfAttachmentsAtStart.setDaemon(true);
        perfAttachmentsAtStart.start();
    }

    private synchronized void keepPerfAttachments() {
        if (!plan.fence() || archive == null || recordingBoot == null) return;
        try (ptfence.fence.PerfAttachments pa = ptfence.fence.PerfAttachments.open(kernel)) {
            List<ptfence.region.PerfAttachment> found = pa.scan();
            archive.write(b -> {
                for (ptfence.region.PerfAttachment a : found) ptfence.region.PerfAttachment.keep(b, recordingBoot, a);
                return null;
            });
            perfAttachments.addAll(found);
            if (verbose) found.forEach(a -> log.println("ptrec: BPF program " + a.progId() + " runs on " + a.describe()));
        } catch (IOException | RuntimeException e) {
            if (verbose) log.println("ptrec: programs on perf events not looked at: " + e.getMessage());
        }
    }

    /** Now, as the recording's end time (perf time, see Clocks). */
    private long endTime() {
        return monotonicClock ? System.nanoTime() : clockMap.toPerf(System.nanoTime());
    }

    /**
     * After a failure: a recording that never ran (the start failed) is taken out of the archive and its perf.data
     * with it (an existing one comes back from .old), one cut short gets its end time; either way its lease ends,
     * and the command's FIFO goes. What the fence archived stays for
     * gc to judge.
     */
    private void abandon() {
        if (archive != null && recordingId != null) {
            try {
                if (loopStarted) {
                    long end = endTime();
                    archive.write(b -> Recordings.finish(b, recordingId, end));
                } else {
                    archive.write(b -> Recordings.delete(b, recordingId));
                }
            } catch (RuntimeException e) {
                log.println("ptrec: could not " + (loopStarted ? "end" : "remove") + " recording " + recordingId
                        + " in the archive: " + e.getMessage());
            }
        }
        if (archive != null && lease != null) {
            try {
                Recordings.closeLease(archive, lease.id());
            } catch (RuntimeException e) {
                // it expires on its own (LEASE_TTL)
            }
        }
        if (previousOutput != null && !loopStarted) {
            try {
                previousOutput.restore(); // the writer's channel still points at the new file's inode, unused
            } catch (IOException e) {
                log.println("ptrec: could not put back the previous " + plan.output() + ": " + e.getMessage());
            }
        }
        if (fifo != null) {
            try {
                Files.deleteIfExists(fifo);
                Files.deleteIfExists(fifo.getParent());
            } catch (IOException e) {
                // a stray empty directory in the temp dir; not worth masking the real error
            }
        }
    }

    /** How the fence's times were converted, for the summary ("" on CLOCK_MONOTONIC: nothing to convert). */
    private String clockNote() {
        if (monotonicClock || tracker == null) return "";
        long now = System.nanoTime();
        return String.format("clock: perf's; fence times converted from CLOCK_MONOTONIC by %d ns (±%d ns, %d pairs, "
                + "offset moved %d ns over the run%s)", clockMap.offsetAt(now), clockMap.widestHalfWidth(),
                clockMap.pairsAdded(), clockMap.offsetSpread(),
                clockSampleFailures > 0 ? "; " + clockSampleFailures + " readings failed" : "");
    }

    @Override
    public void close() {
        if (fence != null) {
            try {
                fence.close();
            } catch (IOException e) {
                // the summary is gone anyway; the archive keeps what was written
            }
        }
        for (Ring r : rings) r.ring().close();
        if (clockProbe != null) clockProbe.close();
        for (PerfEvent e : events) {
            try {
                e.close();
            } catch (RuntimeException ignored) {
                // closing twice after an error is harmless
            }
        }
        if (regions != null) {
            try {
                regions.close();
            } catch (IOException e) {
                // what was committed stays; the rest of the batch is lost with the error already reported
            }
        }
        if (bpfOutput != null) bpfOutput.close();
        if (child != null && child.isAlive()) child.destroy();
        if (!finished) {
            stop.set(true); // the archive writes below do not wait out a lock holder again: they try once
            abandon();
        }
        wakeup.close();
        if (archive != null) archive.close();
    }
}

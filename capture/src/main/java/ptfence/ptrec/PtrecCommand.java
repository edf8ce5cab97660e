package ptfence.ptrec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import ptfence.bpf.Kallsyms;
import ptfence.cli.BadInputException;
import ptfence.cli.OutputFile;
import ptfence.cli.Tool;
import ptfence.pmu.AddressFilters;
import ptfence.pmu.IntelPtPmu;
import ptfence.pmu.PtConfig;
import ptfence.record.CpuList;
import ptfence.record.RecordSummary;
import ptfence.record.Recorder;
import ptfence.record.RecordingPlan;
import ptfence.store.ArchiveLocation;
import ptfence.sys.Mmap;
import ptfence.sys.Signals;
import ptfence.sys.SyscallException;

@Command(name = "ptrec", mixinStandardHelpOptions = true, version = "ptrec " + ptfence.cli.Version.NUMBER,
        sortOptions = false,
        description = {"Record Intel PT with sideband into a perf.data that perf reads; the text fence archives every "
                + "dynamic kernel text region (BPF JIT images, trampolines, dispatchers) before it can be freed.",
                "Stops on Ctrl-C (SIGINT/SIGTERM) or when the command exits, drains every ring and prints a summary."},
        footer = {"", "Examples:",
                "  ptrec -a                                  all CPUs until Ctrl-C, into perf.data",
                "  ptrec -o t.data -- ./workload arg         trace a command and its children",
                "  ptrec -C 0-1 --cyc --mtc-period 6 -m 16M   two CPUs, cycle-accurate, 16 MiB AUX per CPU",
                "  ptrec -a -S -m 4M                         snapshot mode: kill -USR2 <ptrec pid> saves the AUX areas",
                "  ptrec -a --filter 'filter bpf_prog_59f4a931744dcdc6_probe'   trace one BPF program only",
                "  ptrec --sideband-only -a --archive /tmp/ar   no PT (e.g. AMD): sideband + fence only",
                "", "Read it back with: perf report -D -i perf.data; perf script --show-bpf-events; ptdecode",
                "", "Exit status: the command's own when it ends (128+N if signal N ended it), as perf record's; 0 "
                        + "when Ctrl-C (SIGINT) or SIGTERM stopped the recording, or without a command; 2 for bad input "
                        + "or a failed start (one line)."})
public final class PtrecCommand implements Callable<Integer> {
    @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "perf.data to write (default: ${DEFAULT-VALUE})")
    Path output = Path.of("perf.data");

    @Option(names = "--archive", paramLabel = "DIR", description = "archive directory (default: $PTFENCE_ARCHIVE, "
            + "/var/lib/ptfence/archive as root, else ~/.local/share/ptfence/archive)")
    Path archive;

    @Option(names = "--no-fence", description = "run no text fence and archive nothing (sideband and PT only)")
    boolean noFence;

    @Option(names = "--kernel-text", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "archive this boot's kernel text and kallsyms (default; the first recording of a boot copies "
                    + "them, later ones reuse them); with --no-kernel-text a decode on another machine needs "
                    + "--kallsyms and --vmlinux or --kcore")
    boolean kernelText = true;

    @Option(names = {"-q", "--quiet"}, description = "print no summary")
    boolean quiet;

    @Option(names = {"-v", "--verbose"}, description = "say what is opened and why something could not be copied")
    boolean verbose;

    @Option(names = {"-a", "--all-cpus"}, description = "trace every online CPU")
    boolean allCpus;

    @Option(names = {"-C", "--cpu"}, paramLabel = "CPUS", description = "trace these CPUs (e.g. 0-3,6)")
    String cpuList;

    @Option(names = {"-p", "--pid"}, paramLabel = "PID", description = "trace a running task (and the tasks it starts)")
    Integer pid;

    @Option(names = {"-m", "--mmap-pages"}, paramLabel = "SIZE",
            description = "AUX area per CPU: pages or bytes with K/M/G, a power of two (default 4M). Unlike perf "
                    + "record, whose -m N sizes the data ring (and -m ,N the AUX area), ptrec's -m N is the AUX area: "
                    + "its data rings have fixed sizes. -m ,N works as in perf")
    String auxSize = "4M";

    @Option(names = {"-S", "--snapshot"}, description = "snapshot mode: AUX overwrites itself; SIGUSR2 saves it")
    boolean snapshot;

    @Option(names = "--sideband-only", description = "record everything but the PT stream (and run the fence)")
    boolean sidebandOnly;

    @Option(names = "--clock", paramLabel = "CLOCK", hidden = true, description = "expert, with --sideband-only: "
            + "stamp records with 'perf' (perf's own clock, as PT recordings do; the fence's times are converted) "
            + "or 'monotonic' (the default)")
    String clock;

    @Option(names = "--flush-interval", paramLabel = "MS", description = "rewrite the header every MS ms so a killed "
            + "ptrec leaves a valid file (default: ${DEFAULT-VALUE})")
    long flushMs = 1000;

    @Option(names = "--filter", paramLabel = "FILTERS", description = "address filters, perf syntax: "
            + "filter|start|stop|tracestop <addr|ksym>[/size][@file], comma-separated")
    String filter;

    @Option(names = "--tsc", negatable = true, description = "TSC packets (default on)")
    Boolean tsc;
    @Option(names = "--mtc", negatable = true, description = "MTC timing packets (default on where supported)")
    Boolean mtc;
    @Option(names = "--mtc-period", paramLabel = "N", description = "MTC period, 2^N crystal clocks (caps/mtc_periods)")
    Long mtcPeriod;
    @Option(names = "--cyc", negatable = true, description = "cycle-accurate CYC packets (caps/psb_cyc)")
    Boolean cyc;
    @Option(names = "--cyc-thresh", paramLabel = "N", description = "CYC threshold (caps/cycle_thresholds)")
    Long cycThresh;
    @Option(names = "--psb-period", paramLabel = "N", description = "PSB every 2^(N+11) bytes (caps/psb_periods)")
    Long psbPeriod;
    @Option(names = "--noretcomp", description = "no return compression")
    boolean noretcomp;
    @Option(names = "--ptw", description = "PTWRITE packets (caps/ptwrite)")
    boolean ptw;
    @Option(names = "--fup-on-ptw", description = "FUP after PTW (needs --ptw)")
    boolean fupOnPtw;
    @Option(names = "--pwr-evt", description = "power event packets (caps/power_event_trace)")
    boolean pwrEvt;
    @Option(names = "--event", description = "event trace (caps/event_trace)")
    boolean eventTrace;
    @Option(names = "--branch", negatable = true, description = "branch tracing (default on; --no-branch needs 'pt')")
    Boolean branch;

    @Option(names = "--bpf-output", paramLabel = "MAP", description = "record what BPF programs write with "
            + "bpf_perf_event_output() into this BPF_MAP_TYPE_PERF_EVENT_ARRAY (a map id, or the path it is pinned at; "
            + "repeatable): ptrec's bpf-output events replace the map's entries while it records (docs/ptrec.md)")
    List<String> bpfOutput = new ArrayList<>();

    @Parameters(paramLabel = "CMD", arity = "0..*", description = "command to start and trace, after --")
    List<String> command = new ArrayList<>();

    private final String[] argv;

    public PtrecCommand() {
        this(new String[0]);
    }

    PtrecCommand(String[] argv) {
        this.argv = argv;
    }

    @Override
    public Integer call() throws Exception {
        RecordingPlan plan = plan();
        Recorder recorder = new Recorder(plan, System.err, verbose);
        // also when inherited as ignored (a script's `ptrec ... &`), as perf record does
        Signals.handle("INT", recorder::requestStop);
        Signals.handle("TERM", recorder::requestStop);
        if (snapshot) Signals.handle("USR2", recorder::requestSnapshot);
        try (recorder) {
            RecordSummary summary = recorder.run();
            if (!quiet) summary.print(System.err);
            // as perf record: a command that failed makes the recording's exit status its own
            return Math.max(summary.commandExit(), Tool.EXIT_OK);
        } catch (SyscallException e) {
            // permissions, limits, a missing PMU: the user can act on the call and errno it names
            throw new BadInputException(e.getMessage(), e);
        }
    }

    RecordingPlan plan() {
        // As with perf record: -a or -C with a command traces whole CPUs until the command exits.
        boolean systemWide = allCpus || cpuList != null;
        if (!systemWide && pid == null && command.isEmpty()) {
            throw new BadInputException("nothing to trace: give -a, -C CPUS, -p PID or -- CMD ARGS");
        }
        if (allCpus && cpuList != null) throw new BadInputException("give -a or -C CPUS, not both");
        if (noFence && archive != null) {
            // nothing would reach the archive: a silent accept would leave the user looking for images there
            throw new BadInputException("--archive " + archive + ": --no-fence archives nothing; drop one of the two");
        }
        if (pid != null && (systemWide || !command.isEmpty())) {
            throw new BadInputException("-p PID traces one task: drop -a, -C and the command");
        }
        Path executable = command.isEmpty() ? null : requireExecutable(command.get(0));
        int[] cpus = cpuList != null ? CpuList.requireOnline(CpuList.parse(cpuList)) : CpuList.online();
        if (pid != null && !ProcessHandle.of(pid).isPresent()) throw new BadInputException("-p " + pid + ": no such process");
        if (flushMs < 10) throw new BadInputException("--flush-interval " + flushMs + ": at least 10 ms");
        boolean perfClock = !sidebandOnly;
        if (clock != null) {
            switch (clock) {
                case "perf" -> perfClock = true;
                case "monotonic" -> {
                    if (!sidebandOnly) throw new BadInputException("--clock monotonic: intel_pt needs perf's clock; "
                            + "drop --clock or add --sideband-only");
                }
                default -> throw new BadInputException("--clock " + clock + ": give perf or monotonic");
            }
        }
        IntelPtPmu pmu = null;
        long config = 0;
        String kernelFilter = "";
        int auxPages = auxPages(auxSize, snapshot);
        if (!sidebandOnly) {
            pmu = IntelPtPmu.discover();
            PtConfig c = PtConfig.defaults(pmu);
            setIf(c, "tsc", tsc);
            setIf(c, "mtc", mtc);
            if (mtcPeriod != null) c.set("mtc-period", mtcPeriod);
            setIf(c, "cyc", cyc);
            if (cycThresh != null) c.set("cyc-thresh", cycThresh);
            if (psbPeriod != null) c.set("psb-period", psbPeriod);
            if (noretcomp) c.set("noretcomp", 1);
            if (ptw) c.set("ptw", 1);
            if (fupOnPtw) c.set("fup-on-ptw", 1);
            if (pwrEvt) c.set("pwr-evt", 1);
            if (eventTrace) c.set("event", 1);
            setIf(c, "branch", branch);
            config = c.config();
            if (filter != null) {
                Kallsyms ks = readKallsyms();
                kernelFilter = AddressFilters.toKernel(filter, name -> symbol(ks, name), pmu.nrAddrFilters());
            }
            if (verbose) System.err.println("ptrec: intel_pt type " + pmu.type() + " config 0x"
                    + Long.toHexString(config) + " (" + c.describe() + ")");
        } else if (filter != null || snapshot) {
            throw new BadInputException((filter != null ? "--filter" : "-S") + " needs the PT stream; drop --sideband-only");
        }
        Path archiveDir = noFence ? null : ArchiveLocation.resolve(archive);
        // before anything starts (perf.data.old included): an output that is the command to run, or the archive
        if (executable != null && OutputFile.sameFile(output, executable)) {
            throw new BadInputException(output + ": is the command to run (" + command.get(0) + "); ptrec would move "
                    + "it to " + output.getFileName() + ".old before running it: give another -o");
        }
        List<Path> inputs = new ArrayList<>();
        if (archiveDir != null) inputs.addAll(List.of(archiveDir.resolve("data.mdb"), archiveDir.resolve("lock.mdb")));
        OutputFile.checkTarget(output, inputs);
        return new RecordingPlan(output, archiveDir, cpus, systemWide, pid == null ? -1 : pid, command, pmu, config, kernelFilter,
                auxPages, snapshot, !noFence, Duration.ofMillis(flushMs), cmdline(), perfClock, kernelText, bpfOutput);
    }

    /**
     * The command must be there before anything starts: as perf record does, ptrec names it and fails, rather than
     * recording a shell's failed exec.
     */
    static Path requireExecutable(String name) {
        List<Path> candidates = new ArrayList<>();
        if (name.contains("/")) {
            candidates.add(Path.of(name));
        } else {
            String path = System.getenv().getOrDefault("PATH", "/usr/local/bin:/usr/bin:/bin");
            for (String d : path.split(":", -1)) candidates.add(Path.of(d.isEmpty() ? "." : d, name));
        }
        boolean exists = false;
        for (Path p : candidates) {
            if (Files.isRegularFile(p) && Files.isExecutable(p)) return p;
            exists |= Files.exists(p);
        }
        throw new BadInputException(name + (exists ? ": not an executable file" : ": command not found"));
    }

    private List<String> cmdline() {
        List<String> out = new ArrayList<>(List.of("ptrec"));
        out.addAll(List.of(argv));
        return out;
    }

    private static void setIf(PtConfig c, String option, Boolean v) {
        if (v != null) c.set(option, v ? 1 : 0);
    }

    private static Kallsyms readKallsyms() {
        try {
            return Kallsyms.read();
        } catch (java.io.IOException e) {
            throw new BadInputException("--filter: cannot read /proc/kallsyms: " + e.getMessage());
        }
    }

    /** A kernel symbol's address and extent up to the next symbol. */
    private static AddressFilters.Symbol symbol(Kallsyms ks, String name) {
        var addr = ks.address(name);
        if (addr.isEmpty() || addr.getAsLong() == 0) return null;
        long a = addr.getAsLong(), next = Long.MAX_VALUE;
        for (Kallsyms.Symbol s : ks.symbols()) {
            if (Long.compareUnsigned(s.address(), a) > 0 && Long.compareUnsigned(s.address(), next) < 0) next = s.address();
        }
        return new AddressFilters.Symbol(a, next == Long.MAX_VALUE ? Mmap.PAGE_SIZE : next - a);
    }

    /** perf's -m: "N" pages, "N[KMG]" bytes, or "data,aux" of which the AUX part counts. */
    static int auxPages(String spec, boolean snapshot) {
        String s = spec.trim();
        int comma = s.indexOf(',');
        if (comma >= 0) s = s.substring(comma + 1).trim();
        long pages;
        try {
            char unit = s.isEmpty() ? ' ' : Character.toUpperCase(s.charAt(s.length() - 1));
            Map<Character, Long> units = Map.of('K', 1L << 10, 'M', 1L << 20, 'G', 1L << 30);
            if (units.containsKey(unit)) {
                pages = Long.parseLong(s.substring(0, s.length() - 1)) * units.get(unit) / Mmap.PAGE_SIZE;
            } else {
                pages = Long.parseLong(s);
            }
        } catch (NumberFormatException e) {
            throw new BadInputException("-m '" + spec + "': expected pages or a size like 4M");
        }
        long min = snapshot ? 1 : 2; // perf: at least 8 KiB, 4 KiB in snapshot mode
        if (pages < min || Long.bitCount(pages) != 1 || pages > Mmap.MAX_LENGTH / Mmap.PAGE_SIZE) {
            throw new BadInputException("-m '" + spec + "': the AUX area must be a power of two of pages, "
                    + (min * Mmap.PAGE_SIZE / 1024) + " KiB to " + (Mmap.MAX_LENGTH >> 20) + " MiB");
        }
        return (int) pages;
    }

    public static void main(String[] args) {
        Tool.main("ptrec", new PtrecCommand(args), args);
    }

}

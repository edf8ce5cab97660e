package ptfence.ptdecode;

import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import ptfence.cli.BadInputException;
import ptfence.output.DecodeSummary;
import ptfence.output.JsonlPacketPrinter;
import ptfence.output.PtdumpOptions;
import ptfence.output.PtdumpPrinter;
import ptfence.output.TextSink;
import ptfence.packet.Errata;
import ptfence.packet.PacketCursor;
import ptfence.packet.TraceSource;
import ptfence.sideband.PeventDump;
import ptfence.timing.TimingConfig;

/** {@code ptdecode packets}: libipt ptdump's packet listing (same options, same output) or JSON lines. */
@Command(name = "packets", mixinStandardHelpOptions = true,
        description = {"Print the packets of a raw Intel PT trace, as libipt's ptdump does.",
                "FILE[:from[-to]] selects a byte range (ptdump syntax; offsets are then relative to 'from').",
                "A perf.data recording (perf or ptrec, file or pipe mode) prints each AUX buffer in turn."},
        footer = {"", "Examples:",
                "  ptdecode packets trace.pt                      # ptdump format",
                "  ptdecode packets --no-pad --lastip trace.pt:0x1000-0x2000",
                "  ptdecode packets --time --time-delta --cpu 6/142 --mtc-freq 4 \\",
                "          --cpuid-0x15.eax 2 --cpuid-0x15.ebx 200 trace.pt",
                "  ptdecode packets --format=jsonl trace.pt | jq -c 'select(.type==\"tip\")'",
                "  ptdecode packets --quiet trace.pt              # check only: errors and exit code",
                "  ptdecode packets perf.data                     # every AUX buffer of a recording",
                "  perf record -o - -e intel_pt// CMD | ptdecode packets -   # a pipe-mode recording",
                "",
                "Decode errors are printed in the listing as ptdump prints them ([offset: error]), decoding",
                "resumes at the next PSB, and a summary line goes to stderr; the exit code is then 2."},
        sortOptions = false, modelTransformer = PacketsCommand.PtdumpStyleParsing.class)
public final class PacketsCommand implements Callable<Integer> {

    /** ptdump accepts an option more than once (the last one wins, --pevent:* apply in order). */
    public static final class PtdumpStyleParsing implements picocli.CommandLine.IModelTransformer {
        @Override
        public picocli.CommandLine.Model.CommandSpec transform(picocli.CommandLine.Model.CommandSpec spec) {
            spec.parser().overwrittenOptionsAllowed(true);
            return spec;
        }
    }

    /** Output formats. */
    public enum Format { ptdump, jsonl }

    @Parameters(index = "0", paramLabel = "FILE[:from[-to]]", description = "Raw Intel PT trace (or a byte range of it).")
    String trace;

    @Option(names = "--format", paramLabel = "ptdump|jsonl", description = "Output format (default: ${DEFAULT-VALUE}).")
    Format format = Format.ptdump;

    @Option(names = "--no-sync", description = "Don't sync to the first PSB; assume a sync point at the start.")
    boolean noSync;
    boolean quiet;

    @Option(names = "--quiet", description = "Print nothing but errors.")
    void quiet(boolean on) {
        quiet = on;
        sideband.sbFlags = 0;
    }
    @Option(names = "--no-pad", description = "Don't show PAD packets.")
    boolean noPad;
    @Option(names = "--no-timing", description = "Don't show timing packets.")
    boolean noTiming;
    @Option(names = "--no-cyc", description = "Don't show CYC packets and ignore them when tracking time.")
    boolean noCyc;
    @Option(names = "--no-offset", description = "Don't show the offset as the first column.")
    boolean noOffset;
    @Option(names = "--raw", description = "Show raw packet bytes.")
    boolean raw;
    @Option(names = "--lastip", description = "Show last IP updates on packets with IP payloads.")
    boolean lastIp;
    @Option(names = "--exec-mode", description = "Show the current execution mode on mode.exec packets.")
    boolean execMode;
    @Option(names = "--time", description = "Show the estimated TSC on timing packets.")
    boolean time;
    @Option(names = "--tcal", description = "Show time calibration information.")
    boolean tcal;
    @Option(names = "--time-delta", description = "Show timing information as delta.")
    boolean timeDelta;
    @Option(names = "--no-tcal", description = "Skip timing calibration (CYC packets then give errors).")
    boolean noTcal;
    @Option(names = "--no-wall-clock", description = "Suppress the no-time error and print relative time.")
    boolean noWallClock;
    @Option(names = "--keep-tcal-on-ovf", description = "Preserve timing calibration on overflow.")
    boolean keepTcalOnOvf;
    @Option(names = "--cpu", paramLabel = "none|f/m[/s]", description = "Decode for this CPU (errata); default: none.")
    String cpu;
    @Option(names = "--mtc-freq", paramLabel = "<n>", description = "MTC frequency (IA32_RTIT_CTL[17:14]).")
    String mtcFreq;
    @Option(names = "--nom-freq", paramLabel = "<n>", description = "Nominal frequency (MSR_PLATFORM_INFO[15:8]).")
    String nomFreq;
    @Option(names = "--cpuid-0x15.eax", paramLabel = "<n>", description = "Value of cpuid[0x15].eax.")
    String cpuid15Eax;
    @Option(names = "--cpuid-0x15.ebx", paramLabel = "<n>", description = "Value of cpuid[0x15].ebx.")
    String cpuid15Ebx;

    // Sideband (perf_event "pevent" files), as ptdump built with libipt-sb; ptdump only prints the records, so
    // the options that build process images (kernel start, sysroot, kcore, vdso) are accepted and unused.
    @picocli.CommandLine.Mixin
    SidebandOptions sideband = new SidebandOptions();

    @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "Write to FILE instead of stdout.")
    java.nio.file.Path output;

    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal).")
    Boolean progress;

    // Large blocks go out through standard output (tests replace it); TextSink does the buffering.
    OutputStream stdout = ptfence.cli.Stdout.stream();
    java.io.PrintStream stderr = System.err;
    java.io.InputStream stdin = System.in;

    /** Set by picocli when run as 'ptdecode packets': that command's streams are this one's (tests replace them). */
    @picocli.CommandLine.ParentCommand
    PtdecodeCommand parent;

    @Override
    public Integer call() throws java.io.IOException {
        if (parent != null) {
            stdout = parent.stdout;
            stderr = parent.stderr;
            stdin = parent.stdin;
        }
        if (time && tcal) {
            throw new BadInputException("specify either --time or --tcal");
        }
        java.util.List<java.nio.file.Path> inputs = new java.util.ArrayList<>(inputPaths(trace));
        sideband.files.forEach(f -> inputs.addAll(inputPaths(f.spec())));
        if (output == null) {
            return dumpTo(ptfence.cli.Stdout.of(stdout));
        }
        try (ptfence.cli.OutputFile f = ptfence.cli.OutputFile.create(output, inputs)) {
            int status = dumpTo(f.stream());
            if (status == 0) {
                f.commit(); // a damaged trace (exit 2) leaves an existing file as it was, as every failure does
            }
            return status;
        }
    }

    private int dumpTo(OutputStream stream) {
        TextSink out = new TextSink(stream, 1 << 17);
        Errata errata = Errata.NONE;
        if (cpu != null && !cpu.equals("none")) {
            Errata.Cpu c = Errata.Cpu.parse(cpu);
            try {
                errata = Errata.of(c);
            } catch (Errata.UnknownCpuException e) {
                if (format == Format.ptdump) {
                    out.str("[0: failed to determine errata: unknown cpu]").nl();
                }
            }
        }
        TimingConfig timing = new TimingConfig(
                (int) number("--mtc-freq", mtcFreq, 0xff),
                (int) number("--nom-freq", nomFreq, 0xff),
                (int) number("--cpuid-0x15.eax", cpuid15Eax, 0xffffffffL),
                (int) number("--cpuid-0x15.ebx", cpuid15Ebx, 0xffffffffL),
                errata.skl168());
        PeventDump sidebandDump = null;
        if (!sideband.files.isEmpty()) {
            sidebandDump = new PeventDump(sideband.sbFlags, sideband.sbWarn);
            for (SidebandOptions.File f : sideband.files) {
                sidebandDump.add(f.spec(), f.channel().format());
            }
        }
        byte[] piped = null;
        if (trace.equals("-")) {
            // stdin holds a raw trace or a pipe-mode recording: the first bytes tell which
            try {
                piped = stdin.readAllBytes();
            } catch (java.io.IOException e) {
                throw new BadInputException("stdin: cannot read (" + e.getMessage() + ")");
            }
        }
        if (piped != null ? RecordingPackets.isPerfMagic(piped) : RecordingPackets.isRecording(trace)) {
            // a perf.data: its AUX buffers one by one; CPU and timing from the recording unless given here
            boolean timingGiven = mtcFreq != null || nomFreq != null || cpuid15Eax != null || cpuid15Ebx != null;
            PeventDump sb = sidebandDump;
            try {
                return RecordingPackets.dump(trace, piped != null ? new java.io.ByteArrayInputStream(piped) : stdin,
                        format == Format.jsonl, quiet,
                        cpu != null ? errata : null, timingGiven ? timing : null,
                        (cursor, sink, e, t) -> dump(cursor, sink, e, t, sb), out, stderr);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        try (TraceSource source = piped != null ? TraceSource.of(piped, "stdin") : TraceSource.parse(trace)) {
            rejectPerfData(source);
            PacketCursor cursor = new PacketCursor(source, errata);
            DecodeSummary summary;
            try (ptfence.cli.Progress prog = ptfence.cli.Progress.start(new java.io.PrintWriter(stderr, true),
                    "ptdecode packets", ptfence.cli.Progress.wanted(progress))) {
                prog.phase("bytes of trace", source.size());
                prog.follow(cursor::position);
                summary = dump(cursor, out, errata, timing, sidebandDump);
                prog.done();
            }
            out.flush();
            String damage = summary.describe(source.name());
            if (damage != null) {
                stderr.println("ptdecode: " + damage);
                return ptfence.cli.Tool.EXIT_BAD_INPUT;
            }
            if (summary.packets() == 0 && source.size() > 0 && !noSync) {
                // ptdump prints nothing here; an empty listing would read as a trace without packets
                stderr.println("ptdecode: " + source.name() + ": no PSB in its " + source.size() + " bytes: not an "
                        + "Intel PT trace (--no-sync decodes from the first byte)");
                return ptfence.cli.Tool.EXIT_BAD_INPUT;
            }
            return 0;
        }
    }

    /** One trace (or one AUX buffer of a recording) in the chosen format. */
    private DecodeSummary dump(PacketCursor cursor, TextSink out, Errata errata, TimingConfig timing,
            PeventDump sideband) {
        if (format == Format.jsonl) {
            return new JsonlPacketPrinter(out, noSync, quiet).dump(cursor);
        }
        PtdumpOptions opt = new PtdumpOptions(!noOffset, raw, lastIp, execMode, time || tcal || sideband != null, time, tcal,
                timeDelta, keepTcalOnOvf, quiet, noPad, noSync, noTcal, noWallClock, noTiming, noCyc,
                errata, timing);
        return new PtdumpPrinter(opt, out, sideband).dump(cursor);
    }

    /** The file an argument names, with and without a ":from-to" range after it. */
    static java.util.List<java.nio.file.Path> inputPaths(String arg) {
        int colon = arg.indexOf(':');
        return colon > 0 ? java.util.List.of(java.nio.file.Path.of(arg), java.nio.file.Path.of(arg.substring(0, colon)))
                : java.util.List.of(java.nio.file.Path.of(arg));
    }

    /** perf.data recordings are read by the perf.data reader; raw traces are what this layer prints. */
    private static void rejectPerfData(TraceSource source) {
        if (source.size() >= 8 && source.fileOffset() == 0) {
            ByteBuffer w = source.window(0);
            if (w.getLong(0) == 0x32454c4946524550L) { // "PERFILE2"
                throw new BadInputException(source.name() + " is a perf.data recording, not a raw Intel PT trace");
            }
        }
    }

    /** ptdump's strtoull(arg, 0) with a range check. */
    static long number(String option, String value, long max) {
        if (value == null) {
            return 0;
        }
        long v;
        try {
            v = TraceSource.parseCInteger(value);
        } catch (NumberFormatException e) {
            throw new BadInputException(option + ": bad argument: " + value);
        }
        if (Long.compareUnsigned(v, max) > 0) {
            throw new BadInputException(option + ": value too big: " + value);
        }
        return v;
    }
}

package ptfence.ptdecode;

import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import ptfence.cli.BadInputException;
import ptfence.flow.CursorInput;
import ptfence.flow.FlowConfig;
import ptfence.packet.Errata;
import ptfence.flow.FlowDecoder;
import ptfence.flow.FlowSink;
import ptfence.flow.PacketInput;
import ptfence.flow.ParallelFlow;
import ptfence.image.CodeSpace;
import ptfence.image.ElfSegments;
import ptfence.image.FileRange;
import ptfence.image.Image;
import ptfence.image.Numbers;
import ptfence.image.RawSection;
import ptfence.image.Symbols;
import ptfence.cli.OutputFile;
import ptfence.coverage.EdgeCoverage;
import ptfence.output.CountingSink;
import ptfence.output.JsonlPrinter;
import ptfence.output.PtxedPrinter;
import ptfence.output.TextPrinter;
import ptfence.sideband.PeventSession;
import ptfence.sideband.SidebandSink;

/** {@code ptdecode flow}: rebuild the executed instructions, with ptxed's options. */
@Command(name = "flow", mixinStandardHelpOptions = true,
        description = "Rebuild the control flow of a raw Intel PT trace from the code image (ptxed's options).",
        footer = {"", "Examples:",
            "  ptdecode flow --raw code.bin:0x400000 --pt trace.pt",
            "  ptdecode flow --elf ./a.out --cpu 6/85/4 --block-decoder --pt aux.bin",
            "  ptdecode flow --raw bench.bin:0x400000 --pt bench-tnt.pt --quiet --stat",
            "  ptdecode flow --pt cpu0.pt --pevent:sample-type 0x10086 --pevent:time-zero 0x1f --pevent:time-shift 10 \\",
            "      --pevent:time-mult 0x22f --pevent:kernel-start 0xffffffff80000000 --pevent:sysroot /mnt/target \\",
            "      --pevent:primary cpu0.sb --pevent:secondary cpu1.sb --sb:compact --sb:switch"},
        modelTransformer = FlowCommand.Parsing.class)
public final class FlowCommand implements Callable<Integer> {
    /** ptxed's parsing (repeated options: the last wins) and its --filter:addr<n>_* options. */
    public static final class Parsing implements picocli.CommandLine.IModelTransformer {
        @Override
        public picocli.CommandLine.Model.CommandSpec transform(picocli.CommandLine.Model.CommandSpec spec) {
            new PacketsCommand.PtdumpStyleParsing().transform(spec);
            if (spec.userObject() instanceof FlowCommand c) {
                AddrFilterOptions.addTo(spec, c.addrFilter);
            }
            return spec;
        }
    }

    /** Replaces the packet layer's cursor (tests); null: use {@link CursorInput} with the CPU's errata. */
    static Function<ByteBuffer, PacketInput> packetSourceOverride;

    @Option(names = "--pt", required = true, paramLabel = "FILE[:from[-to]]", description = "The trace (a raw PT byte stream).")
    String pt;
    @Option(names = "--raw", paramLabel = "FILE[:from[-to]]:ADDR", description = "Load a file range at ADDR.")
    List<String> raw = new ArrayList<>();
    @Option(names = "--elf", paramLabel = "FILE[:BASE]", description = "Load an ELF's executable segments (moved to BASE).")
    List<String> elf = new ArrayList<>();
    @Option(names = "--cpu", paramLabel = "F/M[/S]", description = "The CPU the trace was recorded on (selects errata workarounds).")
    String cpu;
    private boolean blockDecoder;

    // ptxed's --insn-decoder / --block-decoder may repeat, the last one wins: picocli calls setters in order
    @Option(names = "--insn-decoder", description = "The instruction-flow decoder (default).")
    void insnDecoder(boolean on) {
        blockDecoder = false;
    }

    @Option(names = "--block-decoder", description = "The block decoder (same flow; libipt's pt_blk_next).")
    void blockDecoder(boolean on) {
        blockDecoder = true;
    }

    /** ptxed's sideband options: --sb:* (printing) and --pevent:* (perf_event files that build process images). */
    @picocli.CommandLine.Mixin
    SidebandOptions sideband = new SidebandOptions();
    @Option(names = "--sb:switch", description = "Print the new image's name ([context: pid-N]) when the sideband switches process.")
    boolean sbSwitch;

    /** Where relative file names are looked up (the working directory; tests point it at a corpus case). */
    private Path directory = Path.of("");

    /** Looks relative file names up in {@code dir} instead of the working directory. */
    public FlowCommand inDirectory(Path dir) {
        directory = dir;
        return this;
    }

    private String at(String spec) {
        return directory.resolve(spec).toString();
    }

    @Option(names = "--check", description = "Accepted for ptxed compatibility.")
    boolean check;
    @Option(names = "--no-inst", description = "Print addresses only (the ptxed format always does).")
    boolean noInst;
    @Option(names = "--quiet", description = "Print nothing but errors and statistics.")
    boolean quiet;
    @Option(names = "--stat", description = "Print statistics at the end.")
    boolean stat;
    @Option(names = "--stat:insn", description = "Print the instruction count.")
    boolean statInsn;
    @Option(names = "--stat:blocks", description = "Print the block count.")
    boolean statBlocks;
    @Option(names = "--time", description = "Print the trace time (TSC estimate of the last event) with each instruction "
            + "(text and ptxed: a column before it; jsonl: \"tsc\").")
    boolean time;
    @Option(names = "--event:time", description = "Print the TSC of events.")
    boolean eventTime;
    @Option(names = "--event:ip", description = "Print the IP of events.")
    boolean eventIp;
    @Option(names = "--event:tick", description = "Request tick events.")
    boolean eventTick;
    @Option(names = "--event:iflags", description = "Request interrupt-flag events.")
    boolean eventIflags;
    @Option(names = "--resync-on-error", description = "Resynchronize after errors (default: at the next PSB).")
    boolean resyncOnError;
    @Option(names = "--resync-at-ip", description = "After an error continue at the next packet with a full IP "
            + "(perf's recovery; the default for recordings).")
    boolean resyncAtIp;
    @Option(names = "--block:show-blocks", description = "Mark block boundaries.")
    boolean showBlocks;
    @Option(names = "--block:end-on-call", description = "End blocks at calls.")
    boolean endOnCall;
    @Option(names = "--block:end-on-jump", description = "End blocks at jumps.")
    boolean endOnJump;
    @Option(names = "--insn:keep-tcal-on-ovf", description = "Keep timing calibration across overflows.")
    boolean keepTcal;
    @Option(names = "--block:keep-tcal-on-ovf", description = "Same as --insn:keep-tcal-on-ovf (the decoders share one state machine).")
    boolean keepTcalBlock;
    @Option(names = "--mtc-freq", paramLabel = "N", description = "MTC frequency (IA32_RTIT_CTL.MTCFreq).")
    String mtcFreq;
    @Option(names = "--nom-freq", paramLabel = "N", description = "Nominal frequency (max non-turbo ratio).")
    String nomFreq;
    @Option(names = "--cpuid-0x15.eax", paramLabel = "N", description = "CPUID leaf 0x15 EAX (TSC:crystal denominator).")
    String cpuid15Eax;
    @Option(names = "--cpuid-0x15.ebx", paramLabel = "N", description = "CPUID leaf 0x15 EBX (TSC:crystal numerator).")
    String cpuid15Ebx;
    /** --filter:addr<n>_* (added to the model by {@link Parsing}). */
    final AddrFilterOptions addrFilter = new AddrFilterOptions();
    @Option(names = "--offset", description = "Print the trace offset with each instruction and event (ptxed).")
    boolean offset;
    @Option(names = "--raw-insn", description = "Print each instruction's bytes (--format text; the ptxed format, "
            + "ptxed's --no-inst, prints addresses only).")
    boolean rawInsn;
    @Option(names = "--att", description = "Disassemble in AT&T syntax (--format text).")
    boolean att;
    @Option(names = "--threads", paramLabel = "N",
            description = "Decode PSB segments on N threads and stitch them in order (0: one per core). Default: one "
                    + "per core (times included: each segment starts with the clock and calibration the trace before "
                    + "it set), but one with --pevent or --offset.")
    Integer threads;
    @Option(names = "--segment-bytes", hidden = true, paramLabel = "N",
            description = "With --threads: bytes of trace per segment (default quiet or with --edges/--coverage: the trace "
                    + "over 4 x threads, within 1..8 MiB; 32 KiB otherwise: a segment's text should fit the 1M chars a "
                    + "segment decoded ahead may hold).")
    Long segmentBytes;
    @Option(names = "--stat:work", hidden = true, description = "Print the decode's work on stderr: segments, segments "
            + "decoded again, memo lookups and misses, blocks built, instruction decodes (profiling).")
    boolean statWork;
    @Option(names = "--skip-timing", hidden = true, defaultValue = "auto", paramLabel = "auto|on|off",
            description = "Pass over MTC/CYC without computing time: auto (when no time is printed), on, off (tests).")
    String skipTiming;
    @Option(names = "--format", defaultValue = "ptxed", paramLabel = "ptxed|text|jsonl",
            description = "Output: ptxed (addresses and bracketed events), text, jsonl.")
    String format;

    @Option(names = "--edges", description = "Print the flow's edges (branch -> next instruction) with their counts "
            + "instead of the instructions: \"FROM TO COUNT\" lines, or jsonl objects with --format jsonl.")
    boolean edges;
    @Option(names = "--coverage", paramLabel = "FILE", description = "Write the flow's edges as an AFL-style "
            + "64 KiB bitmap to FILE (docs/flow.md gives the hash); prints no instructions.")
    java.nio.file.Path coverage;

    @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "Write to FILE instead of stdout.")
    java.nio.file.Path output;

    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal; a decode on one thread).")
    Boolean progress;

    @Override
    public Integer call() throws java.io.IOException {
        List<Path> inputs = new ArrayList<>();
        List<String> specs = new ArrayList<>(raw);
        specs.addAll(elf);
        specs.addAll(sideband.kcore);
        sideband.files.forEach(f -> specs.add(f.spec()));
        if (pt != null) {
            specs.add(pt);
        }
        specs.forEach(x -> inputs.addAll(PacketsCommand.inputPaths(at(x))));
        try (ptfence.cli.CommandOutput co = ptfence.cli.CommandOutput.open(output, stdout, inputs)) {
            decode(co.writer());
            co.commit();
        }
        return 0;
    }

    /** Where output goes without -o (tests replace it). */
    java.io.OutputStream stdout = ptfence.cli.Stdout.stream();

    /** Runs the decode and writes everything to {@code out} (tests call this directly). */
    public void decode(PrintWriter out) {
        FlowConfig cfg = new FlowConfig();
        if (cpu != null && !cfg.setCpu(cpu)) {
            out.append("[0, 0: config error: unknown cpu]\n");
        }
        cfg.iflagsEvents = eventIflags;
        cfg.tickEvents = eventTick;
        cfg.keepTcalOnOvf = keepTcal || keepTcalBlock;
        cfg.endOnCall = endOnCall;
        cfg.endOnJump = endOnJump;
        cfg.resyncOnError = resyncOnError;
        cfg.resyncAtIp = resyncAtIp;
        cfg.mtcFreq = mtcFreq == null ? 0 : (int) Numbers.parse(mtcFreq, "--mtc-freq");
        cfg.nomFreq = nomFreq == null ? 0 : (int) Numbers.parse(nomFreq, "--nom-freq");
        cfg.cpuid15Eax = cpuid15Eax == null ? 0 : (int) Numbers.parse(cpuid15Eax, "--cpuid-0x15.eax");
        cfg.cpuid15Ebx = cpuid15Ebx == null ? 0 : (int) Numbers.parse(cpuid15Ebx, "--cpuid-0x15.ebx");
        addrFilter.applyTo(cfg.addrFilter);

        Image image = new Image();
        raw.forEach(r -> image.addAll(RawSection.parse(at(r))));
        Symbols symbols = new Symbols();
        for (String e : elf) {
            ElfSegments segments = ElfSegments.parse(at(e));
            image.addAll(segments);
            if (format.equals("text")) {
                symbols.addElf(segments);
            }
        }

        Errata cursorErrata = cfg.errata;
        boolean skip = switch (skipTiming) {
            case "on" -> true;
            case "off" -> false;
            case "auto" -> timeUnused() && cfg.timingSkippable() && sideband.files.isEmpty();
            default -> throw new BadInputException("--skip-timing " + skipTiming + ": expected auto, on or off");
        };
        Function<ByteBuffer, PacketInput> packetSource = packetSourceOverride != null ? packetSourceOverride
                : b -> CursorInput.of(b, cursorErrata).skipTiming(skip);
        PeventSession session = null;
        if (!sideband.files.isEmpty()) {
            session = new PeventSession(image, sideband.sbFlags, sideband.sbWarn, sbSwitch, directory);
            for (String k : sideband.kcore) {
                session.kernel().addAll(ElfSegments.parse(at(k)));
            }
            for (SidebandOptions.File f : sideband.files) {
                session.add(f.spec(), f.channel());
            }
        }
        CodeSpace space = session != null ? session : image;
        ByteBuffer trace = mapTrace(at(pt));
        boolean coverageOnly = edges || coverage != null;
        boolean blocks = isBlockDecoder() && !coverageOnly;
        if (!List.of("ptxed", "text", "jsonl").contains(format)) {
            throw new BadInputException("--format " + format + ": expected ptxed, text or jsonl");
        }
        FlowDecoder[] decoding = new FlowDecoder[1]; // what --offset asks for its offset (one decoder: sequential)
        java.util.function.LongSupplier offsets = offset ? () -> decoding[0] == null ? 0 : decoding[0].offset() : null;
        EdgeCoverage edgeSink = coverageOnly ? new EdgeCoverage(out, edges, coverage != null) : null;
        Function<PrintWriter, FlowSink> sinks = w -> edgeSink != null ? edgeSink : quiet ? new CountingSink(w) : switch (format) {
            case "ptxed" -> new PtxedPrinter(w, eventIp, eventTime).showBlocks(showBlocks && blocks).timeColumn(time)
                    .offsetColumn(offsets);
            case "text" -> new TextPrinter(w, space, symbols, eventIp, eventTime).timeColumn(time)
                    .offsetColumn(offsets).rawInsn(rawInsn).att(att).showBlocks(showBlocks && blocks);
            default -> new JsonlPrinter(w).time(time);
        };
        int cores = Runtime.getRuntime().availableProcessors();
        if (threads != null && threads < 0) {
            throw new BadInputException("--threads " + threads + ": expected a count of threads (0: one per core)");
        }
        boolean threadsGiven = threads != null && threads > 0;
        int nThreads = offset ? 1 : threadsGiven ? threads : cores;
        long segment = segmentBytes != null ? segmentBytes
                : quiet || coverageOnly ? countingSegment(trace.remaining(), nThreads) : 32L << 10;
        long blocksBuilt = ptfence.insn.CodeCache.BLOCK_MISSES.sum();
        long insnDecodes = ptfence.insn.CodeCache.DECODE_MISSES.sum();
        String work;
        long instructions;
        long blockCount;
        // (Sideband state follows the trace's events in order, so with --pevent the decode is sequential.)
        if (nThreads > 1 && session == null && (threadsGiven || trace.remaining() > 2 * segment)) {
            ParallelFlow par = new ParallelFlow(image, cfg, packetSource, blocks, nThreads, segment)
                    .carrySeams(!(quiet || coverageOnly) || !timeUnused());
            if (edgeSink != null) {
                // each segment counts its own edges; merged in trace order with the edge across each seam
                sinks = w -> new EdgeCoverage.Segment(w, edges, coverage != null);
                par.onSegmentDone(s -> edgeSink.append((EdgeCoverage.Segment) s));
            }
            try {
                par.run(trace, out, sinks);
            } catch (Exception e) {
                throw new IllegalStateException("parallel decode failed: " + e, e);
            }
            instructions = par.instructions;
            blockCount = par.blocks;
            work = "segments " + par.segments() + " (" + par.redone() + " decoded again), memo lookups " + par.memoLookups
                    + ", misses " + par.memoMisses;
        } else {
            FlowSink sink = sinks.apply(out);
            SidebandSink withSideband = null;
            if (session != null) {
                withSideband = new SidebandSink(sink, session, out, format.equals("jsonl"));
                withSideband.start();
                sink = withSideband;
            }
            FlowDecoder decoder = new FlowDecoder(space, cfg, packetSource.apply(trace), sink, blocks);
            decoding[0] = decoder;
            if (withSideband != null) {
                withSideband.onCodeChange(decoder::codeChanged);
            }
            try (ptfence.cli.Progress prog = ptfence.cli.Progress.start(new PrintWriter(System.err, true),
                    "ptdecode flow", ptfence.cli.Progress.wanted(progress))) {
                prog.phase("bytes of trace", trace.remaining());
                prog.follow(decoder::offset);
                decoder.run();
                prog.done();
            }
            instructions = decoder.instructions;
            blockCount = decoder.blocks;
            work = "segments 1, memo lookups " + decoder.tntPaths().lookups + ", misses " + decoder.tntPaths().misses;
        }
        if (statWork) {
            System.err.println("work: " + work + ", blocks built " + (ptfence.insn.CodeCache.BLOCK_MISSES.sum()
                    - blocksBuilt) + ", instruction decodes " + (ptfence.insn.CodeCache.DECODE_MISSES.sum() - insnDecodes));
        }
        if (edgeSink != null) {
            if (edges && !quiet) {
                edgeSink.print(out, format.equals("jsonl"));
            }
            if (coverage != null) {
                writeBitmap(edgeSink.bitmap());
            }
        }
        boolean anyStat = stat || statInsn || statBlocks;
        if (anyStat) {
            boolean showInsn = statInsn || (!statInsn && !statBlocks);
            boolean showBlocks = statBlocks || (!statInsn && !statBlocks && blocks);
            if (showInsn) {
                out.append("insn: ").append(Long.toString(instructions)).append(".\n");
            }
            if (showBlocks) {
                out.append("blocks:\t").append(Long.toString(blockCount)).append(".\n");
            }
        }
    }

    /**
     * Bytes per segment when counting or collecting edges: at least 4 segments per thread, so that threads that finish
     * early find more work (8 MiB segments left 13 for 16 threads on a 100 MB trace), but at least 1 MiB (a segment's
     * fixed costs: its decoder, the guess of its modes from the 64 KiB before it) and at most 8 MiB.
     */
    static long countingSegment(long traceBytes, int threads) {
        return Math.max(1L << 20, Math.min(8L << 20, traceBytes / (4L * threads)));
    }

    private void writeBitmap(byte[] bitmap) {
        try (OutputFile f = OutputFile.create(coverage, Path.of(FileRange.parse(at(pt), "--pt").file().toString()))) {
            f.stream().write(bitmap);
            f.commit();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * True if nothing this decode prints or decides depends on the trace's time: no time column, no event times
     * (jsonl gives every event its time), no tick events; the code space is not chosen by time (checked by the
     * caller for sideband; raw and ELF images are not timed).
     */
    private boolean timeUnused() {
        return !time && !eventTime && !eventTick && (quiet || edges || coverage != null || !format.equals("jsonl"));
    }

    private boolean isBlockDecoder() {
        return blockDecoder;
    }

    /** The trace bytes, memory-mapped (a 100 MB trace costs no heap). */
    private static ByteBuffer mapTrace(String spec) {
        FileRange r = FileRange.parse(spec, "--pt");
        if (java.nio.file.Files.isDirectory(r.file())) {
            throw new BadInputException("--pt " + spec + ": is a directory, not an Intel PT trace");
        }
        try (FileChannel ch = FileChannel.open(r.file(), StandardOpenOption.READ)) {
            long size = ch.size();
            long to = r.to() < 0 ? size : Math.min(r.to(), size);
            if (r.from() > to) {
                throw new BadInputException("--pt " + spec + ": range outside the file (" + size + " bytes)");
            }
            if (to - r.from() > Integer.MAX_VALUE) {
                throw new BadInputException("--pt " + spec + ": traces over 2 GiB must be split with FILE:from-to");
            }
            return ch.map(FileChannel.MapMode.READ_ONLY, r.from(), to - r.from());
        } catch (java.nio.file.FileSystemException e) {
            throw new UncheckedIOException(e); // no such file, permission: Tool names the file
        } catch (IOException e) {
            throw new BadInputException("--pt " + spec + ": cannot read: " + e.getMessage());
        }
    }
}

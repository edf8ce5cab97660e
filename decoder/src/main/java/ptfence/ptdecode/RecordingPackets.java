package ptfence.ptdecode;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import ptfence.cli.BadInputException;
import ptfence.cli.Tool;
import ptfence.output.DecodeSummary;
import ptfence.output.TextSink;
import ptfence.packet.Errata;
import ptfence.packet.PacketCursor;
import ptfence.packet.TraceSource;
import ptfence.perfdata.AttrIds;
import ptfence.perfdata.AuxBuffer;
import ptfence.perfdata.AuxRuns;
import ptfence.perfdata.IntelPtInfo;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;
import ptfence.timing.TimingConfig;

/**
 * The packets of a perf.data recording (file or pipe mode), one AUX buffer at a time in file order, each preceded
 * by a line naming it; consecutive buffers that continue one CPU's trace are decoded together, so packets that
 * straddle them decode. A damaged recording still prints every buffer before the damage. Unless given on the command line, the CPU (errata) and the timing parameters come
 * from the recording: CPUID feature, intel_pt AUXTRACE_INFO and the intel_pt attr's config.
 */
final class RecordingPackets {
    /** The printer for one buffer, as configured by the packets command. */
    interface BufferDump {
        DecodeSummary dump(PacketCursor cursor, TextSink out, Errata errata, TimingConfig timing);
    }

    private RecordingPackets() {}

    /** True for "-" (a recording on stdin, e.g. from {@code perf record -o -}) and for a file with the perf.data magic. */
    static boolean isRecording(String arg) {
        if (arg.equals("-")) {
            return true;
        }
        Path p = Path.of(arg);
        return Files.isRegularFile(p) && PerfDataFile.isPerfData(p);
    }

    /** Whether these bytes start like a perf.data (file or pipe mode, either byte order). */
    static boolean isPerfMagic(byte[] head) {
        if (head.length < 8) {
            return false;
        }
        String m = new String(head, 0, 8, java.nio.charset.StandardCharsets.ISO_8859_1);
        return m.equals("PERFILE2") || m.equals("2ELIFREP");
    }

    static int dump(String name, java.io.InputStream stdin, boolean jsonl, boolean quiet, Errata errata,
            TimingConfig given, BufferDump printer, TextSink out, PrintStream err) throws IOException {
        try (PerfDataFile f = name.equals("-") ? PerfDataFile.read(stdin, "stdin") : PerfDataFile.open(Path.of(name))) {
            String featureDamage = null;
            try {
                f.features();
            } catch (BadInputException ex) {
                featureDamage = ex.getMessage(); // the packets are still worth printing; reported at the end
            }
            Errata e = errata != null ? errata : errataOf(f);
            Dumper d = new Dumper(f.path(), jsonl, quiet, printer, out, err, e, given, f);
            PerfDataFile.RecordReader r = f.records();
            BadInputException damage = null;
            try {
                while (r.hasNext()) {
                    PerfRecord rec = r.next();
                    if (rec instanceof PerfRecord.AuxtraceInfo a) {
                        d.info(a);
                    } else if (rec instanceof PerfRecord.Auxtrace a) {
                        d.add(new AuxBuffer(r.payloadOffset(), a.size(), a.offset(), a.reference(), a.idx(), a.tid(),
                                a.cpu(), a.data()));
                    }
                }
            } catch (BadInputException ex) {
                damage = ex;
            } finally {
                d.finish();
                out.flush();
            }
            if (damage != null) {
                throw damage; // after every buffer before it was printed
            }
            if (d.buffers == 0 && RecordingDecode.sidebandOnly(f)) {
                throw new BadInputException(RecordingDecode.sidebandOnlyMessage(name.equals("-") ? "stdin" : name));
            }
            if (featureDamage != null) {
                err.println("ptdecode: " + featureDamage);
                return Tool.EXIT_BAD_INPUT;
            }
            return d.damaged == 0 ? Tool.EXIT_OK : Tool.EXIT_BAD_INPUT;
        }
    }

    /**
     * Dumps buffers as runs: consecutive buffers of one mmap index whose AUX offsets join up (full-trace mode drains
     * the ring in pieces, and a packet may straddle two of them) are decoded as one stream; a snapshot, a gap or
     * another CPU/thread starts a new run.
     */
    private static final class Dumper {
        private final Path path;
        private final boolean jsonl;
        private final boolean quiet;
        private final BufferDump printer;
        private final TextSink out;
        private final PrintStream err;
        private final Errata errata;
        private final TimingConfig given;
        private final PerfDataFile file;
        private final Map<Integer, List<AuxBuffer>> pending = new LinkedHashMap<>();
        private PerfRecord.AuxtraceInfo info;
        private boolean snapshot;
        int damaged;
        long buffers;

        Dumper(Path path, boolean jsonl, boolean quiet, BufferDump printer, TextSink out, PrintStream err,
                Errata errata, TimingConfig given, PerfDataFile file) {
            this.path = path;
            this.jsonl = jsonl;
            this.quiet = quiet;
            this.printer = printer;
            this.out = out;
            this.err = err;
            this.errata = errata;
            this.given = given;
            this.file = file;
        }

        void info(PerfRecord.AuxtraceInfo a) {
            info = a;
            try {
                snapshot = a.auxType() == PerfRecord.AuxtraceInfo.TYPE_INTEL_PT && IntelPtInfo.of(a).snapshotMode();
            } catch (BadInputException ex) {
                snapshot = true; // unknown layout: do not join
            }
        }

        void add(AuxBuffer b) {
            buffers++;
            List<AuxBuffer> run = pending.get(b.idx());
            if (run != null) {
                AuxBuffer last = run.get(run.size() - 1);
                long total = run.stream().mapToLong(AuxBuffer::size).sum();
                if (AuxRuns.continues(last, b, snapshot, total)) {
                    run.set(run.size() - 1, AuxRuns.trimFor(last, b));
                    run.add(b);
                    return;
                }
                dump(run);
            }
            List<AuxBuffer> fresh = new ArrayList<>();
            fresh.add(b);
            pending.put(b.idx(), fresh);
        }

        void finish() {
            List<List<AuxBuffer>> runs = new ArrayList<>(pending.values());
            runs.sort(java.util.Comparator.comparingLong(run -> run.get(0).fileOffset()));
            pending.clear();
            for (List<AuxBuffer> run : runs) {
                dump(run);
            }
        }

        private void dump(List<AuxBuffer> run) {
            AuxBuffer first = run.get(0);
            if (!quiet) {
                header(run, jsonl, out);
            }
            java.nio.ByteBuffer data = AuxRuns.bytes(run);
            TimingConfig timing = given != null ? given : timingOf(file, info, errata);
            DecodeSummary s = printer.dump(new PacketCursor(TraceSource.of(data), errata), out, errata, timing);
            String damage = s.describe(path + " AUX buffer idx " + first.idx() + " at file offset 0x"
                    + Long.toHexString(first.fileOffset()));
            if (damage != null) {
                out.flush();
                err.println("ptdecode: " + damage);
                damaged++;
            }
        }
    }

    private static void header(List<AuxBuffer> run, boolean jsonl, TextSink out) {
        AuxBuffer b = run.get(0);
        long size = run.stream().mapToLong(AuxBuffer::size).sum();
        if (jsonl) {
            out.str("{\"type\":\"aux_buffer\",\"idx\":").dec(b.idx()).str(",\"cpu\":").dec(b.cpu())
                    .str(",\"tid\":").dec(b.tid()).str(",\"offset\":").dec(b.offset()).str(",\"size\":").dec(size)
                    .str(",\"file_offset\":").dec(b.fileOffset());
            if (run.size() > 1) {
                out.str(",\"buffers\":[");
                for (int i = 0; i < run.size(); i++) {
                    out.str(i == 0 ? "" : ",").str("{\"file_offset\":").dec(run.get(i).fileOffset()).str(",\"size\":")
                            .dec(run.get(i).size()).str("}");
                }
                out.str("]");
            }
            out.str("}").nl();
        } else {
            out.str("# AUX buffer idx ").dec(b.idx()).str(" cpu ").dec(b.cpu()).str(" tid ").dec(b.tid())
                    .str(" offset 0x").hex(b.offset()).str(" size 0x").hex(size).str(" file offset 0x")
                    .hex(b.fileOffset());
            if (run.size() > 1) {
                out.str(" (").dec(run.size()).str(" contiguous buffers, continued at file offsets");
                for (int i = 1; i < run.size(); i++) {
                    out.str(i == 1 ? " 0x" : ", 0x").hex(run.get(i).fileOffset());
                }
                out.str(")");
            }
            out.nl();
        }
    }

    /** Errata for the recording's CPU ("GenuineIntel,6,94,3" in the CPUID feature); none if unknown. */
    static Errata errataOf(PerfDataFile f) {
        Optional<String> cpuid = Optional.empty();
        try {
            cpuid = f.features().cpuId();
        } catch (BadInputException e) {
            return Errata.NONE; // damaged features: the records below still get dumped
        }
        if (cpuid.isEmpty()) {
            return Errata.NONE;
        }
        String[] p = cpuid.get().split(",");
        if (p.length < 4 || !p[0].equals("GenuineIntel")) {
            return Errata.NONE;
        }
        try {
            return Errata.of(Errata.Cpu.parse(p[1] + "/" + p[2] + "/" + p[3]));
        } catch (RuntimeException e) {
            return Errata.NONE;
        }
    }

    /** mtc freq, nominal ratio and the CPUID 0x15 TSC:CTC ratio as perf recorded them. */
    static TimingConfig timingOf(PerfDataFile f, PerfRecord.AuxtraceInfo info, Errata errata) {
        if (info == null || info.auxType() != PerfRecord.AuxtraceInfo.TYPE_INTEL_PT) {
            return new TimingConfig(0, 0, 0, 0, errata.skl168());
        }
        IntelPtInfo pt;
        try {
            pt = IntelPtInfo.of(info);
        } catch (BadInputException e) {
            return new TimingConfig(0, 0, 0, 0, errata.skl168());
        }
        int mtcFreq = 0;
        for (AttrIds a : f.attrs()) {
            if (a.attr().type() == pt.pmuType() && pt.mtcFreqBits() != 0) {
                mtcFreq = (int) ((a.attr().config() & pt.mtcFreqBits()) >>> Long.numberOfTrailingZeros(pt.mtcFreqBits()));
                break;
            }
        }
        return new TimingConfig(mtcFreq, (int) pt.maxNonTurboRatio(), (int) pt.tscCtcRatioD(), (int) pt.tscCtcRatioN(),
                errata.skl168());
    }
}

package ptfence.ptdecode;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
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
import ptfence.perfdata.IntelPtInfo;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;
import ptfence.timing.TimingConfig;

/**
 * The packets of a perf.data recording (file or pipe mode), one AUX buffer at a time in file order, each preceded
 * by a line naming it. Buffers are dumped as their records are read, so a damaged recording still prints every
 * buffer before the damage. Unless given on the command line, the CPU (errata) and the timing parameters come
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

    static int dump(String name, java.io.InputStream stdin, boolean jsonl, boolean quiet, Errata errata, TimingConfig given, BufferDump printer, TextSink out,
            PrintStream err) throws IOException {
        int damaged = 0;
        try (PerfDataFile f = name.equals("-") ? PerfDataFile.read(stdin, "stdin") : PerfDataFile.open(Path.of(name))) {
            Path path = f.path();
            String featureDamage = null;
            try {
                f.features();
            } catch (BadInputException ex) {
                featureDamage = ex.getMessage(); // the packets are still worth printing; reported at the end
            }
            Errata e = errata != null ? errata : errataOf(f);
            PerfDataFile.RecordReader r = f.records();
            PerfRecord.AuxtraceInfo info = null;
            try {
                while (r.hasNext()) {
                    PerfRecord rec = r.next();
                    if (rec instanceof PerfRecord.AuxtraceInfo a) {
                        info = a;
                    } else if (rec instanceof PerfRecord.Auxtrace a) {
                        AuxBuffer b = new AuxBuffer(r.payloadOffset(), a.size(), a.offset(), a.reference(), a.idx(),
                                a.tid(), a.cpu(), a.data());
                        if (!quiet) {
                            header(b, jsonl, out);
                        }
                        TimingConfig timing = given != null ? given : timingOf(f, info, e);
                        PacketCursor cursor = new PacketCursor(TraceSource.of(b.data()), e);
                        DecodeSummary s = printer.dump(cursor, out, e, timing);
                        String damage = s.describe(path + " AUX buffer idx " + b.idx() + " at file offset 0x"
                                + Long.toHexString(b.fileOffset()));
                        if (damage != null) {
                            out.flush();
                            err.println("ptdecode: " + damage);
                            damaged++;
                        }
                    }
                }
            } finally {
                out.flush();
            }
            if (featureDamage != null) {
                err.println("ptdecode: " + featureDamage);
                damaged++;
            }
        }
        return damaged == 0 ? Tool.EXIT_OK : Tool.EXIT_BAD_INPUT;
    }

    private static void header(AuxBuffer b, boolean jsonl, TextSink out) {
        if (jsonl) {
            out.str("{\"type\":\"aux_buffer\",\"idx\":").dec(b.idx()).str(",\"cpu\":").dec(b.cpu())
                    .str(",\"tid\":").dec(b.tid()).str(",\"offset\":").dec(b.offset()).str(",\"size\":").dec(b.size())
                    .str(",\"file_offset\":").dec(b.fileOffset()).str("}").nl();
        } else {
            out.str("# AUX buffer idx ").dec(b.idx()).str(" cpu ").dec(b.cpu()).str(" tid ").dec(b.tid())
                    .str(" offset 0x").hex(b.offset()).str(" size 0x").hex(b.size()).str(" file offset 0x")
                    .hex(b.fileOffset()).nl();
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

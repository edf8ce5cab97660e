package ptfence.perfdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Real perf (6.1 here) reads what the writer writes, and counts the same records. */
class PerfToolTest {
    @TempDir
    Path dir;

    record Run(int exit, String out, String err) {}

    static Run perf(Path cwd, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add("perf");
        cmd.addAll(List.of(args));
        Process p;
        try {
            p = new ProcessBuilder(cmd).directory(cwd.toFile())
                    .redirectOutput(cwd.resolve("perf.out").toFile()).redirectError(cwd.resolve("perf.err").toFile())
                    .start();
        } catch (IOException e) {
            Assumptions.abort("perf is not installed (" + e.getMessage() + ")");
            throw e;
        }
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("perf " + args[0] + " did not finish in 120 s");
        }
        return new Run(p.exitValue(), Files.readString(cwd.resolve("perf.out"), StandardCharsets.ISO_8859_1),
                Files.readString(cwd.resolve("perf.err"), StandardCharsets.ISO_8859_1));
    }

    /** A recording like ptrec's: intel_pt + sideband attrs, the sideband records perf knows, AUX data, features. */
    static List<PerfRecord> writeRecording(Path p) throws IOException {
        return writeRecording(p, java.util.Set.of());
    }

    static List<PerfRecord> writeRecording(Path p, java.util.Set<String> leaveOut) throws IOException {
        EventAttr pt = Samples.ptAttr();
        EventAttr sb = Samples.sidebandAttr(Samples.PT_SAMPLE_TYPE);
        List<AttrIds> attrs = List.of(new AttrIds(pt, List.of(1L, 2L)), new AttrIds(sb, List.of(3L, 4L)));
        List<PerfRecord> records = new ArrayList<>();
        for (PerfRecord r : Samples.everyType(Samples.SID_LAYOUT, 3)) {
            switch (r.typeName()) {
                // tool-only records of perf stat / pipe mode / compression, and raw READ/SAMPLE payloads, are
                // not part of a recording ptrec writes
                case "READ", "SAMPLE", "EVENT_TYPE", "TRACING_DATA", "BUILD_ID", "THREAD_MAP", "CPU_MAP",
                        "STAT_CONFIG", "STAT", "STAT_ROUND", "EVENT_UPDATE", "FEATURE", "COMPRESSED", "UNKNOWN_99",
                        "ID_INDEX", "AUXTRACE_ERROR", "AUX_OUTPUT_HW_ID":
                    break;
                default:
                    if (!leaveOut.contains(r.typeName())) {
                        records.add(r);
                    }
            }
        }
        try (PerfDataWriter w = PerfDataWriter.create(p, attrs)) {
            Samples.features(pt, sb).values().forEach(w::setFeature);
            for (PerfRecord r : records) {
                w.write(r);
            }
        }
        return records;
    }

    @Test
    void perfReportDumpReadsTheWrittenFileAndCountsTheSameRecords() throws Exception {
        Path p = dir.resolve("written.perf");
        List<PerfRecord> records = writeRecording(p);
        Run run = perf(dir, "report", "-D", "-i", p.toString(), "--stdio");
        if (System.getProperty("ptfence.keep") != null) {
            Files.copy(p, Path.of(System.getProperty("ptfence.keep")), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        assertEquals(0, run.exit(), "perf report -D exit; stderr: " + run.err());
        List<String> lines = List.of(run.out().split("\n"));
        Map<String, Long> stats = RealRecordings.aggregatedStats(lines);
        Map<String, Long> ours = new TreeMap<>();
        records.forEach(r -> ours.merge(r.typeName(), 1L, Long::sum));
        Map<String, Long> theirs = new TreeMap<>(stats);
        assertEquals((long) records.size(), theirs.remove("TOTAL"), "TOTAL; stderr: " + run.err());
        assertEquals(ours, theirs);
        assertTrue(run.out().contains("Intel Processor Trace data: size 1392 bytes"), "perf decoded the AUX data");
    }

    @Test
    void perfReportHeaderReadsEveryFeature() throws Exception {
        Path p = dir.resolve("written.perf");
        writeRecording(p);
        Run run = perf(dir, "report", "--header-only", "-I", "-i", p.toString());
        assertEquals(0, run.exit(), "stderr: " + run.err());
        String out = run.out();
        for (String want : List.of("# hostname : eddie", "# os release : 6.1.0-ptfence", "# perf version : 6.1.76",
                "# arch : x86_64", "# nrcpus online : 4", "# nrcpus avail : 4",
                "# cpudesc : Intel(R) Core(TM) i5-6500 CPU @ 3.20GHz", "# cpuid : GenuineIntel,6,94,3",
                "# total memory : 16183444 kB", "# cmdline : ptrec -o x.perf -- loopy a b ",
                "# event : name = intel_pt//u", "id = { 1, 2 }", "# event : name = dummy:u", "id = { 3, 4 }",
                "intel_pt = 8", "# contains AUX area data", "#  L1 Data                 32K [0-1]",
                "#  L3 Unified            6144K [0-3]", "# node0 meminfo  : total = 16183444 kB, free = 5189036 kB",
                "# node0 cpu list : 0-3", "bpf_prog_info 42: bpf_prog_0102030405060708_sd_fw_egress addr 0xffffffffc0001000 size 11", "btf info of id 7")) {
            assertTrue(out.contains(want), "perf --header-only -I shows '" + want + "':\n" + out + "\nstderr: " + run.err());
        }
        assertTrue(!run.err().toLowerCase().contains("error") && !run.err().toLowerCase().contains("invalid"),
                "no complaints: " + run.err());
        // and perf script --header's text of it is perf's, line for line (the BTF line among them)
        try (PerfDataFile f = PerfDataFile.open(p)) {
            assertEquals(out, HeaderInfo.text(f, java.nio.file.Files.getLastModifiedTime(p).toInstant(),
                    java.time.ZoneId.systemDefault(), true));
        }
    }

    @Test
    void perfScriptShowsTheBpfEvents() throws Exception {
        Path p = dir.resolve("written.perf");
        // perf script decodes the trace: AUXTRACE_INFO says CPU-wide switch events, so no per-thread SWITCH
        writeRecording(p, java.util.Set.of("SWITCH"));
        Run run = perf(dir, "script", "--show-bpf-events", "-i", p.toString());
        assertEquals(0, run.exit(), run.err());
        assertTrue(run.out().contains("PERF_RECORD_KSYMBOL addr ffffffffc0001000 len 92 type 1 flags 0x0 name "
                + "bpf_prog_6deef7357e7b4530_sd_fw_egress"), run.out());
        assertTrue(run.out().contains("PERF_RECORD_BPF_EVENT type 1, flags 0, id 42"), run.out());
    }

    /**
     * A recording naming its text regions (ptfence's feature bit 255) is read by perf 6.1 exactly as the same
     * recording without it: report -D, script and report --header-only -I -v print the same, and nothing about it
     * (docs/perfdata.md, "Recordings that name their code").
     */
    @Test
    void perfReadsARecordingThatNamesItsTextAsIfItDidNot() throws Exception {
        Path with = dir.resolve("with.perf");
        Path without = dir.resolve("without.perf");
        for (Path p : List.of(with, without)) {
            EventAttr pt = Samples.ptAttr();
            EventAttr sb = Samples.sidebandAttr(Samples.PT_SAMPLE_TYPE);
            try (PerfDataWriter w = PerfDataWriter.create(p, List.of(new AttrIds(pt, List.of(1L, 2L)),
                    new AttrIds(sb, List.of(3L, 4L))))) {
                Samples.features(pt, sb).values().stream()
                        .filter(f -> p == with || f.id() != Feature.PTFENCE_TEXT).forEach(w::setFeature);
                for (PerfRecord r : Samples.everyType(Samples.SID_LAYOUT, 3)) {
                    if (List.of("KSYMBOL", "BPF_EVENT", "MMAP2", "COMM", "AUX", "ITRACE_START", "AUXTRACE_INFO",
                            "AUXTRACE", "FINISHED_ROUND", "TIME_CONV").contains(r.typeName())) {
                        w.write(r);
                    }
                }
            }
        }
        try (PerfDataFile f = PerfDataFile.open(with)) {
            assertEquals(Samples.textRegions(), f.features().textRegions().orElseThrow());
        }
        for (String[] args : List.of(new String[] {"report", "-D", "--stdio"}, new String[] {"script",
                "--show-bpf-events", "--show-mmap-events"}, new String[] {"report", "--header-only", "-I", "-v"})) {
            List<String> a = new ArrayList<>(List.of(args));
            a.addAll(List.of("-i", with.toString()));
            Run w = perf(dir, a.toArray(String[]::new));
            a.set(a.size() - 1, without.toString());
            Run wo = perf(dir, a.toArray(String[]::new));
            assertEquals(0, w.exit(), String.join(" ", args) + ": " + w.err());
            assertEquals(wo.out().replace("without.perf", "with.perf").replaceAll("(?m)^# captured on.*$", ""),
                    w.out().replaceAll("(?m)^# captured on.*$", ""), String.join(" ", args));
            assertEquals(wo.err().replace("without.perf", "with.perf"), w.err(), String.join(" ", args)
                    + ": nothing said about the section");
        }
    }

    /** The lines of perf's Intel PT packet dump ("  00000036:  59 29   MTC 0x29"), in order. */
    static List<String> packetLines(List<String> lines) {
        List<String> out = new ArrayList<>();
        for (String l : lines) {
            if (l.matches("^\\.\\s+[0-9a-f]{8}:.*")) {
                out.add(l.trim().replaceAll("\\s+", " "));
            }
        }
        return out;
    }

    @Test
    void perfDecodesARealRecordingRewrittenByTheWriterExactlyAsTheOriginal() throws Exception {
        for (RealRecordings.Case c : RealRecordings.all()) {
            if (c.pipe()) {
                continue;
            }
            Path p = dir.resolve("rewritten.perf");
            try (PerfDataFile f = PerfDataFile.open(c.perfData()); PerfDataWriter w = PerfDataWriter.create(p, f.attrs())) {
                f.features().all().values().stream().filter(x -> x.id() != Feature.AUXTRACE).forEach(w::setFeature);
                for (PerfRecord r : (Iterable<PerfRecord>) f.stream()::iterator) {
                    w.write(r);
                }
            }
            Run run = perf(dir, "report", "-D", "-i", p.toString(), "--stdio");
            assertEquals(0, run.exit(), c + ": " + run.err());
            List<String> ours = List.of(run.out().split("\n"));
            List<String> expected = RealRecordings.lines(c.reportD());
            assertEquals(RealRecordings.aggregatedStats(expected), RealRecordings.aggregatedStats(ours), c.name());
            List<String> want = packetLines(expected);
            assertTrue(want.size() > 10, c + ": perf's dump has packets");
            assertEquals(want, packetLines(ours), c.name());
        }
    }
}

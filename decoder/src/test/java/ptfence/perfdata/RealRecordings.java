package ptfence.perfdata;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;

/** The real perf.data recordings in fixtures/data/real with perf 6.1's own dumps of them. */
public final class RealRecordings {
    /** A recording, perf's -D dump of it, and the AUX streams tools/perf_aux_extract.py wrote (idx -> file). */
    record Case(String name, Path perfData, Path reportD, Map<Integer, Path> auxBins, boolean pipe) {
        @Override
        public String toString() {
            return name;
        }
    }

    private RealRecordings() {}

    static Path shared() {
        String s = System.getProperty("ptfence.data", "../fixtures/data");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(Path.of(s, "real")),
                "missing fixtures/data/real");
        return Path.of(s, "real");
    }

    static List<Case> all() {
        Path real = shared();
        List<Case> out = new ArrayList<>();
        String[][] hase = {
            {"loopy-20180404T162955", "loopy-20180404T162955.perf"},
            {"control_flow-20180404T163033", "control_flow__control_flow-20180404T163033.perf"},
            {"loopy-20180514T145114", "perf.data.1"},
            {"control_flow-20180515T180451", "perf.data.1"},
        };
        for (String[] h : hase) {
            Path dir = real.resolve("hase").resolve(h[0]);
            out.add(new Case("hase/" + h[0], dir.resolve(h[1]), dir.resolve("expected/perf61_report_D.txt"),
                    bins(dir, "aux"), false));
        }
        Path q = real.resolve("quipper_perf_data_converter");
        out.add(new Case("quipper/file", q.resolve("perf.data.intel_pt-4.14"),
                q.resolve("expected/perf61_report_D.file.txt.xz"), bins(q, "aux_file"), false));
        out.add(new Case("quipper/piped", q.resolve("perf.data.piped.intel_pt-4.14"),
                q.resolve("expected/perf61_report_D.piped.txt.xz"), bins(q, "aux_piped"), true));
        return out;
    }

    private static Map<Integer, Path> bins(Path dir, String prefix) {
        Map<Integer, Path> m = new TreeMap<>();
        Pattern p = Pattern.compile(Pattern.quote(prefix) + "-idx(\\d+)\\.bin");
        try (var s = Files.list(dir)) {
            s.forEach(f -> {
                Matcher mm = p.matcher(f.getFileName().toString());
                if (mm.matches()) {
                    m.put(Integer.parseInt(mm.group(1)), f);
                }
            });
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return m;
    }

    /** The text of perf's dump, decompressing .xz with the xz tool (skips the test if there is none). */
    public static List<String> lines(Path report) throws IOException, InterruptedException {
        if (!report.toString().endsWith(".xz")) {
            return Files.readAllLines(report, StandardCharsets.UTF_8);
        }
        Process p;
        try {
            p = new ProcessBuilder("xz", "-dc", report.toString()).redirectErrorStream(false).start();
        } catch (IOException e) {
            Assumptions.abort("xz is not installed; cannot read " + report);
            throw e;
        }
        byte[] all;
        try (InputStream in = p.getInputStream()) {
            all = in.readAllBytes();
        }
        p.waitFor();
        return List.of(new String(all, StandardCharsets.ISO_8859_1).split("\n"));
    }

    /** One record line of perf -D: its offset in the file and its size and type name. */
    record DumpedRecord(long offset, int size, String type) {}

    private static final Pattern RECORD_LINE =
            Pattern.compile("^(?:-?\\d+ )*(0x[0-9a-f]+|0) \\[0x([0-9a-f]+)\\]: PERF_RECORD_([A-Z0-9_]+)");
    private static final Pattern STAT_LINE = Pattern.compile("^\\s+([A-Z0-9_]+) events:\\s+(\\d+)");

    /** Every record perf printed, with pipe offsets made file offsets (perf counts them after the 16-byte header). */
    static List<DumpedRecord> dumpedRecords(List<String> lines, boolean pipe) {
        List<DumpedRecord> out = new ArrayList<>();
        for (String l : lines) {
            Matcher m = RECORD_LINE.matcher(l);
            if (m.find()) {
                long off = m.group(1).equals("0") ? 0 : Long.parseLong(m.group(1).substring(2), 16);
                out.add(new DumpedRecord(off + (pipe ? PerfDataFile.PIPE_HEADER_SIZE : 0),
                        Integer.parseInt(m.group(2), 16), m.group(3)));
            }
        }
        return out;
    }

    /** perf's "Aggregated stats" block: type name (and TOTAL) to count; empty if perf did not get that far. */
    static Map<String, Long> aggregatedStats(List<String> lines) {
        Map<String, Long> m = new TreeMap<>();
        boolean in = false;
        for (String l : lines) {
            if (l.startsWith("Aggregated stats")) {
                in = true;
                continue;
            }
            if (in) {
                Matcher mm = STAT_LINE.matcher(l);
                if (!mm.find()) {
                    break;
                }
                m.put(mm.group(1), Long.parseLong(mm.group(2)));
            }
        }
        return m;
    }
}

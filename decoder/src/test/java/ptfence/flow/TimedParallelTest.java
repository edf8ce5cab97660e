package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 14: PSB-segment decoding on several threads prints exactly the sequential decode's times: each segment starts
 * with the clock (TSC, MTC, CYC calibration, CBR, TMA) the trace before it set. Compared byte for byte with --threads
 * 1, with --time and --event:time, in every format, on segments as small as one PSB each. (The execution mode a
 * MODE.Exec repeats, and the status events of the PSB a segment ends at, are carried across the seam as well; the
 * forged cycle-accurate walk in fixtures' ParallelTimesTest is where the CYC calibration itself must cross.)
 */
class TimedParallelTest {
    static final List<String> FORMATS = List.of("ptxed", "text", "jsonl");

    static List<String> with(List<String> args, String... more) {
        List<String> out = new ArrayList<>(args);
        out.addAll(List.of(more));
        return out;
    }

    /**
     * Compares --threads 1 with 2 and 4 threads on one-PSB segments, with --time, in each of {@code formats}; returns
     * the number of timed lines compared.
     */
    static long compare(String name, Path dir, List<String> args, List<String> formats, List<String> failures) {
        long timed = 0;
        for (String format : formats) {
            List<String> a = with(args, "--format", format);
            if (!a.contains("--time")) {
                a.add("--time");
            }
            String seq = PtxedCorpusTest.decode(dir, with(a, "--threads", "1"));
            for (String threads : List.of("2", "4")) {
                String par = PtxedCorpusTest.decode(dir, with(a, "--threads", threads, "--segment-bytes", "1"));
                if (!seq.equals(par)) {
                    failures.add(name + " " + format + " threads " + threads);
                }
            }
            timed += seq.lines().filter(l -> l.matches("[0-9a-f]{16}  .*") || l.contains("\"tsc\":")).count();
        }
        return timed;
    }

    @Test
    void corpusTimesStitchToTheSequential() throws IOException {
        Path dir = PtxedCorpusTest.corpus();
        List<String> failures = new ArrayList<>();
        int runs = 0;
        long timed = 0;
        for (PtxedCorpusTest.Run r : PtxedCorpusTest.runs(dir)) {
            if (r.args().stream().anyMatch(a -> a.startsWith("--pevent:") || a.equals("--offset"))) {
                continue; // sequential by design
            }
            Path d = dir.resolve(r.name());
            List<String> args = new ArrayList<>(r.args());
            timed += compare(r.name() + (r.block() ? " block" : " insn"), d, args, FORMATS, failures);
            runs++;
        }
        assertEquals(List.of(), failures);
        assertTrue(runs > 300, "runs " + runs);
        assertTrue(timed > 1000, "timed lines " + timed);
    }

    /**
     * The real DynamoRIO trace (Skylake-SP, MTC and CYC) four times over: each copy's PSB starts a segment, and its CYC
     * packets before the first MTC are timed only by the calibration the copies before it left.
     */
    @Test
    void realTraceRepeatedTimesStitch(@TempDir Path tmp) throws IOException {
        Path d = RealTraceTest.dir("test_simple.tracedir_2022-07-06");
        byte[] one = Files.readAllBytes(d.resolve("pt.bin"));
        ByteArrayOutputStream four = new ByteArrayOutputStream();
        for (int i = 0; i < 4; i++) {
            four.write(one, 8, one.length - 8); // 8 stray bytes before the first PSB
        }
        Path trace = tmp.resolve("dr4.pt");
        Files.write(trace, four.toByteArray());
        List<String> failures = new ArrayList<>();
        long timed = 0;
        for (String decoder : List.of("--insn-decoder", "--block-decoder")) {
            for (String events : List.of("--time", "--event:time")) {
                List<String> args = List.of(decoder, "--elf", d.resolve("hello").toString(), "--cpu", "6/85/4",
                        "--mtc-freq", "3", "--nom-freq", "37", "--cpuid-0x15.eax", "2", "--cpuid-0x15.ebx", "308", events,
                        "--pt", trace.toString());
                timed += compare("dynamorio x4 " + decoder + " " + events, tmp, args, FORMATS, failures);
            }
        }
        assertEquals(List.of(), failures);
        assertTrue(timed > 4 * 59_234, "timed lines " + timed);
    }

    /**
     * The AUX data of real perf recordings (HASE's Skylake and Broadwell user traces with their static binaries; the
     * quipper Skylake per-CPU trace, user and kernel, MTC and TSC, without its code: every instruction an error) with
     * --time and --event:time, on one-PSB segments.
     */
    @Test
    void realRecordingsTimesStitch() {
        String shared = System.getProperty("ptfence.shared");
        org.junit.jupiter.api.Assumptions.assumeTrue(shared != null, "ptfence.shared not set");
        Path real = Path.of(shared, "real");
        List<String> failures = new ArrayList<>();
        long timed = 0;
        int traces = 0;
        String[][] hase = {
            {"control_flow-20180404T163033", "aux-idx1.bin", "control_flow", "6/94/3"},
            {"control_flow-20180515T180451", "aux-idx1.bin", "control_flow", "6/61/4"},
            {"loopy-20180404T162955", "aux-idx2.bin", "loopy", "6/94/3"},
            {"loopy-20180514T145114", "aux-idx1.bin", "loopy", "6/61/4"},
        };
        for (String[] h : hase) {
            Path d = real.resolve("hase").resolve(h[0]);
            if (!Files.isRegularFile(d.resolve(h[1]))) {
                continue;
            }
            traces++;
            for (String decoder : List.of("--insn-decoder", "--block-decoder")) {
                List<String> args = List.of(decoder, "--elf", d.resolve(h[2]).toString(), "--cpu", h[3], "--event:time",
                        "--pt", d.resolve(h[1]).toString());
                timed += compare(h[0] + " " + decoder, d, args, FORMATS, failures);
            }
        }
        Path q = real.resolve("quipper_perf_data_converter");
        for (String aux : List.of("aux_file-idx0.bin", "aux_file-idx3.bin")) {
            if (!Files.isRegularFile(q.resolve(aux))) {
                continue;
            }
            traces++;
            List<String> args = List.of("--cpu", "6/78/3", "--mtc-freq", "3", "--nom-freq", "12", "--cpuid-0x15.eax", "2",
                    "--cpuid-0x15.ebx", "100", "--event:time", "--pt", q.resolve(aux).toString());
            timed += compare("quipper " + aux, q, args, FORMATS, failures);
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(traces > 0, "no real recordings");
        assertEquals(List.of(), failures);
        assertEquals(6, traces);
        assertTrue(timed > 3 * 2 * (57 + 1_092 + 57 + 956), "timed lines " + timed);
    }
}

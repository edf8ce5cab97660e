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
}

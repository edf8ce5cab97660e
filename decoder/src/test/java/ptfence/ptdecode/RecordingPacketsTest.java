package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Tool;

/** {@code ptdecode packets RECORDING} and {@code ptdecode RECORDING} on perf.data recordings. */
class RecordingPacketsTest {
    record Result(int code, String out, String err) {}

    static Result packets(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream old = System.err;
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        System.setErr(e);
        try {
            PacketsCommand cmd = new PacketsCommand();
            cmd.stdout = out;
            cmd.stderr = e;
            int code = Tool.run("ptdecode", cmd, args);
            return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setErr(old);
        }
    }

    static Path hase(String dir) {
        String s = System.getProperty("ptfence.data", "../fixtures/data");
        Path d = Path.of(s, "real", "hase", dir);
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(d), "missing " + d);
        return d;
    }

    @Test
    void aRecordingDumpsAsItsBufferWouldWithTheRecordingsCpuAndTiming() {
        Path d = hase("loopy-20180404T162955");
        Result rec = packets("--time", "--tcal", d.resolve("loopy-20180404T162955.perf").toString());
        assertEquals(Tool.EXIT_BAD_INPUT, rec.code(), "--time and --tcal together are refused");
        rec = packets("--time", d.resolve("loopy-20180404T162955.perf").toString());
        assertEquals(0, rec.code(), rec.err());
        // the recording says: CPU 6/94/3, mtc period 3 (config 0x300e601 & 0x3c000), max non-turbo 32, TSC:CTC 266/2
        Result raw = packets("--time", "--cpu", "6/94/3", "--mtc-freq", "3", "--nom-freq", "32", "--cpuid-0x15.eax", "2",
                "--cpuid-0x15.ebx", "266", d.resolve("aux-idx2.bin").toString());
        assertEquals(0, raw.code(), raw.err());
        List<String> lines = rec.out().lines().toList();
        assertEquals("# AUX buffer idx 2 cpu 2 tid 19233 offset 0x0 size 0x570 file offset 0x2ba0", lines.get(0));
        assertEquals(raw.out().lines().toList(), lines.subList(1, lines.size()));
        assertTrue(raw.out().contains("tsc  000afe29d5f89268"), "MTC-derived time in the listing");
    }

    @Test
    void theBundledRecordingDumps() {
        Path fixture = Path.of(System.getProperty("user.dir")).resolveSibling("fixtures").resolve("data/hase/loopy.perf");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isRegularFile(fixture), "missing " + fixture);
        Result r = packets(fixture.toString());
        assertEquals(0, r.code(), r.err());
        assertEquals(1, r.out().lines().filter(l -> l.startsWith("# AUX buffer")).count());
        assertEquals(8, r.out().lines().filter(l -> l.contains("tip.pge")).count());
        assertEquals("", r.err());
    }

    @Test
    void aDamagedRecordingPrintsTheBuffersBeforeTheDamageAndExits2(@TempDir Path tmp) throws Exception {
        String s = System.getProperty("ptfence.data", "../fixtures/data");
        Path q = Path.of(String.valueOf(s), "real", "quipper_perf_data_converter", "perf.data.intel_pt-4.14");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isRegularFile(q), "no quipper recording");
        Result whole = packets("--no-pad", q.toString());
        assertEquals(0, whole.code(), whole.err());
        assertEquals(2, whole.out().lines().filter(l -> l.startsWith("# AUX buffer")).count());
        // cut inside the second buffer's payload (it starts at file offset 30648)
        byte[] bytes = Files.readAllBytes(q);
        Path cut = tmp.resolve("cut.perf");
        Files.write(cut, Arrays.copyOf(bytes, 40000));
        Result r = packets("--no-pad", cut.toString());
        assertEquals(Tool.EXIT_BAD_INPUT, r.code());
        List<String> err = r.err().strip().lines().toList();
        assertEquals(1, err.size(), r.err());
        assertTrue(err.get(0).contains(cut.toString()) && err.get(0).contains("offset 0x"), err.get(0));
        String first = whole.out().substring(0, whole.out().indexOf("# AUX buffer idx 3"));
        assertEquals(first, r.out(), "the first buffer is printed in full");
    }

    @Test
    void thePacketsFlagDumpsARecordingLikeTheSubcommand() {
        Path d = hase("loopy-20180514T145114");
        String rec = d.resolve("perf.data.1").toString();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PtdecodeCommand top = new PtdecodeCommand();
        top.stdout = out;
        assertEquals(0, Tool.run("ptdecode", top, "--packets", rec));
        assertEquals(packets(rec).out(), out.toString(StandardCharsets.UTF_8));
    }

    @Test
    void mutatedRecordingsExitWith0Or2AndOneLineErrors(@TempDir Path tmp) throws Exception {
        Path d = hase("control_flow-20180404T163033");
        byte[] orig = Files.readAllBytes(d.resolve("control_flow__control_flow-20180404T163033.perf"));
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(42);
        Path m = tmp.resolve("m.perf");
        int n = Integer.getInteger("ptfence.fuzz.recording", 500);
        int bad = 0;
        for (int i = 0; i < n; i++) {
            byte[] b = orig.clone();
            boolean truncated = rnd.nextInt(4) == 0;
            if (truncated) {
                b = Arrays.copyOf(b, 8 + rnd.nextInt(b.length - 8));
            } else {
                for (int k = 0, flips = 1 + rnd.nextInt(8); k < flips; k++) {
                    int at = rnd.nextInt(b.length);
                    b[at] ^= (byte) (1 << rnd.nextInt(8));
                }
            }
            Files.write(m, b);
            Result r = packets("--quiet", m.toString());
            assertTrue(r.code() == 0 || r.code() == Tool.EXIT_BAD_INPUT, "mutation " + i + ": exit " + r.code() + " " + r.err());
            assertTrue(!r.err().contains("internal error"), "mutation " + i + ": " + r.err());
            if (truncated) {
                assertEquals(Tool.EXIT_BAD_INPUT, r.code(), "mutation " + i + ": a truncated recording is damage");
            }
            bad += r.code() == 0 ? 0 : 1;
        }
        System.out.printf("ptdecode packets on %d mutated recordings: %d exit 2, the rest 0%n", n, bad);
    }

    @Test
    void aPipeModeRecordingOnStdinDumpsLikeTheFile() throws Exception {
        String s = System.getProperty("ptfence.data", "../fixtures/data");
        Path q = Path.of(String.valueOf(s), "real", "quipper_perf_data_converter", "perf.data.piped.intel_pt-4.14");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isRegularFile(q), "no piped quipper recording");
        java.io.InputStream old = System.in;
        Result viaStdin;
        try (java.io.InputStream in = Files.newInputStream(q)) {
            System.setIn(in);
            viaStdin = packets("--no-pad", "-");
        } finally {
            System.setIn(old);
        }
        Result viaFile = packets("--no-pad", q.toString());
        assertEquals(0, viaStdin.code(), viaStdin.err());
        assertEquals(viaFile.out(), viaStdin.out());
        assertEquals(2, viaStdin.out().lines().filter(l -> l.startsWith("# AUX buffer")).count());
    }

    /** The loopy recording with its one AUXTRACE cut into pieces at {@code cuts} (AUX offsets), plus {@code gap}. */
    private static Path split(Path dir, long[] cuts, long gap) throws Exception {
        return split(dir, cuts, gap, false);
    }

    private static Path split(Path dir, long[] cuts, long gap, boolean padLikePerf) throws Exception {
        Path src = hase("loopy-20180404T162955").resolve("loopy-20180404T162955.perf");
        Path out = dir.resolve("split.perf");
        try (ptfence.perfdata.PerfDataFile f = ptfence.perfdata.PerfDataFile.open(src);
                ptfence.perfdata.PerfDataWriter w = ptfence.perfdata.PerfDataWriter.create(out, f.attrs())) {
            f.features().all().values().stream().filter(x -> x.id() != ptfence.perfdata.Feature.AUXTRACE)
                    .forEach(w::setFeature);
            for (ptfence.perfdata.PerfRecord r : (Iterable<ptfence.perfdata.PerfRecord>) f.stream()::iterator) {
                if (r instanceof ptfence.perfdata.PerfRecord.Auxtrace a) {
                    long from = 0;
                    for (int i = 0; i <= cuts.length; i++) {
                        long to = i < cuts.length ? cuts[i] : a.size();
                        java.nio.ByteBuffer piece = a.data().position((int) from).limit((int) to).slice();
                        long offset = from + (i > 0 ? gap : 0);
                        if (padLikePerf && piece.remaining() % 8 != 0) {
                            java.nio.ByteBuffer padded = java.nio.ByteBuffer.allocate((piece.remaining() + 7) & ~7);
                            padded.put(piece).clear();
                            piece = padded;
                        }
                        w.write(new ptfence.perfdata.PerfRecord.Auxtrace(0, piece.remaining(), offset, a.reference(),
                                a.idx(), a.tid(), a.cpu(), 0, piece));
                        from = to;
                    }
                } else {
                    w.write(r);
                }
            }
        }
        return out;
    }

    /**
     * The loopy recording's buffer cut at 0x17 and 0x3b (inside a TSC and an MTC packet), optionally padded like
     * perf record; returns the whole recording's listing and the cut one's, without their header lines.
     */
    private static List<List<String>> wholeAndCut(Path tmp, boolean pad) throws Exception {
        Path orig = hase("loopy-20180404T162955").resolve("loopy-20180404T162955.perf");
        Result whole = packets("--time", orig.toString());
        Result pieces = packets("--time", split(tmp, new long[] {0x17, 0x3b}, 0, pad).toString());
        assertEquals(0, pieces.code(), pieces.err());
        List<String> b = pieces.out().lines().toList();
        assertTrue(b.get(0).contains("(3 contiguous buffers, continued at file offsets"), b.get(0));
        List<String> a = whole.out().lines().toList();
        return List.of(a.subList(1, a.size()), b.subList(1, b.size()));
    }

    @Test
    void contiguousBuffersDecodeAsOneStreamSoStraddlingPacketsDecode(@TempDir Path tmp) throws Exception {
        List<List<String>> r = wholeAndCut(tmp, false);
        assertEquals(r.get(0), r.get(1));
    }

    @Test
    void buffersPaddedToEightBytesLikePerfRecordsStillJoin(@TempDir Path tmp) throws Exception {
        List<List<String>> r = wholeAndCut(tmp, true);
        int n = r.get(0).size();
        assertEquals(r.get(0), r.get(1).subList(0, n));
        // the last buffer's own padding (0x535 -> 0x538) is three PADs at the end
        assertEquals(List.of("pad", "pad", "pad"), r.get(1).subList(n, r.get(1).size()).stream()
                .map(l -> l.split("\\s+")[1]).toList());
    }

    @Test
    void aGapInTheAuxOffsetsStartsANewRun(@TempDir Path tmp) throws Exception {
        Path p = split(tmp, new long[] {0x36}, 0x1000);
        Result r = packets(p.toString());
        assertEquals(0, r.code(), r.err());
        assertEquals(List.of("# AUX buffer idx 2 cpu 2 tid 19233 offset 0x0 size 0x36 file offset 0x2ba0",
                "# AUX buffer idx 2 cpu 2 tid 19233 offset 0x1036 size 0x53a file offset 0x2c06"),
                r.out().lines().filter(l -> l.startsWith("#")).toList());
    }
}

package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;
import ptfence.cli.JavaChild;
import ptfence.image.Image;
import ptfence.image.RawSection;
import ptfence.output.PtxedPrinter;
import ptfence.ptdecode.FlowCommand;

/**
 * PSB-segment decoding on several threads gives byte-for-byte the output of the sequential decoder, on the
 * bench generator's 1 MiB traces cut into segments of a few PSBs each (every seam exercised).
 */
class ParallelFlowTest {
    static String decode(Path dir, String trace, String... extra) {
        FlowCommand cmd = new FlowCommand();
        String[] base = {"--raw", dir.resolve("bench.bin") + ":0x400000", "--pt", dir.resolve(trace).toString()};
        String[] args = new String[base.length + extra.length];
        System.arraycopy(base, 0, args, 0, base.length);
        System.arraycopy(extra, 0, args, base.length, extra.length);
        new CommandLine(cmd).parseArgs(args);
        StringWriter sw = new StringWriter();
        try (PrintWriter pw = new PrintWriter(sw)) {
            cmd.decode(pw);
        }
        return sw.toString();
    }

    /** Generates a bench trace ({@code variant}, {@code psbs} PSB segments of 4 KiB) and its image in {@code dir}. */
    static Path bench(Path dir, String variant, int psbs) throws Exception {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path bench = Path.of(shared, "bench");
        org.junit.jupiter.api.Assertions.assertTrue(Files.exists(bench.resolve("gen_bench.py")), "no bench generator");
        Path trace = dir.resolve("bench-" + variant + "-" + psbs + ".pt");
        Process p;
        try {
            p = new ProcessBuilder("python3", bench.resolve("gen_bench.py").toString(), variant, trace.toString(),
                    "--segments", Integer.toString(psbs)).redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.assumeTrue(false, "python3 is needed to generate the bench trace");
            return null;
        }
        p.getInputStream().readAllBytes();
        assertEquals(0, p.waitFor());
        if (!Files.exists(dir.resolve("bench.bin"))) {
            Files.copy(bench.resolve("bench.bin"), dir.resolve("bench.bin"));
        }
        return trace;
    }

    /** SHA-256 and length of what a stream gives, read slowly (a pause every 4 MiB): a consumer slower than the decode. */
    static String slowDigest(InputStream in) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        byte[] b = new byte[64 * 1024];
        long total = 0;
        for (int n; (n = in.read(b)) > 0; ) {
            md.update(b, 0, n);
            if ((total + n) >> 22 != total >> 22) {
                Thread.sleep(20);
            }
            total += n;
        }
        return HexFormat.of().formatHex(md.digest()) + " " + total;
    }

    /** The sequential decode's text, as a digest (it runs to tens of MB). */
    static String sequentialDigest(Path dir, Path trace, String... extra) throws Exception {
        FlowCommand cmd = new FlowCommand();
        List<String> args = new ArrayList<>(List.of("--raw", dir.resolve("bench.bin") + ":0x400000", "--pt", trace.toString(),
                "--threads", "1"));
        args.addAll(List.of(extra));
        new CommandLine(cmd).parseArgs(args.toArray(String[]::new));
        PipedInputStream pin = new PipedInputStream(1 << 20);
        PipedOutputStream pout = new PipedOutputStream(pin);
        Thread writer = new Thread(() -> {
            try (PrintWriter pw = new PrintWriter(new java.io.OutputStreamWriter(pout, StandardCharsets.UTF_8))) {
                cmd.decode(pw);
            }
        });
        writer.start();
        String d = slowDigest(pin);
        writer.join();
        return d;
    }

    /**
     * Issue 12: a dense trace whose text runs to ~45 MB, decoded on 2 threads in 8 segments by a JVM with a 48 MiB
     * heap, read by a slow consumer: the output is byte for byte the sequential decode's, and the JVM does not run
     * out of memory (it used to hold a wave of whole segments' text, ~90 MB of chars, until their turn).
     */
    @Test
    void denseTextUnderASmallHeapStreamsInOrder(@TempDir Path dir) throws Exception {
        Path trace = bench(dir, "mixed", 64);
        String[] extra = {"--format", "text"};
        String want = sequentialDigest(dir, trace, extra);
        List<String> cmd = JavaChild.command(List.of("-Xmx48m"), "ptfence.ptdecode.PtdecodeCommand",
                List.of("flow", "--raw", dir.resolve("bench.bin") + ":0x400000", "--pt", trace.toString(), "--format", "text",
                        "--threads", "2", "--segment-bytes", "32768"));
        Process p = new ProcessBuilder(cmd).redirectError(dir.resolve("stderr").toFile()).start();
        String got = slowDigest(p.getInputStream());
        assertEquals(0, p.waitFor(), Files.readString(dir.resolve("stderr")));
        assertEquals(want, got);
        assertTrue(Long.parseLong(want.split(" ")[1]) > 40_000_000L, "the output must dwarf the heap: " + want);
    }

    /** The same decode in-process: the chars held for later segments never pass the bound (window x cap). */
    @Test
    void bufferedTextStaysUnderTheBound(@TempDir Path dir) throws Exception {
        Path trace = bench(dir, "tnt", 16);
        Image image = new Image();
        image.addAll(RawSection.parse(dir.resolve("bench.bin") + ":0x400000"));
        FlowConfig cfg = new FlowConfig();
        ParallelFlow par = new ParallelFlow(image, cfg, b -> CursorInput.of(b, cfg.errata), false, 2, 4096, 64 * 1024);
        ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(trace));
        long[] count = new long[1];
        Writer counting = new Writer() {
            @Override
            public void write(char[] c, int off, int len) {
                count[0] += len;
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        par.run(bytes, new PrintWriter(counting), w -> new PtxedPrinter(w, false, false));
        assertEquals(16, par.segmentsFinished.get());
        assertTrue(count[0] > 20 * par.bufferBound(), "output " + count[0] + " chars must dwarf the bound " + par.bufferBound());
        assertTrue(par.peakBuffered.get() <= par.bufferBound(), "peak " + par.peakBuffered.get() + " > " + par.bufferBound());
        assertTrue(par.peakBuffered.get() > 0, "later segments are buffered");
    }

    /**
     * Issue 12: when the reader goes away (the output's checkError is true) the decode stops: no segment after
     * the failure is decoded to its end and almost nothing more is offered to the output (it used to decode and
     * write everything, ~100 MB).
     */
    @Test
    void aClosedOutputStopsTheDecode(@TempDir Path dir) throws Exception {
        Path trace = bench(dir, "tnt", 64);
        FlowCommand cmd = new FlowCommand();
        new CommandLine(cmd).parseArgs("--raw", dir.resolve("bench.bin") + ":0x400000", "--pt", trace.toString(),
                "--threads", "2", "--segment-bytes", "4096");
        long[] afterClose = new long[1];
        Writer closing = new Writer() {
            long written;

            @Override
            public void write(char[] c, int off, int len) throws IOException {
                if (written > 100_000) {
                    afterClose[0] += len;
                    throw new IOException("Broken pipe");
                }
                written += len;
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        PrintWriter out = new PrintWriter(closing);
        cmd.decode(out);
        assertTrue(afterClose[0] < 1_000_000, "written after the reader went away: " + afterClose[0]);
    }

    /**
     * Coverage on threads: the bench generator's traces (16 PSB segments of 64 KiB) cut into 4 KiB segments, --edges
     * and the --coverage bitmap on 2 and 4 threads equal --threads 1 (each segment's edges merged in trace order, with
     * the edge across each seam); so does the count.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tnt", "mixed"})
    void coverageOnThreadsEqualsOneThread(String variant, @TempDir Path dir) throws Exception {
        String trace = bench(dir, variant, 16).getFileName().toString();
        Path one = dir.resolve("one.map");
        Path par = dir.resolve("par.map");
        String edges = decode(dir, trace, "--edges", "--coverage", one.toString(), "--threads", "1");
        String count = decode(dir, trace, "--quiet", "--stat", "--threads", "1");
        long taken = edges.lines().mapToLong(l -> Long.parseLong(l.split(" ")[2])).sum();
        assertTrue(taken > 100_000, "edges taken " + taken); // a few edges (the bench's loops), taken very often
        for (String threads : List.of("2", "4")) {
            assertEquals(edges, decode(dir, trace, "--edges", "--coverage", par.toString(), "--threads", threads,
                    "--segment-bytes", "4096"), "--edges on " + threads + " threads");
            assertTrue(java.util.Arrays.equals(Files.readAllBytes(one), Files.readAllBytes(par)),
                    "--coverage on " + threads + " threads");
            assertEquals(count, decode(dir, trace, "--quiet", "--stat", "--threads", threads, "--segment-bytes", "4096"));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tnt", "mixed"})
    void segmentsStitchToTheSequentialOutput(String variant, @TempDir Path dir) throws Exception {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path bench = Path.of(shared, "bench");
        org.junit.jupiter.api.Assertions.assertTrue(Files.exists(bench.resolve("gen_bench.py")), "no bench generator");
        String trace = "bench-" + variant + "-1M.pt";
        Process p;
        try {
            p = new ProcessBuilder("python3", bench.resolve("gen_bench.py").toString(), variant, dir.resolve(trace).toString(),
                    "--segments", "64").redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.assumeTrue(false, "python3 is needed to generate the bench trace");
            return;
        }
        p.getInputStream().readAllBytes();
        assertEquals(0, p.waitFor());
        Files.copy(bench.resolve("bench.bin"), dir.resolve("bench.bin"));
        Matcher m = Pattern.compile("\"expected_instructions\":\\s*(\\d+)").matcher(Files.readString(dir.resolve(trace + ".json")));
        m.find();
        long expected = Long.parseLong(m.group(1));

        String sequential = decode(dir, trace, "--block-decoder");
        String parallel = decode(dir, trace, "--block-decoder", "--threads", "2", "--segment-bytes", "10000");
        assertEquals(expected + 2, sequential.lines().count(), "instructions plus [enabled] and [disabled]");
        assertEquals(sequential, parallel);
        String counted = decode(dir, trace, "--quiet", "--stat", "--threads", "2", "--segment-bytes", "10000");
        assertEquals("insn: " + expected + ".\n", counted);
    }
}

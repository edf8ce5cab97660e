package ptfence.flow;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Benchmark (not a test): runs {@code bin/ptdecode flow --quiet --stat} as a separate process on the
 * shared bench traces, checks the instruction count against the generator's exact count, and prints time,
 * M insn/s, MB/s of trace and peak memory next to libipt's figures from the issue.
 *
 * <pre>
 * mvn -q -pl decoder -am -DskipTests package test-compile
 * java -cp decoder/target/test-classes:decoder/target/classes:'decoder/target/lib/*' ptfence.flow.FlowBench [workdir]
 * </pre>
 * Traces are generated into {@code workdir} (default /tmp/ptfence-bench) with gen_bench.py if missing.
 */
public final class FlowBench {
    private static final Pattern INSN = Pattern.compile("insn:\\s*(\\d+)\\.");
    /** A real user-space trace (DynamoRIO's test, Skylake-SP) repeated to 105 MB: timing-dense, interrupts. */
    private static final String REAL = "dynamorio-x7167.pt";
    private static final int REAL_COPIES = 7167;
    private static final int REAL_STRAY_BYTES = 8;
    private static final int REAL_INSNS = 59_234;

    private FlowBench() {}

    record Case(String trace, String variant, int segments, String decoder, double libiptMinsn, int threads) {
        Case(String trace, String variant, int segments, String decoder, double libiptMinsn) {
            this(trace, variant, segments, decoder, libiptMinsn, 1);
        }
    }

    public static void main(String[] args) throws Exception {
        Path root = Path.of(System.getProperty("user.dir"));
        Path shared = Path.of(System.getProperty("ptfence.shared", root.resolve("../shared").toString()));
        Path bench = shared.resolve("bench");
        Path work = Path.of(args.length > 0 ? args[0] : "/tmp/ptfence-bench");
        Files.createDirectories(work);
        Files.copy(bench.resolve("bench.bin"), work.resolve("bench.bin"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        List<Case> cases = List.of(
                new Case("bench-tnt.pt", "tnt", 25600, "--block-decoder", 84),
                new Case("bench-tnt.pt", "tnt", 25600, "--insn-decoder", 25.6),
                new Case("bench-mixed.pt", "mixed", 25600, "--block-decoder", 47),
                new Case("bench-mixed.pt", "mixed", 25600, "--insn-decoder", 20.0),
                new Case("bench-tnt.pt", "tnt", 25600, "--block-decoder", 84, 2),
                new Case("bench-mixed.pt", "mixed", 25600, "--block-decoder", 47, 2),
                // libipt's block decoder on this file here: 26.6 MB/s = 107.6 M insn/s (in-process, median of 3)
                new Case(REAL, "real", REAL_COPIES, "--block-decoder", 107.6, 1),
                new Case(REAL, "real", REAL_COPIES, "--block-decoder", 107.6, 2));
        // The launcher builds on first use; do that before measuring anything.
        run(List.of(root.resolve("bin/ptdecode").toString(), "flow", "--help"), work);
        System.out.printf("%-16s %-16s %8s %8s %14s %10s %8s %10s %12s %7s %9s%n", "trace", "decoder", "wall s", "cpu s",
                "instructions", "M insn/s", "MB/s", "peak MB", "libipt M/s", "ratio", "ratio/cpu");
        for (Case c : cases) {
            Path trace = work.resolve(c.trace());
            List<String> image;
            long expected;
            if (c.variant().equals("real")) {
                Path dir = shared.resolve("real/dynamorio_drpt2trace/test_simple.tracedir_2022-07-06");
                if (!Files.exists(trace)) {
                    byte[] one = Files.readAllBytes(dir.resolve("pt.bin"));
                    byte[] body = java.util.Arrays.copyOfRange(one, REAL_STRAY_BYTES, one.length);
                    try (var out = new java.io.BufferedOutputStream(Files.newOutputStream(trace), 1 << 20)) {
                        for (int i = 0; i < c.segments(); i++) {
                            out.write(body);
                        }
                    }
                }
                image = List.of("--cpu", "6/85/4", "--elf", dir.resolve("hello").toString());
                expected = (long) REAL_INSNS * c.segments();
            } else {
                if (!Files.exists(trace)) {
                    run(List.of("python3", bench.resolve("gen_bench.py").toString(), c.variant(), trace.toString(),
                            "--segments", Integer.toString(c.segments())), work);
                }
                image = List.of("--raw", work.resolve("bench.bin") + ":0x400000");
                expected = expectedInstructions(work.resolve(c.trace() + ".json"));
            }
            List<String> cmd = new ArrayList<>(List.of("/usr/bin/time", "-f", "TIME %e %M %U %S",
                    root.resolve("bin/ptdecode").toString(), "flow", c.decoder()));
            cmd.addAll(image);
            cmd.addAll(List.of("--pt", trace.toString(), "--quiet", "--stat", "--threads",
                    Integer.toString(c.threads())));
            String out = run(cmd, work);
            Matcher m = INSN.matcher(out);
            long got = m.find() ? Long.parseLong(m.group(1)) : -1;
            if (got != expected) {
                throw new IllegalStateException(c + ": counted " + got + " instructions, expected " + expected + "\n" + out);
            }
            Matcher t = Pattern.compile("TIME ([0-9.]+) (\\d+) ([0-9.]+) ([0-9.]+)").matcher(out);
            if (!t.find()) {
                throw new IllegalStateException("no timing in: " + out);
            }
            double secs = Double.parseDouble(t.group(1));
            double cpu = Double.parseDouble(t.group(3)) + Double.parseDouble(t.group(4));
            double peakMb = Long.parseLong(t.group(2)) / 1024.0;
            double minsn = got / secs / 1e6;
            double mbs = Files.size(trace) / secs / 1e6;
            double cpuMinsn = got / cpu / 1e6;
            System.out.printf("%-16s %-16s %8.2f %8.2f %14d %10.1f %8.1f %10.0f %12.1f %6.1fx %8.1fx%n", c.trace(),
                    c.decoder() + (c.threads() > 1 ? " x" + c.threads() : ""),
                    secs, cpu, got, minsn, mbs, peakMb, c.libiptMinsn(), minsn / c.libiptMinsn(), cpuMinsn / c.libiptMinsn());
        }
    }

    private static long expectedInstructions(Path json) throws IOException {
        Matcher m = Pattern.compile("\"expected_instructions\":\\s*(\\d+)").matcher(Files.readString(json));
        if (!m.find()) {
            throw new IllegalStateException("no expected_instructions in " + json);
        }
        return Long.parseLong(m.group(1));
    }

    private static String run(List<String> cmd, Path dir) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int rc = p.waitFor();
        if (rc != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " exited " + rc + ":\n" + out);
        }
        return out;
    }
}

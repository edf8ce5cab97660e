package ptfence.coverage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --edges} and {@code --coverage} equal the edges derived here, independently, from the full instruction
 * listing (jsonl) of the same decode: on every libipt corpus case without sideband and on the real DynamoRIO traces.
 */
class EdgeCoverageTest {
    private static final Pattern INSN = Pattern.compile("\\{\"type\":\"insn\",\"ip\":\"0x([0-9a-f]+)\",\"size\":\\d+,\"class\":\"(\\w+)\"");
    private static final Pattern EVENT = Pattern.compile("\\{\"type\":\"event\",\"event\":\"(\\w+)\"");
    private static final Pattern EDGE = Pattern.compile("\\{\"type\":\"edge\",\"from\":\"0x([0-9a-f]+)\",\"to\":\"0x([0-9a-f]+)\",\"count\":(\\d+)}");
    /** Events across which a branch and the next instruction are not an edge (docs/flow.md). */
    private static final Set<String> BREAKS = Set.of("enabled", "disabled", "async_disabled", "overflow", "interrupt", "tsx");

    /** Edges from a jsonl listing: "from to" (hex) to count. */
    static TreeMap<String, Long> derive(String jsonl) {
        TreeMap<String, Long> edges = new TreeMap<>();
        long pending = -1;
        boolean have = false;
        for (String line : jsonl.split("\n")) {
            Matcher m = INSN.matcher(line);
            if (m.lookingAt()) {
                long ip = Long.parseUnsignedLong(m.group(1), 16);
                if (have) {
                    edges.merge(String.format("%016x %016x", pending, ip), 1L, Long::sum);
                }
                String cls = m.group(2);
                have = !cls.equals("other") && !cls.equals("ptwrite");
                pending = ip;
                continue;
            }
            Matcher e = EVENT.matcher(line);
            if (e.lookingAt()) {
                if (BREAKS.contains(e.group(1))) {
                    have = false;
                }
                continue;
            }
            if (line.startsWith("{\"type\":\"error\"") || line.startsWith("{\"type\":\"end_of_trace\"")) {
                have = false;
            }
        }
        return edges;
    }

    /** The documented AFL-style bitmap, computed here from the derived edges. */
    static byte[] bitmap(Map<String, Long> edges) {
        int[] counts = new int[1 << 16];
        edges.forEach((k, n) -> {
            String[] p = k.split(" ");
            long f = Long.parseUnsignedLong(p[0], 16);
            long t = Long.parseUnsignedLong(p[1], 16);
            int hf = (int) ((f * 0x9E3779B97F4A7C15L) >>> 48);
            int ht = (int) ((t * 0x9E3779B97F4A7C15L) >>> 48);
            counts[(ht ^ (hf >>> 1)) & 0xffff] += (int) Math.min(n, 1 << 20);
        });
        byte[] out = new byte[1 << 16];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Math.min(255, counts[i]);
        }
        return out;
    }

    private static List<String> with(List<String> args, String... more) {
        List<String> out = new ArrayList<>(args.stream().filter(a -> !a.equals("--block-decoder")
                && !a.equals("--insn-decoder") && !a.equals("--quiet") && !a.startsWith("--format")).toList());
        out.addAll(List.of(more));
        return out;
    }

    /** Returns the number of edges compared; adds a line to failures for each mismatch. */
    static long check(String name, Path dir, List<String> args, Path tmp, List<String> failures) throws IOException {
        TreeMap<String, Long> want = derive(ptfence.flow.PtxedCorpusTestAccess.decode(dir, with(args, "--format", "jsonl")));
        TreeMap<String, Long> got = new TreeMap<>();
        for (String line : ptfence.flow.PtxedCorpusTestAccess.decode(dir, with(args, "--format", "jsonl", "--edges")).split("\n")) {
            Matcher m = EDGE.matcher(line);
            if (m.matches()) {
                got.put(String.format("%016x %016x", Long.parseUnsignedLong(m.group(1), 16),
                        Long.parseUnsignedLong(m.group(2), 16)), Long.parseLong(m.group(3)));
            }
        }
        if (!got.equals(want)) {
            failures.add(name + " --edges jsonl: " + got.size() + " edges, want " + want.size());
        }
        StringBuilder text = new StringBuilder();
        want.forEach((k, n) -> text.append(k).append(' ').append(n).append('\n'));
        String gotText = ptfence.flow.PtxedCorpusTestAccess.decode(dir, with(args, "--edges")).lines().filter(l -> l.matches("[0-9a-f]{16} [0-9a-f]{16} \\d+"))
                .map(l -> l + "\n").reduce("", String::concat);
        if (!gotText.equals(text.toString())) {
            failures.add(name + " --edges text");
        }
        Path map = tmp.resolve("map");
        Files.deleteIfExists(map);
        ptfence.flow.PtxedCorpusTestAccess.decode(dir, with(args, "--coverage", map.toString()));
        byte[] bits = Files.readAllBytes(map);
        if (!java.util.Arrays.equals(bitmap(want), bits)) {
            failures.add(name + " --coverage");
        }
        parallel(name, dir, args, tmp, failures);
        return want.size();
    }

    /**
     * {@code --edges} (text, jsonl; errors included) and {@code --coverage} on 2 and 4 threads with a segment per PSB
     * equal the one-thread decode's: each segment's edges merged in trace order, with the edge across each seam.
     */
    static void parallel(String name, Path dir, List<String> args, Path tmp, List<String> failures) throws IOException {
        Path map = tmp.resolve("map");
        for (List<String> out : List.of(List.of("--edges"), List.of("--edges", "--format", "jsonl"),
                List.of("--coverage", map.toString()))) {
            String one = ptfence.flow.PtxedCorpusTestAccess.decode(dir, with(with(args, "--threads", "1"),
                    out.toArray(String[]::new)));
            byte[] oneMap = out.contains("--coverage") ? Files.readAllBytes(map) : null;
            for (String threads : List.of("2", "4")) {
                String par = ptfence.flow.PtxedCorpusTestAccess.decode(dir, with(with(args, "--threads", threads,
                        "--segment-bytes", "1"), out.toArray(String[]::new)));
                if (!par.equals(one) || oneMap != null && !java.util.Arrays.equals(oneMap, Files.readAllBytes(map))) {
                    failures.add(name + " " + out + " threads " + threads);
                }
            }
        }
    }

    @Test
    void corpusEdgesEqualTheListing(@TempDir Path tmp) throws IOException {
        Path dir = ptfence.flow.PtxedCorpusTestAccess.corpus();
        List<String> failures = new ArrayList<>();
        long edges = 0;
        int runs = 0;
        for (List<String> run : ptfence.flow.PtxedCorpusTestAccess.runs(dir)) {
            String name = run.get(0);
            List<String> args = run.subList(1, run.size());
            if (args.stream().anyMatch(a -> a.startsWith("--pevent:"))) {
                continue;
            }
            edges += check(name, dir.resolve(name), args, tmp, failures);
            runs++;
        }
        assertEquals(List.of(), failures);
        assertTrue(runs > 150, "runs " + runs);
        assertTrue(edges > 200, "edges " + edges);
    }

    @Test
    void realTraceEdgesEqualTheListing(@TempDir Path tmp) throws IOException {
        List<String> failures = new ArrayList<>();
        long edges = 0;
        for (String sub : List.of("test_simple.raw", "test_simple.tracedir_2022-07-06")) {
            Path d = ptfence.flow.PtxedCorpusTestAccess.real(sub);
            edges += check(sub, d, List.of("--elf", d.resolve("hello").toString(), "--cpu", "6/85/4", "--pt",
                    d.resolve("pt.bin").toString()), tmp, failures);
        }
        assertEquals(List.of(), failures);
        assertTrue(edges > 1000, "edges " + edges);
    }

    /**
     * The DynamoRIO trace 4 times over (each copy starts at a PSB where tracing is off) and with PSBs forged after each
     * disable of its first copy (TimedParallelTest): on threads, edges and bitmap equal the one-thread decode's, which
     * equals the listing's.
     */
    @Test
    void realTraceRepeatedEdgesOnThreads(@TempDir Path tmp) throws IOException {
        Path d = ptfence.flow.PtxedCorpusTestAccess.real("test_simple.tracedir_2022-07-06");
        List<String> failures = new ArrayList<>();
        long edges = 0;
        int i = 0;
        for (byte[] t : ptfence.flow.PtxedCorpusTestAccess.dynamorioWithPsbsWhereTracingIsOff()) {
            Path trace = tmp.resolve("t" + i++ + ".pt");
            Files.write(trace, t);
            edges += check(trace.getFileName().toString(), tmp, List.of("--elf", d.resolve("hello").toString(), "--cpu",
                    "6/85/4", "--pt", trace.toString()), tmp, failures);
        }
        assertEquals(List.of(), failures);
        assertTrue(edges > 4 * 1000, "edges " + edges);
    }

    @Test
    void bitmapIndexIsTheDocumentedHash() {
        long f = 0x401000;
        long t = 0x401234;
        int hf = (int) ((f * 0x9E3779B97F4A7C15L) >>> 48);
        int ht = (int) ((t * 0x9E3779B97F4A7C15L) >>> 48);
        assertEquals((ht ^ (hf >>> 1)) & 0xffff, EdgeCoverage.index(f, t));
    }
}

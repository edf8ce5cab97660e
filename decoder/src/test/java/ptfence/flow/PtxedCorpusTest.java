package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import ptfence.ptdecode.FlowCommand;

/**
 * libipt's conformance corpus: for every case with a ptxed expectation, run {@code ptdecode flow} with the
 * case's own ptxed options (each CPU variant too) and compare with libipt's expected output, ignoring runs
 * of white space as libipt's suite does.
 */
class PtxedCorpusTest {
    private static final Pattern PTXED_LINE = Pattern.compile("^\"\\$PTXED\" (--insn-decoder|--block-decoder) (.*) > (\\S+)\\s*$");

    record Run(String name, boolean block, List<String> args, Path expected) {}

    static Path corpus() {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path dir = Path.of(shared, "corpus", "libipt");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(dir), "no libipt corpus at " + dir);
        return dir;
    }

    static List<Run> runs(Path dir) throws IOException {
        List<Run> out = new ArrayList<>();
        List<String> index = Files.readAllLines(dir.resolve("INDEX.tsv"));
        for (String row : index.subList(1, index.size())) {
            String[] f = row.split("\t");
            if (!"yes".equals(f[11])) {
                continue;
            }
            Path caseDir = dir.resolve(f[0]);
            for (String line : Files.readAllLines(caseDir.resolve("cmd.sh"))) {
                Matcher m = PTXED_LINE.matcher(line);
                if (!m.matches()) {
                    continue;
                }
                boolean block = m.group(1).equals("--block-decoder");
                List<String> args = new ArrayList<>();
                args.add(m.group(1));
                for (String a : m.group(2).trim().split("\\s+")) {
                    args.add(a);
                }
                String exp = m.group(3).replace("-ptxed-insn", "-ptxed").replace("-ptxed-block", "-ptxed").replace(".out", ".exp");
                out.add(new Run(f[0], block, args, caseDir.resolve(exp)));
            }
        }
        return out;
    }

    static String squash(String s) {
        return s.replaceAll("[ \\t]+", " ").replaceAll(" *\\n *", "\n").trim();
    }

    static String decode(Path caseDir, List<String> args) {
        // ptxed runs inside the case directory: file arguments, and the files sideband records name, are relative to it.
        FlowCommand cmd = new FlowCommand().inDirectory(caseDir);
        new CommandLine(cmd).parseArgs(args.toArray(String[]::new));
        StringWriter sw = new StringWriter();
        try (PrintWriter pw = new PrintWriter(sw)) {
            cmd.decode(pw);
        } catch (RuntimeException e) {
            return "EXCEPTION " + e;
        }
        return sw.toString();
    }

    @Test
    void ptxedCorpus() throws IOException {
        Path dir = corpus();
        TreeMap<String, boolean[]> byCase = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        java.util.Set<String> needSideband = new java.util.TreeSet<>();
        for (Run r : runs(dir)) {
            boolean[] ok = byCase.computeIfAbsent(r.name(), k -> new boolean[] {true, true});
            if (r.args().stream().anyMatch(a -> a.startsWith("--pevent:"))) {
                needSideband.add(r.name());
            }
            String got;
            long t0 = System.nanoTime();
            try {
                got = decode(dir.resolve(r.name()), r.args());
                long ms = (System.nanoTime() - t0) / 1_000_000;
                if (ms > 500) {
                    System.out.println("  slow: " + r.name() + " " + ms + " ms");
                }
            } catch (CommandLine.ParameterException e) {
                got = "OPTIONS " + e.getMessage();
            }
            String want = Files.readString(r.expected());
            if (needSideband.contains(r.name())) {
                // Sideband follows the trace's events in order: asking for threads must not change the result.
                List<String> threaded = new ArrayList<>(r.args());
                threaded.addAll(List.of("--threads", "2", "--segment-bytes", "16"));
                if (!squash(decode(dir.resolve(r.name()), threaded)).equals(squash(want))) {
                    failures.add(r.name() + (r.block() ? " block " : " insn ") + "--threads 2");
                }
            }
            if (!squash(got).equals(squash(want))) {
                ok[r.block() ? 1 : 0] = false;
                failures.add(r.name() + (r.block() ? " block " : " insn ") + r.expected().getFileName());
                if (System.getenv("PTFENCE_CORPUS_DIFF") != null) {
                    System.out.println("=== " + r.name() + (r.block() ? " block" : " insn") + " " + String.join(" ", r.args())
                            + "\n--- want\n" + want + "--- got\n" + got);
                }
            }
        }
        long insn = byCase.values().stream().filter(v -> v[0]).count();
        long block = byCase.values().stream().filter(v -> v[1]).count();
        System.out.println("ptxed corpus insn: " + insn + "/" + byCase.size() + ", block: " + block + "/" + byCase.size());
        failures.forEach(f -> System.out.println("  FAIL " + f));
        assertEquals(List.of(), failures);
        assertEquals(byCase.size(), insn);
        assertEquals(byCase.size(), block);
        assertEquals(201, byCase.size(), "libipt corpus cases with a ptxed expectation");
        assertEquals(10, needSideband.size(), "cases with perf sideband (--pevent:*)");
    }
}

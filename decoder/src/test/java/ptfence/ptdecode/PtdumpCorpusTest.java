package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Runs every case of libipt's conformance corpus (fixtures/data/corpus/libipt) through {@code ptdecode packets}
 * with the exact ptdump options of its cmd.sh and compares with the expected output the libipt test
 * asserts ({@code <name>-ptdump.exp}), ignoring runs of white space as libipt's own suite does.
 */
class PtdumpCorpusTest {
    /** Cases allowed to differ, with the reason. Empty: every case must match. */
    static final Map<String, String> LEGITIMATE_DIFFERENCES = Map.of();

    static Path corpus() {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path dir = Path.of(shared, "corpus", "libipt");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(dir), "no libipt corpus at " + dir);
        return dir;
    }

    /** One ptdump run of a case: its arguments (file arguments made absolute) and the expectation file. */
    record Run(List<String> args, Path expected, Path exactOutput) {}

    /** The ptdump runs of a case's cmd.sh (some cases run once per CPU, each with its own expectation). */
    static List<Run> ptdumpRuns(Path caseDir) throws IOException {
        List<Run> runs = new ArrayList<>();
        for (String line : Files.readAllLines(caseDir.resolve("cmd.sh"))) {
            if (!line.startsWith("\"$PTDUMP\"")) {
                continue;
            }
            String cmd = line.substring("\"$PTDUMP\"".length());
            int redirect = cmd.lastIndexOf(" > ");
            String outName = cmd.substring(redirect + 3).trim();
            cmd = cmd.substring(0, redirect);
            List<String> args = new ArrayList<>();
            for (String a : cmd.trim().split("\\s+")) {
                if (a.isEmpty()) {
                    continue;
                }
                if (!a.startsWith("-") && Files.exists(caseDir.resolve(a))) {
                    a = caseDir.resolve(a).toString();
                }
                args.add(a);
            }
            String expName = outName.replaceAll("\\.out$", ".exp");
            runs.add(new Run(args, caseDir.resolve(expName), caseDir.resolve(outName)));
        }
        if (runs.isEmpty()) {
            throw new IllegalStateException("no ptdump line in " + caseDir.resolve("cmd.sh"));
        }
        return runs;
    }

    static String normalize(String s) {
        StringBuilder b = new StringBuilder();
        for (String line : s.split("\n", -1)) {
            String l = line.replaceAll("\\s+", " ").strip();
            b.append(l).append('\n');
        }
        return b.toString().strip();
    }

    static String run(List<String> args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PacketsCommand cmd = new PacketsCommand();
        cmd.stdout = out;
        cmd.stderr = new PrintStream(err, true, StandardCharsets.UTF_8);
        CommandLine cl = new CommandLine(cmd);
        cl.setErr(new java.io.PrintWriter(err, true));
        cl.execute(args.toArray(String[]::new));
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void everyCorpusCaseMatchesLibiptExpectation() throws IOException {
        Path dir = corpus();
        List<Path> cases;
        try (Stream<Path> s = Files.list(dir)) {
            cases = s.filter(p -> Files.exists(p.resolve("cmd.sh"))).sorted().toList();
        }
        Map<String, String> failures = new TreeMap<>();
        int match = 0;
        int exact = 0;
        int runs = 0;
        for (Path c : cases) {
            String name = c.getFileName().toString();
            StringBuilder diffs = new StringBuilder();
            for (Run r : ptdumpRuns(c)) {
                runs++;
                String expected = Files.readString(r.expected());
                String actual;
                try {
                    actual = run(r.args());
                } catch (RuntimeException e) {
                    diffs.append(r.args()).append(": exception ").append(e).append('\n');
                    continue;
                }
                if (!normalize(expected).equals(normalize(actual))) {
                    diffs.append(r.args()).append("\nexpected:\n").append(expected).append("actual:\n").append(actual);
                } else if (Files.exists(r.exactOutput()) && Files.readString(r.exactOutput()).equals(actual)) {
                    exact++;
                }
            }
            if (diffs.length() == 0) {
                match++;
            } else {
                failures.put(name, diffs.toString());
            }
        }
        System.out.println("ptdump corpus: " + match + "/" + cases.size() + " match (" + exact
                + "/" + runs + " runs byte-identical to ptdump's own output)");
        failures.keySet().removeAll(LEGITIMATE_DIFFERENCES.keySet());
        StringBuilder report = new StringBuilder();
        failures.forEach((k, v) -> report.append("== ").append(k).append('\n').append(v).append('\n'));
        assertTrue(failures.isEmpty(), failures.size() + " cases differ: " + failures.keySet() + "\n" + report);
    }
}

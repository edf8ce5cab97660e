package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The counting fast path ({@code --quiet}: whole TNT packets through the decision-point memo, calls left open and
 * compressed returns to earlier calls included) counts exactly the instructions, and reports exactly the errors,
 * that the full listing of the same decode shows: on every libipt corpus case and the real DynamoRIO traces.
 */
class QuietCountTest {
    private static List<String> errors(String out) {
        return out.lines().filter(l -> l.contains("error:")).toList();
    }

    private static long check(String name, Path dir, List<String> base, List<String> failures) {
        List<String> args = base.stream().filter(a -> !a.equals("--quiet") && !a.startsWith("--stat")
                && !a.startsWith("--format") && !a.equals("--time") && !a.startsWith("--event:")).toList();
        String listing = PtxedCorpusTest.decode(dir, args);
        long listed = listing.lines().filter(l -> l.matches("(\\? )?[0-9a-f]{16}")).count();
        List<String> quietArgs = new ArrayList<>(args);
        quietArgs.addAll(List.of("--quiet", "--stat:insn"));
        String quiet = PtxedCorpusTest.decode(dir, quietArgs);
        String want = "insn: " + listed + ".";
        if (!quiet.contains(want) || !errors(quiet).equals(errors(listing))) {
            failures.add(name + ": quiet " + quiet.lines().filter(l -> l.startsWith("insn")).toList() + " " + errors(quiet)
                    + ", listing " + listed + " " + errors(listing));
        }
        return listed;
    }

    @Test
    void corpusCountsEqualTheListing() throws IOException {
        Path dir = PtxedCorpusTest.corpus();
        List<String> failures = new ArrayList<>();
        long insns = 0;
        for (PtxedCorpusTest.Run r : PtxedCorpusTest.runs(dir)) {
            if (r.args().stream().anyMatch(a -> a.startsWith("--pevent:"))) {
                continue;
            }
            insns += check(r.name() + (r.block() ? " block" : " insn"), dir.resolve(r.name()), r.args(), failures);
        }
        assertEquals(List.of(), failures);
        assertTrue(insns > 1000, "instructions " + insns);
    }

    @Test
    void realTraceCountsEqualTheListing() {
        List<String> failures = new ArrayList<>();
        long insns = 0;
        for (String sub : List.of("test_simple.raw", "test_simple.tracedir_2022-07-06")) {
            Path d = RealTraceTest.dir(sub);
            insns += check(sub, d, List.of("--cpu", "6/85/4", "--elf", d.resolve("hello").toString(), "--pt",
                    d.resolve("pt.bin").toString()), failures);
        }
        assertEquals(List.of(), failures);
        assertEquals(8 + 59_234, insns);
    }
}

package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import ptfence.perfdata.RealRecordings;
import ptfence.ptdecode.FlowCommand;

/**
 * ptxed's --offset, --raw-insn, --att, --filter:addr&lt;n&gt;_* and decoder choice in {@code ptdecode flow}, against
 * libipt's own ptxed: {@code src/test/resources/ptxed-reference} holds what ptxed (libipt 8978561f built here with
 * XED; not the pevent cases, which need libipt-sb) printed for the corpus runs, each line "### case, name, args"
 * and then ptxed's output.
 */
class PtxedOptionsTest {
    record Ref(String dir, String name, List<String> args, String output) {
    }

    static List<Ref> refs(String resource) throws Exception {
        Path p = Path.of(PtxedOptionsTest.class.getResource("/ptxed-reference/" + resource).toURI());
        List<Ref> out = new ArrayList<>();
        String[] head = null;
        StringBuilder body = new StringBuilder();
        for (String l : RealRecordings.lines(p)) {
            if (l.startsWith("### ")) {
                if (head != null) {
                    out.add(new Ref(head[0], head[1], List.of(head[2].split(" ")), body.toString()));
                }
                head = l.substring(4).split("\t");
                body.setLength(0);
            } else if (head != null) {
                body.append(l).append('\n');
            }
        }
        if (head != null) {
            out.add(new Ref(head[0], head[1], List.of(head[2].split(" ")), body.toString()));
        }
        return out;
    }

    /** A line without the offset column ptxed --offset puts first (in brackets for events). */
    private static String withoutOffset(String line) {
        return line.replaceFirst("^(\\[?)[0-9a-f]{16}  ", "$1");
    }

    @Test
    void offsetLinesAreLibiptsFormatAndMostlyItsOffsets() throws Exception {
        Path corpus = PtxedCorpusTest.corpus();
        List<Ref> refs = refs("offset.txt.xz");
        assertEquals(860, refs.size());
        int sameOffsets = 0;
        for (Ref r : refs) {
            String ours = PtxedCorpusTest.squash(PtxedCorpusTest.decode(corpus.resolve(r.dir()), r.args()));
            String theirs = PtxedCorpusTest.squash(r.output());
            assertEquals(strip(theirs), strip(ours), r.name() + ": lines apart from the offset column");
            if (ours.equals(theirs)) {
                sameOffsets++;
            }
        }
        // the offset is where the decoder has read to; after the last bit of a TNT packet libipt has already read
        // ahead to the next event, we not yet (measured: 790 of 860 runs print every offset as ptxed does)
        assertTrue(sameOffsets >= 790, "runs with ptxed's offsets: " + sameOffsets + " of " + refs.size());
    }

    private static String strip(String squashed) {
        StringBuilder sb = new StringBuilder();
        for (String l : squashed.split("\n")) {
            sb.append(withoutOffset(l.replaceFirst("^(\\[?)([0-9a-f]{16}) ", "$1$2  "))).append('\n');
        }
        return sb.toString();
    }

    @Test
    void rawInsnPrintsPtxedsBytesColumn() throws Exception {
        Path corpus = PtxedCorpusTest.corpus();
        List<Ref> refs = refs("raw-insn-att.txt.xz");
        assertEquals(400, refs.size());
        for (Ref r : refs) {
            List<String> args = new ArrayList<>(r.args());
            args.addAll(List.of("--format", "text"));
            String ours = PtxedCorpusTest.decode(corpus.resolve(r.dir()), args);
            // the disassembly is capstone's, ptxed's XED's: compare the address and bytes columns, and events
            assertEquals(columns(r.output()), columns(ours), r.name());
        }
    }

    private static String columns(String out) {
        StringBuilder sb = new StringBuilder();
        for (String l : out.split("\n")) {
            if (l.matches("^(\\? )?[0-9a-f]{16} .*")) {
                sb.append(l.replaceFirst("^((\\? )?[0-9a-f]{16}(?: [0-9a-f]{2})*) .*$", "$1"));
            } else {
                sb.append(l.replaceAll("\\s+", " ").trim());
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    @Test
    void attIsAtAndTSyntax() {
        Path c = PtxedCorpusTest.corpus().resolve("loop-tnt");
        String att = PtxedCorpusTest.decode(c, List.of("--raw", "loop-tnt.bin:0x100000", "--pt", "loop-tnt.pt",
                "--format", "text", "--att"));
        String intel = PtxedCorpusTest.decode(c, List.of("--raw", "loop-tnt.bin:0x100000", "--pt", "loop-tnt.pt",
                "--format", "text"));
        // 48 c7 c0 00 00 00 00: ptxed --att (XED) prints "mov $0x0, %rax", capstone "movq $0, %rax"
        assertTrue(att.lines().anyMatch(l -> l.matches("0{10}100000 +movq? \\$(0x)?0, %rax *")), att);
        assertTrue(intel.lines().anyMatch(l -> l.matches("0{10}100000 +mov rax, 0 *")), intel);
    }

    @Test
    void anyOfTheFourAddressRangesServesSkl014AsInLibipt() throws Exception {
        Path c = PtxedCorpusTest.corpus().resolve("skl014-call");
        String expected = PtxedCorpusTest.squash(Files.readString(c.resolve("skl014-call-ptxed-cpu_6_78.exp")));
        List<String> base = List.of("--raw", "skl014-call.bin:0x1000", "--cpu", "6/78", "--no-inst", "--pt",
                "skl014-call.pt");
        // (the corpus case filters with range 0; libipt's ptxed prints the same for each of these)
        for (List<String> filter : List.of(
                List.of("--filter:addr3_cfg", "1", "--filter:addr3_a", "0x1000", "--filter:addr3_b", "0x10ff"),
                List.of("--filter:addr0_cfg", "1", "--filter:addr0_a", "0x5000", "--filter:addr0_b", "0x50ff",
                        "--filter:addr2_cfg", "1", "--filter:addr2_a", "0x1000", "--filter:addr2_b", "0x10ff"),
                List.of("--filter:addr1_cfg", "1", "--filter:addr1_a", "0x1000", "--filter:addr1_b", "0x10ff",
                        "--filter:addr2_cfg", "2", "--filter:addr2_a", "0x1000", "--filter:addr2_b", "0x1007"))) {
            List<String> args = new ArrayList<>(filter);
            args.addAll(base);
            assertEquals(expected, PtxedCorpusTest.squash(PtxedCorpusTest.decode(c, args)), filter.toString());
        }
        // a TraceStop range alone is no FilterEn range: SKL014's workaround stays off, as without a filter
        List<String> stop = new ArrayList<>(List.of("--filter:addr1_cfg", "2", "--filter:addr1_a", "0x1000",
                "--filter:addr1_b", "0x10ff"));
        stop.addAll(base);
        assertEquals(PtxedCorpusTest.squash(PtxedCorpusTest.decode(c, base)),
                PtxedCorpusTest.squash(PtxedCorpusTest.decode(c, stop)));
        assertFalse(expected.equals(PtxedCorpusTest.squash(PtxedCorpusTest.decode(c, base))));
    }

    @Test
    void decoderChoiceIsInTheHelpAndTheLastOneWins() {
        StringWriter help = new StringWriter();
        new CommandLine(new FlowCommand()).usage(new PrintWriter(help));
        assertTrue(help.toString().contains("--block-decoder"), help.toString());
        assertTrue(help.toString().contains("--insn-decoder"), help.toString());
        Path c = PtxedCorpusTest.corpus().resolve("loop-tnt");
        List<String> base = List.of("--raw", "loop-tnt.bin:0x100000", "--pt", "loop-tnt.pt", "--quiet", "--stat");
        List<String> blockLast = new ArrayList<>(List.of("--insn-decoder", "--block-decoder"));
        blockLast.addAll(base);
        List<String> insnLast = new ArrayList<>(List.of("--block-decoder", "--insn-decoder"));
        insnLast.addAll(base);
        // ptxed --stat counts blocks only with the block decoder
        assertTrue(PtxedCorpusTest.decode(c, blockLast).contains("blocks:"));
        assertFalse(PtxedCorpusTest.decode(c, insnLast).contains("blocks:"));
    }
}

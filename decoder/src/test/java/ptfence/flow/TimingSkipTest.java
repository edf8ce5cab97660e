package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Passing over MTC/CYC without computing time (--skip-timing, automatic when no time is printed) must not change
 * what a decode lists: on every libipt corpus case and on the real DynamoRIO traces, in every format and with both
 * decoders, the output with the timing packets passed over equals the output with them computed (times themselves
 * removed: the options that print them are dropped, and jsonl's event times are cut). And the automatic choice
 * gives exactly the output of the full path for the case's own options.
 */
class TimingSkipTest {
    private static final Set<String> TIME_OPTIONS = Set.of("--time", "--event:time", "--event:tick");

    private static String withoutTimes(String jsonl) {
        return jsonl.replaceAll(",\"tsc\":[0-9]+", "");
    }

    private static List<String> with(List<String> args, String... more) {
        List<String> out = new ArrayList<>(args);
        out.addAll(List.of(more));
        return out;
    }

    /** Returns the number of instruction lines compared. */
    private static long compare(String name, Path dir, List<String> args, List<String> failures) {
        long insns = 0;
        if (!args.contains("--quiet")) {
            String auto = PtxedCorpusTest.decode(dir, args);
            String full = PtxedCorpusTest.decode(dir, with(args, "--skip-timing", "off"));
            if (!auto.equals(full)) {
                failures.add(name + " auto");
            }
        }
        List<String> untimed = args.stream().filter(a -> !TIME_OPTIONS.contains(a)).toList();
        for (String format : List.of("ptxed", "text", "jsonl")) {
            String on = PtxedCorpusTest.decode(dir, with(untimed, "--format", format, "--skip-timing", "on"));
            String off = PtxedCorpusTest.decode(dir, with(untimed, "--format", format, "--skip-timing", "off"));
            if (format.equals("jsonl")) {
                on = withoutTimes(on);
                off = withoutTimes(off);
            }
            if (!on.equals(off)) {
                failures.add(name + " " + format);
            }
            insns += off.lines().filter(l -> l.matches("[0-9a-f]{16}.*") || l.startsWith("{\"type\":\"insn\"")).count();
        }
        return insns;
    }

    @Test
    void corpusListsTheSameEitherWay() throws IOException {
        Path dir = PtxedCorpusTest.corpus();
        List<String> failures = new ArrayList<>();
        int runs = 0;
        long insns = 0;
        for (PtxedCorpusTest.Run r : PtxedCorpusTest.runs(dir)) {
            if (r.args().stream().anyMatch(a -> a.startsWith("--pevent:"))) {
                continue; // sideband applies by time: never skipped (checked by PtxedCorpusTest)
            }
            insns += compare(r.name() + (r.block() ? " block" : " insn"), dir.resolve(r.name()), r.args(), failures);
            runs++;
        }
        assertEquals(List.of(), failures);
        assertTrue(runs > 300, "runs " + runs);
        assertTrue(insns > 1000, "instructions compared " + insns);
    }

    /**
     * An error found while a timing run is the event layer's current packet is reported at the run's first packet,
     * as the full path reports it: TIP.PGE 0x1000, TNT (jne taken to 0x1012, unmapped), CYC MTC, TNT, CYC MTC. The
     * second TNT makes the flow walk from 0x1012: "no memory mapped" at offset 0x20, the CYC after that TNT.
     */
    @Test
    void errorOffsetsInsideTimingRunsStay(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        byte[] psb = new byte[16];
        for (int i = 0; i < 16; i += 2) {
            psb[i] = 0x02;
            psb[i + 1] = (byte) 0x82;
        }
        byte[] rest = {(byte) 0x99, 0x01, 0x02, 0x23, 0x71, 0x00, 0x10, 0, 0, 0, 0, 0x06, 0x0b, 0x59, 0x05, 0x06, 0x0b,
            0x59, 0x06};
        byte[] trace = new byte[psb.length + rest.length];
        System.arraycopy(psb, 0, trace, 0, 16);
        System.arraycopy(rest, 0, trace, 16, rest.length);
        Files.write(dir.resolve("t.pt"), trace);
        Files.write(dir.resolve("c.bin"), new byte[] {0x75, 0x10});
        List<String> args = List.of("--raw", dir.resolve("c.bin") + ":0x1000", "--pt", dir.resolve("t.pt").toString());
        String want = "[enabled]\n0000000000001000\n[20, 1012: error: no memory mapped at this address]\n";
        for (String decoder : List.of("--insn-decoder", "--block-decoder")) {
            for (String skip : List.of("on", "off", "auto")) {
                assertEquals(want, PtxedCorpusTest.decode(dir, with(args, decoder, "--skip-timing", skip)), decoder + " " + skip);
            }
        }
    }

    @Test
    void realTracesListTheSameEitherWay() {
        List<String> failures = new ArrayList<>();
        long insns = 0;
        for (String sub : List.of("test_simple.raw", "test_simple.tracedir_2022-07-06")) {
            Path d = RealTraceTest.dir(sub);
            for (String decoder : List.of("--insn-decoder", "--block-decoder")) {
                List<String> args = List.of(decoder, "--elf", d.resolve("hello").toString(), "--cpu", "6/85/4",
                        "--mtc-freq", "3", "--nom-freq", "37", "--cpuid-0x15.eax", "2", "--cpuid-0x15.ebx", "308",
                        "--event:time", "--pt", d.resolve("pt.bin").toString());
                insns += compare(sub + " " + decoder, d, args, failures);
            }
        }
        assertEquals(List.of(), failures);
        assertEquals(2 * 3 * (8 + 59_234), insns);
    }
}

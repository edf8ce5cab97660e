package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import ptfence.image.ElfSegments;
import ptfence.image.Image;
import ptfence.output.PtxedPrinter;
import ptfence.perfdata.AuxTrace;
import ptfence.perfdata.PerfDataFile;
import ptfence.packet.Errata;

/**
 * HASE's perf.data recordings (real Skylake and Broadwell, perf record -e intel_pt//u): AUX data read with
 * ptfence.perfdata, decoded with the static binary; the instruction sequence must equal both perf 6.1's
 * (--itrace=i1i) and libipt's.
 */
class HaseRecordingTest {
    @ParameterizedTest(name = "{0} {3}")
    @CsvSource({
        "loopy-20180404T162955, loopy, 6/94/3, --insn-decoder",
        "loopy-20180404T162955, loopy, 6/94/3, --block-decoder",
        "control_flow-20180404T163033, control_flow, 6/94/3, --insn-decoder",
        "control_flow-20180404T163033, control_flow, 6/94/3, --block-decoder",
        "loopy-20180514T145114, loopy, 6/61/4, --insn-decoder",
        "loopy-20180514T145114, loopy, 6/61/4, --block-decoder",
        "control_flow-20180515T180451, control_flow, 6/61/4, --insn-decoder",
        "control_flow-20180515T180451, control_flow, 6/61/4, --block-decoder",
    })
    void sequenceEqualsPerfAndLibipt(String rec, String binary, String cpu, String decoder) throws IOException {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path dir = Path.of(shared, "real", "hase", rec);
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(dir), "no recording " + dir);
        Path perf;
        try (Stream<Path> s = Files.list(dir)) {
            perf = s.filter(p -> p.getFileName().toString().endsWith(".perf") || p.getFileName().toString().equals("perf.data.1"))
                    .findFirst().orElseThrow();
        }
        AuxTrace aux = AuxTrace.extract(PerfDataFile.open(perf));
        assertEquals(1, aux.byIndex().size(), "one traced thread");
        byte[] trace = aux.concatenated(aux.byIndex().keySet().iterator().next());

        FlowConfig cfg = new FlowConfig();
        cfg.setCpu(cpu);
        Image image = new Image().addAll(ElfSegments.parse(dir.resolve(binary).toString()));
        StringWriter sw = new StringWriter();
        PrintWriter pw = new PrintWriter(sw);
        FlowDecoder d = new FlowDecoder(image, cfg, CursorInput.of(ByteBuffer.wrap(trace), Errata.of(Errata.Cpu.parse(cpu))),
                new PtxedPrinter(pw, false, false), decoder.equals("--block-decoder"));
        d.run();
        pw.flush();
        List<String> got = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        for (String l : sw.toString().lines().toList()) {
            if (l.matches("[0-9a-f]{16}")) {
                got.add(Long.toHexString(Long.parseUnsignedLong(l, 16)));
            } else if (l.contains("error")) {
                errors.add(l);
            }
        }
        assertEquals(List.of(), errors);
        List<String> perfInsns = Files.readAllLines(dir.resolve("expected/perf61_insns_itrace_i1i.txt")).stream()
                .map(String::trim).filter(l -> !l.isEmpty()).toList();
        List<String> libipt = Files.readAllLines(dir.resolve("expected/insns.libipt.txt")).stream()
                .filter(l -> l.startsWith("I ")).map(l -> l.split(" ")[1]).toList();
        assertEquals(perfInsns, got, "perf --itrace=i1i");
        assertEquals(libipt, got, "libipt");
    }
}

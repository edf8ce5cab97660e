package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The call views' IPC suffix ({@code -F +ipc}) against perf 6.1 on the HASE recordings (MTC only, so perf counts
 * cycles from time; the rule is ptfence.flow.SampleCycles', the sample views' own): a call view counts from its
 * CPU's last call or return sample, not from every branch. perf's bytes; and with the suffix taken out, the lines of
 * the view without {@code -F +ipc} (counting walks the flow an instruction at a time, not by paths).
 */
class CallViewsIpcTest {
    private static final Map<String, String> RECORDINGS = Map.of(
            "control_flow-20180404T163033", "control_flow__control_flow-20180404T163033.perf",
            "control_flow-20180515T180451", "perf.data.1",
            "loopy-20180404T162955", "loopy-20180404T162955.perf",
            "loopy-20180514T145114", "perf.data.1");

    @TempDir
    Path tmp;

    @Test
    void callViewsPrintPerfsIpc() throws Exception {
        int suffixes = 0;
        for (Map.Entry<String, String> r : RECORDINGS.entrySet()) {
            Path dir = RecordingPacketsTest.hase(r.getKey());
            for (String view : List.of("--call-trace", "--call-ret-trace")) {
                List<String> plain = List.of("script", "-i", dir.resolve(r.getValue()).toString(),
                        "--symfs=" + dir.resolve("symfs"), view);
                List<String> args = new ArrayList<>(plain);
                args.addAll(List.of("-F", "+ipc"));
                PerfExitStatusTest.Outcome want = PerfExitStatusTest.perf(tmp, args);
                assertEquals(0, want.status(), want.err());
                PerfExitStatusTest.Outcome got = PerfExitStatusTest.ours(args);
                assertEquals(0, got.status(), got.err());
                assertEquals(want.out(), got.out(), r.getKey() + " " + view + " -F +ipc");
                suffixes += got.out().split("\t IPC: ", -1).length - 1;
                PerfExitStatusTest.Outcome without = PerfExitStatusTest.ours(plain);
                assertEquals(without.out(), got.out().replaceAll(" \t IPC: \\d+\\.\\d\\d \\(\\d+/\\d+\\) ", ""),
                        r.getKey() + " " + view + ": the lines but for the suffix");
            }
        }
        // perf prints three on control_flow 2018-04 in each view (the call into static_init_tls: 0.63, 698/1097)
        assertTrue(suffixes >= 6, suffixes + " IPC suffixes");
    }
}

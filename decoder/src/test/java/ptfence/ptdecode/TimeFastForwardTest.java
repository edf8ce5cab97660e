package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * perf's fast forward before a --time start (intel_pt_fast_forward): at the first state before the start its decoder
 * jumps to the last PSB whose TSC is before it, so the failed walks in between never happen. On the quipper recording
 * (its code missing: most lines are those failures) and a HASE one, for starts all over the trace and in the views
 * perf users run, the call views included, the perf entry's bytes and exit status must be perf 6.1's own. Before:
 * quipper's --itrace=e --time 641.2580, printed 115 errors, perf 17; --call-trace with it 3 lines, perf 21.
 */
class TimeFastForwardTest {
    @TempDir
    Path tmp;

    @Test
    void errorsBeforeTheStartThatPerfJumpsOverAreNotPrinted() throws Exception {
        String quipper = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14").toString();
        List<List<String>> views = List.of(List.of("--itrace=e"), List.of("--itrace=be"),
                List.of("--itrace=i1ie", "--ns"), List.of("--itrace=cepwx"), List.of(),
                // the call views decode under the same filter: its fast forward, its stop, the ratio left unseen
                List.of("--call-trace"), List.of("--call-ret-trace"));
        List<String> times = List.of("641.2569,", "641.25705,", "641.2571,641.2574", "641.25723,641.2575",
                "641.2578,", "641.2580,", "641.2585,641.2590");
        int lines = 0;
        int errors = 0;
        for (String t : times) {
            for (List<String> v : views) {
                List<String> line = new ArrayList<>(List.of("script", "-i", quipper));
                line.addAll(v);
                line.addAll(List.of("--time", t));
                PerfExitStatusTest.Outcome want = PerfExitStatusTest.perf(tmp, line);
                assertEquals(0, want.status(), want.err());
                PerfExitStatusTest.Outcome got = PerfExitStatusTest.ours(line);
                assertEquals(0, got.status(), got.err());
                assertEquals(want.out(), got.out(), "perf " + String.join(" ", line));
                lines += (int) want.out().lines().count();
                errors += (int) want.out().lines().filter(l -> l.contains("Failed to get instruction")).count();
            }
        }
        assertTrue(lines > 500 && errors > 300, "perf's lines " + lines + ", errors " + errors);

        // HASE (code present): starts inside the trace, after a trace end, after the last one, and a range of one
        // instant. perf's thread stack sees only the states its filter samples (the call depth starts at the first
        // state inside), the cbr shown there carries that state's flags, a trace end is such a state, and a CBR
        // packet that repeats the ratio is none. Before, most of the call-view runs here differed (depth, cbr
        // flags, an extra cbr) and bep where the start fell just before a trace end.
        Map<String, List<String>> starts = new LinkedHashMap<>();
        starts.put("control_flow-20180404T163033/control_flow__control_flow-20180404T163033.perf", List.of(
                "969388.448429905,", "969388.448429905,969388.448432905", "969388.4484302,", "969388.44843,",
                "969388.448431572,", "969388.4484357,", "969388.448435572,969388.448435572"));
        starts.put("loopy-20180404T162955/loopy-20180404T162955.perf", List.of("969349.987564262,",
                "969349.987566,", "969349.98757,969349.9875743", "969349.9875756,", "969349.987574,969349.987575"));
        int runs = 0;
        int haseLines = 0;
        for (Map.Entry<String, List<String>> e : starts.entrySet()) {
            String name = e.getKey();
            Path hase = RecordingPacketsTest.hase(name.substring(0, name.indexOf('/')));
            String rec = hase.resolve(name.substring(name.indexOf('/') + 1)).toString();
            for (String t : e.getValue()) {
                for (List<String> v : List.of(List.of("--itrace=i1ie", "--ns"), List.of("--itrace=bep", "--ns"),
                        List.of("--call-trace"), List.of("--call-ret-trace"))) {
                    List<String> line = new ArrayList<>(List.of("script", "-i", rec,
                            "--symfs=" + hase.resolve("symfs")));
                    line.addAll(v);
                    line.addAll(List.of("--time", t));
                    PerfExitStatusTest.Outcome want = PerfExitStatusTest.perf(tmp, line);
                    assertEquals(0, want.status(), want.err());
                    assertEquals(want.out(), PerfExitStatusTest.ours(line).out(), "perf " + String.join(" ", line));
                    runs++;
                    haseLines += (int) want.out().lines().count();
                }
            }
        }
        assertEquals(48, runs);
        assertTrue(haseLines > 800, "perf's lines " + haseLines);
    }
}

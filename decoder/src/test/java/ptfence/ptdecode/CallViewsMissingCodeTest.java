package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * perf's call views ({@code --call-trace}, {@code --call-ret-trace}) where the code is missing, against perf 6.1 run
 * here (skipped without perf): the trace begins where perf's scan found an IP, at its time; the errors perf reports
 * by its per-file data status (two per missing file, one where a recorded sample or a vdso mapping read it first);
 * no branch flags on the events after an error; the thread's stack kept over a walk that found no code.
 */
class CallViewsMissingCodeTest {
    @ParameterizedTest
    @ValueSource(strings = {"loopy-20180404T162955", "loopy-20180514T145114", "control_flow-20180404T163033",
            "control_flow-20180515T180451"})
    void haseWithoutItsBinaryPrintsPerfsCallViews(String name, @TempDir Path tmp) throws Exception {
        Path rec = MissingCodeRecoveryTest.alone(tmp, name);
        for (String view : List.of("--call-trace", "--call-ret-trace")) {
            String want = MissingCodeRecoveryTest.perf(tmp, "script", "-i", rec.toString(), view);
            assertTrue(want.lines().count() >= 4, want);
            RecordingFlowTest.Run r = RecordingFlowTest.ptdecode(view, rec.toString());
            assertEquals(0, r.exit(), r.err());
            assertEquals(want, r.out(), name + " " + view);
        }
    }

    /**
     * The quipper recording (kernel and user, two CPUs, none of its code here): perf's bytes, its recorded {@code
     * cycles} samples among the lines (they read their files' code, which decides the errors perf reports), with the
     * decode split over 1 or 4 threads.
     */
    @ParameterizedTest
    @ValueSource(strings = {"--call-trace", "--call-ret-trace"})
    void quipperWithoutItsCodePrintsPerfsCallViews(String view, @TempDir Path tmp) throws Exception {
        Path rec = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14");
        String want = MissingCodeRecoveryTest.perf(tmp, "script", "-i", rec.toString(), view);
        assertTrue(want.lines().count() > 100, want);
        assertTrue(want.lines().filter(l -> l.startsWith(" instruction trace error ")).count() > 50, want);
        for (String threads : List.of("1", "4")) {
            RecordingFlowTest.Run r = RecordingFlowTest.ptdecode(view, "--threads", threads, rec.toString());
            assertEquals(0, r.exit(), r.err());
            assertEquals(want, r.out(), view + " --threads " + threads);
        }
    }
}

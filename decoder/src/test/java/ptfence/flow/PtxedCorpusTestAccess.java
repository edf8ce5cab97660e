package ptfence.flow;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The corpus runs and real-trace directories of PtxedCorpusTest and RealTraceTest, for tests in other packages. */
public final class PtxedCorpusTestAccess {
    private PtxedCorpusTestAccess() {}

    public static Path corpus() {
        return PtxedCorpusTest.corpus();
    }

    /** Each run as [case name, args...] (the args include the decoder option). */
    public static List<List<String>> runs(Path dir) throws IOException {
        List<List<String>> out = new ArrayList<>();
        for (PtxedCorpusTest.Run r : PtxedCorpusTest.runs(dir)) {
            List<String> l = new ArrayList<>();
            l.add(r.name());
            l.addAll(r.args());
            out.add(l);
        }
        return out;
    }

    /** ptdecode flow with these arguments, in {@code dir}: its output ("EXCEPTION ..." if it threw). */
    public static String decode(Path dir, List<String> args) {
        return PtxedCorpusTest.decode(dir, args);
    }

    public static Path real(String sub) {
        return RealTraceTest.dir(sub);
    }

    /**
     * The DynamoRIO trace 4 times over, and with PSBs where tracing is off forged after each disable of its first copy,
     * without and with errors there (TimedParallelTest#withPsbsWhereTracingIsOff).
     */
    public static List<byte[]> dynamorioWithPsbsWhereTracingIsOff() throws IOException {
        byte[] four = TimedParallelTest.dynamorio(4);
        return List.of(four, TimedParallelTest.withPsbsWhereTracingIsOff(four, 1, 0),
                TimedParallelTest.withPsbsWhereTracingIsOff(four, 1, 2, 0x04),
                TimedParallelTest.withPsbsWhereTracingIsOff(four, 1, 2, 0x01));
    }
}

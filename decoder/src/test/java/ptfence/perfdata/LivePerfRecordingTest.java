package ptfence.perfdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A recording made right now by this machine's perf (file and pipe mode, software events, so no Intel PT needed):
 * the reader agrees with perf's own -D dump and header. Skipped when perf is absent or may not record.
 */
class LivePerfRecordingTest {
    @TempDir
    Path dir;

    private Path record(boolean pipe) throws Exception {
        Path out = dir.resolve(pipe ? "live.pipe.perf" : "live.perf");
        PerfToolTest.Run r = pipe
                ? PerfToolTest.perf(dir, "record", "-q", "-e", "cpu-clock", "-a", "-o", "-", "--", "sleep", "0.2")
                : PerfToolTest.perf(dir, "record", "-q", "-e", "cpu-clock", "-a", "-o", out.toString(), "--", "sleep", "0.2");
        Assumptions.assumeTrue(r.exit() == 0, "perf record may not run here: " + r.err());
        if (pipe) {
            Files.copy(dir.resolve("perf.out"), out);
        }
        return out;
    }

    private void agreesWithPerfDump(Path p, boolean pipe) throws Exception {
        PerfToolTest.Run run = PerfToolTest.perf(dir, "report", "-D", "-i", p.toString());
        assertEquals(0, run.exit(), run.err());
        List<String> lines = List.of(run.out().split("\n"));
        try (PerfDataFile f = PerfDataFile.open(p)) {
            assertEquals(pipe, f.pipeMode());
            Map<Long, PerfRecord> byOffset = new HashMap<>();
            Map<String, Long> counts = new TreeMap<>();
            for (RealRecordingsTest.Positioned x : RealRecordingsTest.readAll(f)) {
                byOffset.put(x.offset(), x.record());
                counts.merge(x.record().typeName(), 1L, Long::sum);
            }
            List<RealRecordings.DumpedRecord> dumped = RealRecordings.dumpedRecords(lines, pipe);
            assertFalse(dumped.isEmpty());
            for (RealRecordings.DumpedRecord d : dumped) {
                PerfRecord ours = byOffset.get(d.offset());
                assertNotNull(ours, "record at 0x" + Long.toHexString(d.offset()));
                assertEquals(d.type(), ours.typeName());
                assertEquals(d.size(), RecordEncoder.encode(ours).length());
            }
            Map<String, Long> stats = new TreeMap<>(RealRecordings.aggregatedStats(lines));
            long total = stats.remove("TOTAL");
            if (pipe) {
                // perf's stats leave out the pipe header records it consumed itself
                counts.keySet().removeIf(k -> !stats.containsKey(k));
            }
            assertEquals(stats, counts);
            if (!pipe) {
                assertEquals(total, byOffset.size());
            }
            String header = PerfToolTest.perf(dir, "report", "--header-only", "-I", "-i", p.toString()).out();
            for (String want : List.of("# hostname : " + f.features().hostname().orElseThrow(),
                    "# os release : " + f.features().osRelease().orElseThrow(),
                    "# arch : " + f.features().arch().orElseThrow(),
                    "# cpudesc : " + f.features().cpuDesc().orElseThrow(),
                    "# cpuid : " + f.features().cpuId().orElseThrow(),
                    "# nrcpus online : " + f.features().nrCpus().orElseThrow().online(),
                    "# cmdline : " + String.join(" ", f.features().cmdline()))) {
                assertTrue(header.contains(want), "perf's header shows '" + want + "'");
            }
            if (!pipe) {
                assertTrue(f.features().get(Feature.CACHE, Feature.Caches.class).isPresent());
                assertTrue(f.features().get(Feature.NUMA_TOPOLOGY, Feature.NumaTopology.class).isPresent());
            }
            for (Feature.CacheLevel l : f.features().get(Feature.CACHE, Feature.Caches.class).map(Feature.Caches::caches)
                    .orElse(List.of())) {
                assertTrue(header.contains(String.format("#  L%d %-15s %8s [%s]", l.level(), l.type(), l.size(),
                        l.cpus())), "cache " + l);
            }
            for (Feature.NumaNode n : f.features().get(Feature.NUMA_TOPOLOGY, Feature.NumaTopology.class)
                    .map(Feature.NumaTopology::nodes).orElse(List.of())) {
                assertTrue(header.contains("# node" + n.node() + " meminfo  : total = " + n.memTotalKib() + " kB, free = "
                        + n.memFreeKib() + " kB"), "node " + n);
                assertTrue(header.contains("# node" + n.node() + " cpu list : " + n.cpus()), "node " + n);
            }
            for (Feature.EventDescEntry e : f.features().eventDesc()) {
                assertTrue(header.contains("# event : name = " + e.name() + ", "), e.name());
            }
            for (AttrIds a : f.attrs()) {
                StringBuilder ids = new StringBuilder("id = { ");
                for (int i = 0; i < a.ids().size(); i++) {
                    ids.append(i == 0 ? "" : ", ").append(a.ids().get(i));
                }
                assertTrue(header.contains(ids + " }"), ids.toString());
            }
        }
    }

    @Test
    void fileModeRecordingOfThisMachine() throws Exception {
        agreesWithPerfDump(record(false), false);
    }

    @Test
    void pipeModeRecordingOfThisMachine() throws Exception {
        agreesWithPerfDump(record(true), true);
    }
}

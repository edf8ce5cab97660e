package ptfence.perfdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** reader(writer(x)) == x for every record type, every feature, and the flush/kill contract. */
class RoundTripTest {
    @TempDir
    Path dir;

    static List<PerfRecord> readAll(Path p) throws IOException {
        try (PerfDataFile f = PerfDataFile.open(p)) {
            return f.stream().toList();
        }
    }

    /** Element by element, so a failure names the record. */
    static void assertRecords(List<PerfRecord> expected, List<PerfRecord> actual, String what) {
        for (int i = 0; i < Math.min(expected.size(), actual.size()); i++) {
            assertEquals(expected.get(i), actual.get(i), what + ": record " + i);
        }
        assertEquals(expected.size(), actual.size(), what + ": number of records");
    }

    @Test
    void everyRecordTypeAndFeatureSurvivesWriteThenRead() throws IOException {
        EventAttr pt = Samples.ptAttr();
        EventAttr sb = Samples.sidebandAttr(Samples.PT_SAMPLE_TYPE);
        List<AttrIds> attrs = List.of(new AttrIds(pt, List.of(153L, 154L, 155L, 156L)),
                new AttrIds(sb, List.of(157L, 158L, 159L, 160L)));
        List<PerfRecord> records = Samples.everyType(Samples.SID_LAYOUT, 157);
        Map<Integer, Feature> features = Samples.features(pt, sb);
        // the sections read for the header's lines (perf script --header): each comes back as it was written
        features.put(Feature.CPU_TOPOLOGY, new Feature.CpuTopology(List.of("0-1"), List.of("0", "1"),
                Samples.longs(1L << 32, 1L << 32 | 1)));
        features.put(Feature.GROUP_DESC, new Feature.GroupDesc(List.of(new Feature.Group("{anon_group}", 0, 2))));
        features.put(Feature.MEM_TOPOLOGY, new Feature.MemTopology(1, 0x8000000, List.of(
                new Feature.MemoryNode(0, 199, 199, List.of(-1L, -1L, -1L, 0x7fL)))));
        features.put(Feature.CLOCK_DATA, new Feature.ClockData(1, 11, 1_795_931_722_729_445_000L, 42));
        features.put(Feature.COMPRESSED, new Feature.Compressed(0, 1, 1, 2, 528384));
        features.put(Feature.CPU_PMU_CAPS, new Feature.PmuCapsList(Feature.CPU_PMU_CAPS, List.of(
                new Feature.PmuCaps(List.of(new Feature.PmuCap("branches", "32")), null))));
        features.put(Feature.PMU_CAPS, new Feature.PmuCapsList(Feature.PMU_CAPS, List.of(
                new Feature.PmuCaps(List.of(new Feature.PmuCap("max_precise", "3")), "cpu_core"))));
        features.put(Feature.HYBRID_TOPOLOGY, new Feature.HybridTopology(List.of(
                new Feature.HybridNode("cpu_core", "0-7"), new Feature.HybridNode("cpu_atom", "8-15"))));
        Path p = dir.resolve("every.perf");
        try (PerfDataWriter w = PerfDataWriter.create(p, attrs)) {
            features.values().forEach(w::setFeature);
            for (PerfRecord r : records) {
                w.write(r);
            }
        }
        Set<Integer> types = new HashSet<>();
        records.forEach(r -> types.add(r.type()));
        for (int t = 1; t <= RecordTypes.AUX_OUTPUT_HW_ID; t++) {
            assertTrue(types.contains(t), "example of kernel type " + t);
        }
        for (int t = RecordTypes.HEADER_EVENT_TYPE; t <= RecordTypes.FINISHED_INIT; t++) {
            assertTrue(types.contains(t), "example of user type " + t);
        }
        try (PerfDataFile f = PerfDataFile.open(p)) {
            assertEquals(attrs, f.attrs());
            assertRecords(records, f.stream().toList(), "every type");
            Map<Integer, Feature> expected = new LinkedHashMap<>(features);
            long auxOffset = -1;
            PerfDataFile.RecordReader rr = f.records();
            while (rr.hasNext()) {
                if (rr.next() instanceof PerfRecord.Auxtrace) {
                    auxOffset = rr.offset();
                }
            }
            expected.put(Feature.AUXTRACE, new Feature.AuxtraceIndex(List.of(new Feature.AuxtraceIndexEntry(auxOffset, 48))));
            assertEquals(new java.util.TreeMap<>(expected), new java.util.TreeMap<>(f.features().all()));
            assertEquals("eddie", f.features().hostname().orElseThrow());
            assertEquals(List.of("bpf_prog_6deef7357e7b4530_sd_fw_egress"),
                    f.stream(PerfRecord.Ksymbol.class).map(PerfRecord.Ksymbol::name).toList());
            PerfRecord.TimeConv tc = AuxTrace.extract(f).timeConv().orElseThrow();
            assertEquals(123, tc.timeCycles());
            assertEquals(-1, tc.timeMask());
            assertTrue(tc.capUserTimeZero() && tc.capUserTimeShort());
            Feature.BpfProgInfo prog = f.features().bpfProgInfo().get(0);
            assertEquals(42, prog.progId());
            assertEquals("sd_fw_egress", prog.name());
            assertEquals(11, prog.jitedInsns().remaining());
            assertEquals(0xffffffffc0001000L, prog.jitedKsyms()[0]);
            assertEquals(11, prog.jitedFuncLens()[0]);
            assertEquals(ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}),
                    prog.array(Feature.BpfProgInfo.ARRAY_PROG_TAGS));
            assertEquals(0x119, prog.arrays()); // JITED_INSNS, JITED_KSYMS, JITED_FUNC_LENS, PROG_TAGS
            AuxTrace aux = AuxTrace.extract(f);
            assertEquals(new AuxTrace.AuxFlagCounts(2, 0x580, 1, 0, 1, 1), aux.flags());
            assertEquals(java.util.Map.of(2, aux.flags()), aux.flagsByCpu());
            assertEquals(Samples.ptInfo("filter 0x400000/0x1000@/bin/ls"), aux.intelPt().orElseThrow());
        }
    }

    @Test
    void recordsFindTheirAttrByIdentifierWhenSampleTypesDiffer() throws IOException {
        long sbLayout = SampleType.TID | SampleType.TIME | SampleType.IDENTIFIER;
        EventAttr pt = Samples.ptAttr();
        EventAttr sb = Samples.sidebandAttr(sbLayout | SampleType.IP);
        List<AttrIds> attrs = List.of(new AttrIds(pt, List.of(153L, 154L)), new AttrIds(sb, List.of(157L, 158L)));
        List<PerfRecord> records = new ArrayList<>(Samples.everyType(sbLayout, 158));
        records.addAll(Samples.everyType(Samples.SID_LAYOUT, 154));
        Path p = dir.resolve("mixed.perf");
        try (PerfDataWriter w = PerfDataWriter.create(p, attrs)) {
            for (PerfRecord r : records) {
                w.write(r);
            }
        }
        assertRecords(records, readAll(p), "mixed");
    }

    private Path snapshot(Path p, String name) throws IOException {
        Path copy = dir.resolve(name);
        Files.copy(p, copy);
        return copy;
    }

    @Test
    void aKilledWriterLeavesEverythingUpToTheLastFlush() throws IOException {
        EventAttr pt = Samples.ptAttr();
        List<AttrIds> attrs = List.of(new AttrIds(pt, List.of(1L, 2L)));
        List<PerfRecord> first = Samples.everyType(Samples.SID_LAYOUT, 1);
        Path p = dir.resolve("live.perf");
        PerfDataWriter w = PerfDataWriter.create(p, attrs);
        assertEquals(List.of(), readAll(snapshot(p, "empty.perf")));
        w.setFeature(new Feature.Text(Feature.HOSTNAME, "eddie"));
        for (PerfRecord r : first) {
            w.write(r);
        }
        w.flush();
        // killed right after the flush: records and features
        Path justFlushed = snapshot(p, "flushed.perf");
        assertRecords(first, readAll(justFlushed), "just flushed");
        try (PerfDataFile f = PerfDataFile.open(justFlushed)) {
            assertEquals("eddie", f.features().hostname().orElseThrow());
        }
        // more records, one so big it goes straight to the file over the feature sections
        ByteBuffer big = Samples.ptBytes(3 << 20);
        w.write(new PerfRecord.Auxtrace(0, big.remaining(), 0, 7, 0, 1, 0, 0, big));
        w.write(new PerfRecord.FinishedRound(0));
        Path killed = snapshot(p, "killed.perf");
        assertRecords(first, readAll(killed), "killed after the flush");
        w.close();
        List<PerfRecord> all = readAll(p);
        assertEquals(first.size() + 2, all.size());
        assertEquals(first, all.subList(0, first.size()));
        try (PerfDataFile f = PerfDataFile.open(p)) {
            assertEquals("eddie", f.features().hostname().orElseThrow());
            assertEquals(2, f.features().auxtraceIndex().size());
            assertEquals(big, AuxTrace.extract(f).buffers().get(1).data());
        }
    }

    @Test
    void realRecordingsSurviveReadWriteRead() throws IOException {
        for (RealRecordings.Case c : RealRecordings.all()) {
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                List<PerfRecord> records = f.stream().toList();
                Path p = dir.resolve(c.name().replace('/', '_') + ".perf");
                try (PerfDataWriter w = PerfDataWriter.create(p, f.attrs())) {
                    for (Feature feat : f.features().all().values()) {
                        if (feat.id() != Feature.AUXTRACE) {
                            w.setFeature(feat);
                        }
                    }
                    for (PerfRecord r : records) {
                        w.write(r);
                    }
                }
                try (PerfDataFile g = PerfDataFile.open(p)) {
                    assertEquals(f.attrs(), g.attrs(), c.name());
                    assertRecords(records, g.stream().toList(), c.name());
                    Map<Integer, Feature> want = new java.util.TreeMap<>(f.features().all());
                    Map<Integer, Feature> got = new java.util.TreeMap<>(g.features().all());
                    want.remove(Feature.AUXTRACE);
                    got.remove(Feature.AUXTRACE);
                    assertEquals(want, got, c.name());
                }
            }
        }
    }

    @Test
    void aPipeModeStreamReadsFromAnInputStream() throws IOException {
        RealRecordings.Case piped = RealRecordings.all().stream().filter(RealRecordings.Case::pipe).findFirst()
                .orElseThrow();
        try (var in = Files.newInputStream(piped.perfData());
                PerfDataFile s = PerfDataFile.read(in, "stdin");
                PerfDataFile f = PerfDataFile.open(piped.perfData())) {
            assertTrue(s.pipeMode());
            assertEquals(f.attrs(), s.attrs());
            assertEquals(f.features().all(), s.features().all());
            assertRecords(f.stream().toList(), s.stream().toList(), "stdin");
        }
    }
}

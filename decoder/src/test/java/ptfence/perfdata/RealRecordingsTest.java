package ptfence.perfdata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** Acceptance on the real recordings: what we read equals what perf 6.1 read (its saved -D dumps). */
class RealRecordingsTest {

    record Positioned(long offset, PerfRecord record) {}

    static List<Positioned> readAll(PerfDataFile f) {
        List<Positioned> out = new ArrayList<>();
        PerfDataFile.RecordReader r = f.records();
        while (r.hasNext()) {
            PerfRecord rec = r.next();
            out.add(new Positioned(r.offset(), rec));
        }
        return out;
    }

    private static Stream<DynamicTest> each(String what, ThrowingCase body) {
        return RealRecordings.all().stream().map(c -> DynamicTest.dynamicTest(what + " " + c, () -> body.run(c)));
    }

    interface ThrowingCase {
        void run(RealRecordings.Case c) throws Exception;
    }

    @TestFactory
    Stream<DynamicTest> everyRecordPerfPrintedIsReadAtTheSameOffsetWithTheSameTypeAndSize() {
        return each("records", c -> {
            List<String> dump = RealRecordings.lines(c.reportD());
            List<RealRecordings.DumpedRecord> dumped = RealRecordings.dumpedRecords(dump, c.pipe());
            assertFalse(dumped.isEmpty(), "perf printed records");
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                assertEquals(c.pipe(), f.pipeMode());
                Map<Long, PerfRecord> byOffset = new HashMap<>();
                for (Positioned p : readAll(f)) {
                    byOffset.put(p.offset(), p.record());
                }
                for (RealRecordings.DumpedRecord d : dumped) {
                    PerfRecord ours = byOffset.get(d.offset());
                    assertNotNull(ours, "a record at 0x" + Long.toHexString(d.offset()));
                    assertEquals(d.type(), ours.typeName(), "type at 0x" + Long.toHexString(d.offset()));
                    assertEquals(d.size(), RecordEncoder.encode(ours).length(),
                            "re-encoded size of " + d.type() + " at 0x" + Long.toHexString(d.offset()));
                }
            }
        });
    }

    @TestFactory
    Stream<DynamicTest> perRecordTypeCountsEqualPerfsAggregatedStats() {
        return each("stats", c -> {
            Map<String, Long> stats = RealRecordings.aggregatedStats(RealRecordings.lines(c.reportD()));
            if (stats.isEmpty()) {
                // perf 6.1 stops on the piped quipper file ("failed to process sample") before its stats; the
                // per-record comparison above covers every record it printed.
                assertTrue(c.pipe(), "only the piped recording lacks perf's stats");
                return;
            }
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                Map<String, Long> ours = new TreeMap<>();
                long total = 0;
                for (PerfRecord r : (Iterable<PerfRecord>) f.stream()::iterator) {
                    ours.merge(r.typeName(), 1L, Long::sum);
                    total++;
                }
                Map<String, Long> theirs = new TreeMap<>(stats);
                assertEquals(theirs.remove("TOTAL"), total, "TOTAL events");
                // "cycles stats:" repeats SAMPLE per event; the first block is the aggregate.
                assertEquals(theirs, ours);
            }
        });
    }

    @TestFactory
    Stream<DynamicTest> extractedAuxBytesEqualTheReferenceExtractor() {
        return each("aux", c -> {
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                AuxTrace aux = AuxTrace.extract(f);
                assertEquals(c.auxBins().keySet(), aux.byIndex().keySet(), "buffer indexes");
                for (var e : c.auxBins().entrySet()) {
                    assertArrayEquals(Files.readAllBytes(e.getValue()), aux.concatenated(e.getKey()),
                            "AUX bytes of idx " + e.getKey());
                }
                for (AuxBuffer b : aux.buffers()) {
                    assertEquals(b.size(), b.data().remaining());
                    // the file offset really is where the bytes are
                    byte[] direct = new byte[(int) Math.min(64, b.size())];
                    try (var ch = java.nio.channels.FileChannel.open(c.perfData())) {
                        ch.read(java.nio.ByteBuffer.wrap(direct), b.fileOffset());
                    }
                    byte[] ours = new byte[direct.length];
                    b.data().get(ours);
                    assertArrayEquals(direct, ours);
                }
            }
        });
    }

    @TestFactory
    Stream<DynamicTest> intelPtAuxtraceInfoEqualsPerfsDecoding() {
        return each("auxtrace_info", c -> {
            List<String> dump = RealRecordings.lines(c.reportD());
            Map<String, String> perf = new HashMap<>();
            boolean in = false;
            for (String l : dump) {
                if (l.contains("PERF_RECORD_AUXTRACE_INFO")) {
                    in = true;
                    continue;
                }
                if (in) {
                    // perf prints "  %-20s%value"
                    if (!l.startsWith("  ") || l.length() < 22) {
                        break;
                    }
                    perf.put(l.substring(2, 22).trim(), l.substring(22).trim());
                }
            }
            assertFalse(perf.isEmpty(), "perf printed the AUXTRACE_INFO");
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                AuxTrace aux = AuxTrace.extract(f);
                IntelPtInfo pt = aux.intelPt().orElseThrow();
                assertEquals(Long.parseLong(perf.get("PMU Type")), pt.pmuType());
                assertEquals(Long.parseLong(perf.get("Time Shift")), pt.timeShift());
                assertEquals(Long.parseLong(perf.get("Time Muliplier")), pt.timeMult());
                assertEquals(Long.parseUnsignedLong(perf.get("Time Zero")), pt.timeZero());
                assertEquals(Long.parseLong(perf.get("Cap Time Zero")) != 0, pt.capUserTimeZero());
                assertEquals(Long.decode(perf.get("TSC bit")), pt.tscBit());
                assertEquals(Long.decode(perf.get("NoRETComp bit")), pt.noretcompBit());
                assertEquals(Long.parseLong(perf.get("Have sched_switch")), pt.haveSchedSwitch());
                assertEquals(Long.parseLong(perf.get("Snapshot mode")) != 0, pt.snapshotMode());
                assertEquals(Long.parseLong(perf.get("Per-cpu maps")) != 0, pt.perCpuMmaps());
                assertEquals(Long.decode(perf.get("MTC bit")), pt.mtcBit());
                assertEquals(Long.decode(perf.get("MTC freq bits")), pt.mtcFreqBits());
                assertEquals(Long.parseLong(perf.get("TSC:CTC numerator")), pt.tscCtcRatioN());
                assertEquals(Long.parseLong(perf.get("TSC:CTC denominator")), pt.tscCtcRatioD());
                assertEquals(Long.decode(perf.get("CYC bit")), pt.cycBit());
                assertEquals(Long.parseLong(perf.get("Max non-turbo ratio")), pt.maxNonTurboRatio());
                assertEquals(Long.parseLong(perf.get("Filter string len.")), pt.filter().length());
                assertEquals(pt, IntelPtInfo.of(pt.toRecord()), "encode/decode");
            }
        });
    }

    @TestFactory
    Stream<DynamicTest> auxtraceIndexFeaturePointsAtTheAuxtraceRecords() {
        return each("auxtrace index", c -> {
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                if (f.pipeMode()) {
                    return; // pipe mode has no feature table
                }
                List<Feature.AuxtraceIndexEntry> index = f.features().auxtraceIndex();
                List<Feature.AuxtraceIndexEntry> actual = new ArrayList<>();
                for (Positioned p : readAll(f)) {
                    if (p.record() instanceof PerfRecord.Auxtrace a) {
                        // perf's index entry: the record's offset and header.size (its payload follows)
                        actual.add(new Feature.AuxtraceIndexEntry(p.offset(), 48));
                    }
                }
                assertEquals(actual, index);
            }
        });
    }

    @TestFactory
    Stream<DynamicTest> reEncodingEveryRealRecordGivesItsOriginalBytes() {
        return each("bytes", c -> {
            byte[] file = Files.readAllBytes(c.perfData());
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                int n = 0;
                for (Positioned p : readAll(f)) {
                    byte[] ours = RecordEncoder.encode(p.record()).toArray();
                    byte[] theirs = java.util.Arrays.copyOfRange(file, (int) p.offset(), (int) p.offset() + ours.length);
                    String where = p.record().typeName() + " at 0x" + Long.toHexString(p.offset());
                    if (p.record() instanceof PerfRecord.Mmap m && !java.util.Arrays.equals(theirs, ours)) {
                        // perf's synthesized kernel MMAPs leave stack bytes after the file name's NUL; only
                        // those may differ
                        int nameEnd = 40 + m.filename().length();
                        assertArrayEquals(java.util.Arrays.copyOf(theirs, nameEnd + 1),
                                java.util.Arrays.copyOf(ours, nameEnd + 1), where);
                        int trailer = ours.length - m.sampleId().size();
                        assertArrayEquals(java.util.Arrays.copyOfRange(theirs, trailer, ours.length),
                                java.util.Arrays.copyOfRange(ours, trailer, ours.length), where);
                        continue;
                    }
                    assertArrayEquals(theirs, ours, where);
                    n++;
                }
                assertTrue(n > 0);
            }
        });
    }

    private static final java.util.regex.Pattern AUX_LINE = java.util.regex.Pattern.compile(
            "^(-?\\d+) (-?\\d+) (0x[0-9a-f]+) \\[0x[0-9a-f]+\\]: PERF_RECORD_AUX offset: (\\S+) size: (\\S+) flags: (\\S+)");

    @TestFactory
    Stream<DynamicTest> auxRecordsAndTheirSampleIdsEqualPerfs() {
        return each("aux records", c -> {
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                Map<Long, PerfRecord> byOffset = new HashMap<>();
                for (Positioned p : readAll(f)) {
                    byOffset.put(p.offset(), p.record());
                }
                int n = 0;
                for (String l : RealRecordings.lines(c.reportD())) {
                    java.util.regex.Matcher m = AUX_LINE.matcher(l);
                    if (!m.find()) {
                        continue;
                    }
                    long off = Long.decode(m.group(3)) + (c.pipe() ? PerfDataFile.PIPE_HEADER_SIZE : 0);
                    PerfRecord.Aux a = (PerfRecord.Aux) byOffset.get(off);
                    assertEquals(Long.decode(m.group(4)), a.auxOffset());
                    assertEquals(Long.decode(m.group(5)), a.auxSize());
                    assertEquals(Long.decode(m.group(6)), a.flags());
                    assertEquals(Integer.parseInt(m.group(1)), a.sampleId().cpu(), "cpu");
                    assertEquals(Long.parseUnsignedLong(m.group(2)), a.sampleId().time(), "time");
                    n++;
                }
                long ours = byOffset.values().stream().filter(PerfRecord.Aux.class::isInstance).count();
                if (!c.pipe()) {
                    assertEquals(ours, n, "perf printed every AUX record");
                    AuxTrace.AuxFlagCounts fc = AuxTrace.extract(f).flags();
                    assertEquals(ours, fc.records());
                    assertTrue(n > 0);
                }
            }
        });
    }
}

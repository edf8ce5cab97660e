package ptfence.perfdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import ptfence.cli.BadInputException;

/**
 * Mutated real recordings (truncations, bit flips in the header, attrs, record sizes, AUXTRACE sizes, feature
 * table, random words) never crash the reader with anything but a BadInputException, never hang, and never
 * allocate by an unchecked size. Truncations must still deliver every record that ends before the cut.
 * {@code -Dptfence.fuzz.perfdata=N} sets the number of mutations (default 100000).
 */
class PerfDataFuzzTest {

    record Original(String name, byte[] bytes, boolean pipe, long dataStart, long dataEnd, List<long[]> spans,
            List<PerfRecord> records) {}

    static Original load(RealRecordings.Case c) throws Exception {
        byte[] bytes = Files.readAllBytes(c.perfData());
        try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
            List<long[]> spans = new ArrayList<>();
            List<PerfRecord> records = new ArrayList<>();
            PerfDataFile.RecordReader r = f.records();
            while (r.hasNext()) {
                PerfRecord rec = r.next();
                long size = RecordEncoder.encode(rec).length();
                long payload = rec instanceof PerfRecord.Auxtrace a ? a.size() : 0;
                spans.add(new long[] {r.offset(), r.offset() + size + payload});
                records.add(rec);
            }
            FileHeader h = f.header();
            return new Original(c.name(), bytes, f.pipeMode(), h.data().offset(), h.data().offset() + h.data().size(),
                    spans, records);
        }
    }

    /** Reads everything a user of the API can reach; returns the records delivered before any damage. */
    static List<PerfRecord> consume(byte[] bytes, int length, List<String> errors) {
        List<PerfRecord> got = new ArrayList<>();
        PerfDataFile f;
        try {
            f = PerfDataFile.of("mutant.perf", ByteBuffer.wrap(bytes, 0, length));
        } catch (BadInputException e) {
            errors.add(e.getMessage());
            return got;
        }
        try {
            f.attrs();
        } catch (BadInputException e) {
            errors.add(e.getMessage());
            return got;
        }
        try {
            f.features();
        } catch (BadInputException e) {
            errors.add(e.getMessage());
        }
        try {
            PerfDataFile.RecordReader r = f.records();
            while (r.hasNext()) {
                PerfRecord rec = r.next();
                got.add(rec);
                if (rec instanceof PerfRecord.AuxtraceInfo info && info.auxType() == PerfRecord.AuxtraceInfo.TYPE_INTEL_PT) {
                    try {
                        IntelPtInfo.of(info); // what AuxTrace.intelPt() decodes
                    } catch (BadInputException e) {
                        errors.add("mutant.perf: " + e.getMessage());
                    }
                }
            }
        } catch (BadInputException e) {
            errors.add(e.getMessage());
        }
        return got;
    }

    static int iterations() {
        return Integer.getInteger("ptfence.fuzz.perfdata", 100_000);
    }

    @Test
    void mutatedRecordingsFailOnlyWithBadInputAndKeepWhatCameBefore() throws Exception {
        List<Original> originals = new ArrayList<>();
        List<byte[]> work = new ArrayList<>();
        for (RealRecordings.Case c : RealRecordings.all()) {
            Original o = load(c);
            originals.add(o);
            work.add(o.bytes().clone()); // mutated in place and restored: no copy per mutation
        }
        int n = iterations();
        long[] kinds = new long[8];
        long[] badInputs = {0};
        assertTimeoutPreemptively(Duration.ofMinutes(4), () -> {
            SplittableRandom rnd = new SplittableRandom(0x9e3779b97f4a7c15L);
            for (int i = 0; i < n; i++) {
                Original o = originals.get(i % originals.size());
                byte[] m = work.get(i % originals.size());
                int kind = rnd.nextInt(8);
                kinds[kind]++;
                String what;
                long cut = -1;
                int length = m.length;
                if (kind == 0) {
                    cut = rnd.nextInt(o.bytes().length);
                    length = (int) cut;
                    what = "truncated to " + cut;
                } else {
                    what = mutate(o, m, kind, rnd);
                }
                List<String> errors = new ArrayList<>();
                List<PerfRecord> got;
                try {
                    got = consume(m, length, errors);
                } catch (Throwable t) {
                    fail(o.name() + " " + what + " (mutation " + i + "): " + t, t);
                    return;
                } finally {
                    restore(o.bytes(), m, what);
                }
                for (String e : errors) {
                    assertTrue(e.startsWith("mutant.perf"), "error names the file: " + e);
                    assertTrue(!e.contains("\n"), "one line: " + e);
                }
                badInputs[0] += errors.isEmpty() ? 0 : 1;
                if (i % 997 == 0) {
                    assertTrue(java.util.Arrays.equals(o.bytes(), m), "mutation " + i + " (" + what + ") was undone");
                }
                if (cut >= 0 && cut >= o.dataStart() + 8 && cut < o.dataEnd()) {
                    int complete = 0;
                    while (complete < o.spans().size() && o.spans().get(complete)[1] <= cut) {
                        complete++;
                    }
                    assertEquals(o.records().subList(0, complete), got,
                            o.name() + " " + what + ": every record before the cut");
                    // a pipe stream has no declared end: cut at a record boundary it is simply shorter
                    boolean atBoundary = complete > 0 && o.spans().get(complete - 1)[1] == cut;
                    if (!(o.pipe() && atBoundary)) {
                        assertTrue(!errors.isEmpty(), o.name() + " " + what + ": the truncation is reported");
                    }
                }
            }
        });
        System.out.printf("perf.data fuzz: %d mutations (truncate %d, header %d, attrs %d, record size %d, auxtrace size %d,"
                + " feature table %d, random word %d, bit flips %d); %d reported bad input%n", n, kinds[0], kinds[1],
                kinds[2], kinds[3], kinds[4], kinds[5], kinds[6], kinds[7], badInputs[0]);
    }

    /**
     * Puts back the bytes a mutation changed: it changes at most a few words, and its description names their
     * offsets; restoring 16 original bytes at every number in it is harmless where a number is no offset.
     */
    private static void restore(byte[] orig, byte[] m, String what) {
        java.util.regex.Matcher num = java.util.regex.Pattern.compile("-?\\d+").matcher(what);
        while (num.find()) {
            String t = num.group();
            if (t.length() < 10) {
                int p = Integer.parseInt(t);
                if (p >= 0 && p < orig.length) {
                    System.arraycopy(orig, p, m, p, Math.min(16, orig.length - p));
                }
            }
        }
    }

    private static String mutate(Original o, byte[] m, int kind, SplittableRandom rnd) {
        ByteBuffer b = ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN);
        switch (kind) {
            case 1: {
                int at = rnd.nextInt(Math.min(m.length, o.pipe() ? 16 : PerfDataFile.FILE_HEADER_SIZE));
                int bit = rnd.nextInt(8);
                m[at] ^= (byte) (1 << bit);
                return "header bit " + bit + " at " + at;
            }
            case 2: {
                int lo = o.pipe() ? 16 : PerfDataFile.FILE_HEADER_SIZE;
                int hi = (int) Math.min(m.length, o.dataStart());
                int at = hi > lo ? lo + rnd.nextInt(hi - lo) : rnd.nextInt(m.length);
                m[at] ^= (byte) (1 << rnd.nextInt(8));
                return "attr/ids byte at " + at;
            }
            case 3: {
                long[] span = o.spans().get(rnd.nextInt(o.spans().size()));
                int at = (int) span[0] + 6 + rnd.nextInt(2);
                int old = m[at];
                m[at] = rnd.nextBoolean() ? (byte) rnd.nextInt(256) : (byte) (m[at] ^ (1 << rnd.nextInt(8)));
                return "record size byte at " + at + " " + old + " -> " + m[at];
            }
            case 4: {
                List<long[]> aux = new ArrayList<>();
                for (int k = 0; k < o.records().size(); k++) {
                    if (o.records().get(k) instanceof PerfRecord.Auxtrace) {
                        aux.add(o.spans().get(k));
                    }
                }
                long[] span = aux.get(rnd.nextInt(aux.size()));
                int at = (int) span[0] + 8;
                long v = rnd.nextBoolean() ? rnd.nextLong() : b.getLong(at) ^ (1L << rnd.nextInt(64));
                b.putLong(at, v);
                return "AUXTRACE size at " + at + " -> " + v;
            }
            case 5: {
                if (o.pipe()) {
                    int at = (int) o.spans().get(rnd.nextInt(o.spans().size()))[0] + 8;
                    if (at + 8 <= m.length) {
                        b.putLong(at, rnd.nextLong());
                    }
                    return "pipe record word at " + at;
                }
                int table = (int) o.dataEnd();
                int at = table + rnd.nextInt(Math.max(1, Math.min(m.length - table, 16 * 20) - 7));
                if (at + 8 <= m.length) {
                    b.putLong(at, rnd.nextBoolean() ? rnd.nextLong() : b.getLong(at) ^ (1L << rnd.nextInt(64)));
                }
                return "feature table/section word at " + at;
            }
            case 6: {
                int at = rnd.nextInt(m.length - 8) & ~7;
                b.putLong(at, rnd.nextLong());
                return "random word at " + at;
            }
            default: {
                int flips = 1 + rnd.nextInt(4);
                StringBuilder s = new StringBuilder("bit flips at");
                for (int k = 0; k < flips; k++) {
                    int at = rnd.nextInt(m.length);
                    m[at] ^= (byte) (1 << rnd.nextInt(8));
                    s.append(' ').append(at);
                }
                return s.toString();
            }
        }
    }
}

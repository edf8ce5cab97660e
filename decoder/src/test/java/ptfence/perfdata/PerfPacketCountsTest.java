package ptfence.perfdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import ptfence.packet.PacketCursor;
import ptfence.packet.PacketType;
import ptfence.packet.TraceSource;

/**
 * Acceptance: for every AUX buffer perf 6.1 dumped (report -D) from the real recordings, the packet decoder run
 * over the buffer we extracted finds the same packets: every packet perf printed is ours at the same offset with
 * the same type, and our packets perf did not print are PADs — perf folds up to 8 bytes of trailing zeros into the
 * packet before them. Per-type counts (PAD in bytes, TNT-8 and TNT-64 together as perf prints them) follow.
 *
 * <p>perf 6.1 dumps pipe-mode AUX data from 16 bytes too early (it reads at the stream offset, which does not count
 * the 16-byte pipe header: its first line shows the tail of the AUXTRACE record itself). For the piped recording
 * the comparison therefore runs over the bytes perf dumped; that our extracted bytes are right is checked against
 * aux_piped-idx*.bin in RealRecordingsTest.
 */
class PerfPacketCountsTest {
    private static final Pattern RECORD_LINE =
            Pattern.compile("^(?:-?\\d+ )*(0x[0-9a-f]+|0) \\[0x[0-9a-f]+\\]: PERF_RECORD_([A-Z0-9_]+)");
    // In the saved piped dump perf's stderr lines landed inside one packet line, between its ". " and its offset.
    private static final Pattern PACKET_LINE =
            Pattern.compile("^(?:\\.\\s+)?([0-9a-f]{8}):\\s+((?:[0-9a-f]{2} )+)\\s*(\\S+)");

    /** One line of perf's packet dump. */
    record Line(long offset, int bytes, String name) {}

    /** perf's dump, per AUXTRACE record (file offset), as its packet lines. */
    static Map<Long, List<Line>> perfDump(List<String> lines, boolean pipe) {
        Map<Long, List<Line>> out = new LinkedHashMap<>();
        List<Line> current = null;
        for (String l : lines) {
            Matcher r = RECORD_LINE.matcher(l);
            if (r.find()) {
                current = null;
                if (r.group(2).equals("AUXTRACE")) {
                    long off = r.group(1).equals("0") ? 0 : Long.parseLong(r.group(1).substring(2), 16);
                    current = out.computeIfAbsent(off + (pipe ? PerfDataFile.PIPE_HEADER_SIZE : 0), k -> new ArrayList<>());
                }
                continue;
            }
            Matcher p = PACKET_LINE.matcher(l);
            if (current != null && p.find()) {
                current.add(new Line(Long.parseLong(p.group(1), 16), p.group(2).trim().split(" ").length, p.group(3)));
            }
        }
        out.values().removeIf(List::isEmpty);
        return out;
    }

    static String perfName(PacketType t) {
        switch (t) {
            case TNT_8: case TNT_64: return "TNT";
            case TIP_PGE: return "TIP.PGE";
            case TIP_PGD: return "TIP.PGD";
            case MODE_EXEC: return "MODE.Exec";
            case MODE_TSX: return "MODE.TSX";
            case PTW: return "PTWRITE";
            case STOP: return "TRACESTOP";
            default: return t.name();
        }
    }

    @TestFactory
    Stream<DynamicTest> everyPacketPerfDumpedIsDecodedAtTheSameOffsetWithTheSameType() {
        return RealRecordings.all().stream().map(c -> DynamicTest.dynamicTest("packets " + c, () -> {
            Map<Long, List<Line>> perf = perfDump(RealRecordings.lines(c.reportD()), c.pipe());
            assertFalse(perf.isEmpty(), "perf dumped AUX data");
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                Map<Long, AuxBuffer> byRecord = new TreeMap<>();
                for (AuxBuffer b : AuxTrace.extract(f).buffers()) {
                    byRecord.put(b.fileOffset() - 48, b);
                }
                byte[] file = java.nio.file.Files.readAllBytes(c.perfData());
                long total = 0;
                for (var e : perf.entrySet()) {
                    AuxBuffer b = byRecord.get(e.getKey());
                    assertNotNull(b, "AUX buffer of the AUXTRACE at 0x" + Long.toHexString(e.getKey()));
                    long from = b.fileOffset() - (c.pipe() ? PerfDataFile.PIPE_HEADER_SIZE : 0);
                    byte[] dumped = java.util.Arrays.copyOfRange(file, (int) from, (int) (from + b.size()));
                    String where = c + " buffer at 0x" + Long.toHexString(e.getKey());
                    total += compare(e.getValue(), dumped, where);
                }
                System.out.printf("%s: %d buffers, %d packets equal to perf's%n", c, perf.size(), total);
            }
        }));
    }

    /** Walks perf's lines and our packets together; returns the number of packets compared. */
    private static long compare(List<Line> perf, byte[] trace, String where) {
        PacketCursor cur = new PacketCursor(TraceSource.of(trace));
        Map<String, Long> ours = new TreeMap<>();
        Map<String, Long> theirs = new TreeMap<>();
        int i = 0;
        long lineEnd = 0;
        long n = 0;
        for (int t; (t = cur.next()) != PacketCursor.END; ) {
            String name = perfName(cur.packetType());
            ours.merge(name, name.equals("PAD") ? 1L : 1L, Long::sum);
            if (i < perf.size() && perf.get(i).offset() == cur.offset()) {
                Line l = perf.get(i++);
                assertEquals(l.name(), name, where + ": packet at 0x" + Long.toHexString(cur.offset()));
                theirs.merge(name, name.equals("PAD") ? l.bytes() : 1L, Long::sum);
                // zero bytes perf folded into this line are PADs for us
                theirs.merge("PAD", (long) (l.bytes() - (name.equals("PAD") ? l.bytes() : cur.size())), Long::sum);
                lineEnd = cur.offset() + l.bytes();
                n++;
            } else {
                assertEquals("PAD", name, where + ": packet at 0x" + Long.toHexString(cur.offset())
                        + " is not in perf's dump, so it must be a PAD folded into the line before");
                assertTrue(cur.offset() < lineEnd, where + ": PAD at 0x" + Long.toHexString(cur.offset())
                        + " lies inside perf's previous line");
            }
        }
        assertEquals(perf.size(), i, where + ": every line perf printed");
        theirs.values().removeIf(v -> v == 0);
        assertEquals(theirs, ours, where + ": per-type counts (PAD in bytes)");
        return n;
    }

    static String libiptName(PacketType t) {
        switch (t) {
            case TNT_8: return "tnt8";
            case TNT_64: return "tnt64";
            case MODE_EXEC: case MODE_TSX: return "mode";
            default: return t.ptdumpName();
        }
    }

    /** libipt's totals line ("T packets=866 errors=0 pad=183 psb=1 ...") of a packets listing. */
    static Map<String, Long> libiptTotals(List<String> lines) {
        Map<String, Long> m = new TreeMap<>();
        for (String l : lines) {
            if (l.startsWith("T ")) {
                for (String kv : l.substring(2).trim().split("\\s+")) {
                    String[] p = kv.split("=");
                    m.put(p[0], Long.parseLong(p[1]));
                }
            }
        }
        return m;
    }

    @TestFactory
    Stream<DynamicTest> extractedStreamsDecodeToLibiptsPacketCounts() {
        return RealRecordings.all().stream().map(c -> DynamicTest.dynamicTest("libipt " + c, () -> {
            try (PerfDataFile f = PerfDataFile.open(c.perfData())) {
                AuxTrace aux = AuxTrace.extract(f);
                for (int idx : c.auxBins().keySet()) {
                    java.nio.file.Path listing = c.name().startsWith("hase/")
                            ? c.reportD().resolveSibling("packets.txt")
                            : c.reportD().resolveSibling("packets." + c.auxBins().get(idx).getFileName().toString()
                                    .replace(".bin", ".txt.xz"));
                    Map<String, Long> want = libiptTotals(RealRecordings.lines(listing));
                    assertFalse(want.isEmpty(), "libipt totals in " + listing);
                    // libipt's listing syncs to the first PSB and decodes the buffers of one index as one stream
                    PacketCursor cur = new PacketCursor(TraceSource.of(aux.concatenated(idx)));
                    Map<String, Long> got = new TreeMap<>();
                    long packets = 0;
                    if (cur.syncForward()) {
                        for (int t; (t = cur.next()) != PacketCursor.END; ) {
                            got.merge(libiptName(cur.packetType()), 1L, Long::sum);
                            packets++;
                        }
                    }
                    got.put("packets", packets);
                    got.put("errors", 0L);
                    assertEquals(want, got, c + " idx " + idx);
                }
            }
        }));
    }
}

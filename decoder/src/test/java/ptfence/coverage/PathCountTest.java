package ptfence.coverage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import ptfence.insn.CodeCache;
import ptfence.insn.ExecMode;
import ptfence.insn.TntPaths;
import ptfence.insn.X86Decoder;

/**
 * Coverage counts TNT paths by the memo's path numbers: checked against edges worked out by hand from the code, over
 * far more distinct paths than the memo keeps (its tables start over many times, renumbering paths), with the same
 * code mapped at two bases.
 */
class PathCountTest {
    // A ladder of 64 rungs, 4 bytes each: "je +2; nop; nop". Taken goes to the next rung, not taken runs the two nops
    // first; either way the next branch is 4 bytes on.
    private static final int RUNGS = 64;
    private static final long[] BASES = {0x400000L, 0x7f0000001000L};

    private static byte[] ladder() {
        byte[] code = new byte[RUNGS * 4 + 40];
        for (int i = 0; i < code.length; i += 4) {
            code[i] = 0x74;
            code[i + 1] = 0x02;
            code[i + 2] = (byte) 0x90;
            code[i + 3] = (byte) 0x90;
        }
        return code;
    }

    @Test
    void pathRunsCountedByNumberGiveTheEdgesOfTheCode() {
        CodeCache cc = CodeCache.of("PathCountTest.ladder", ladder(), ExecMode.BITS64);
        X86Decoder dec = new X86Decoder();
        TntPaths memo = TntPaths.bounded(32);
        EdgeCoverage cov = new EdgeCoverage(new PrintWriter(new StringWriter()), true, true);
        Map<String, Long> expected = new TreeMap<>();
        Map<String, String> names = new HashMap<>(); // (table, number) -> the path it named
        Random rnd = new Random(14);
        long pendingFrom = -1;
        int resets = 0;
        long lastTable = -1;
        for (int n = 0; n < 40_000; n++) {
            int rung = rnd.nextInt(RUNGS);
            int bits = rnd.nextInt(256);
            long base = BASES[rnd.nextInt(8) == 0 ? 1 : 0];
            assertTrue(memo.lookup(cc, rung * 4, bits, 8, false, true, dec), "a ladder path is a simple path");
            long first = base + rung * 4;
            long last = first + 7 * 4;
            assertEquals(last - base, memo.last, "the path's last branch");

            String path = rung + "/" + bits;
            String name = memo.pathTable() + "#" + memo.pathId();
            String before = names.putIfAbsent(name, path);
            assertEquals(before == null ? path : before, path, "one number, one path");
            if (memo.pathTable() != lastTable) {
                resets++;
                lastTable = memo.pathTable();
            }

            // by hand: each branch but the last goes to the next rung (taken) or to its nops
            if (pendingFrom >= 0) {
                expected.merge(edge(pendingFrom, first), 1L, Long::sum);
            }
            for (int i = 0; i < 7; i++) {
                long branch = first + 4L * i;
                boolean taken = ((bits >>> (7 - i)) & 1) != 0;
                expected.merge(edge(branch, branch + (taken ? 4 : 2)), 1L, Long::sum);
            }
            cov.path(base, memo, first, last);
            pendingFrom = last;
        }
        assertTrue(resets > 10, "the memo's tables started over " + resets + " times");

        Map<String, Long> got = new TreeMap<>();
        for (long[] e : cov.edges()) {
            got.put(edge(e[0], e[1]), e[2]);
        }
        Map<String, String> wrong = new TreeMap<>();
        for (String e : expected.keySet()) {
            if (!expected.get(e).equals(got.get(e))) {
                wrong.put(e, expected.get(e) + " expected, got " + got.get(e));
            }
        }
        got.keySet().stream().filter(e -> !expected.containsKey(e)).forEach(e -> wrong.put(e, "not an edge, got " + got.get(e)));
        assertTrue(wrong.isEmpty(), wrong.size() + " of " + expected.size() + " edges wrong, first: "
                + (wrong.isEmpty() ? "" : wrong.entrySet().iterator().next()));
        byte[] bitmap = new byte[EdgeCoverage.MAP_SIZE];
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            String[] ft = e.getKey().split(" ");
            int i = EdgeCoverage.index(Long.parseUnsignedLong(ft[0], 16), Long.parseUnsignedLong(ft[1], 16));
            bitmap[i] = (byte) Math.min(255, (bitmap[i] & 0xff) + e.getValue());
        }
        assertArrayEquals(bitmap, cov.bitmap());
    }

    private static String edge(long from, long to) {
        return String.format("%016x %016x", from, to);
    }
}

package ptfence.func;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import ptfence.image.Section;

/**
 * The summary over a function laid out by hand in x86 bytes, run by hand-built invocations; every expected number
 * comes from the layout and the invocations as written here.
 */
class FuncSummaryTest {
    static final long B = 0xffffffffc0000000L, SUB = B + 0x100, HELPER = 0xffffffff81234560L;

    /**
     * <pre>
     * block A 0x00 push rbp; 0x01 mov rbp,rsp; 0x04 test edi,edi; 0x06 je 0x0f
     * block B 0x08 call HELPER; 0x0d jmp 0x12
     * block C 0x0f add eax,1
     * block D 0x12 cmp edi,10; 0x15 jg 0x19
     * block E 0x17 xor eax,eax
     * block F 0x19 pop rbp; 0x1a ret
     * </pre>
     */
    static byte[] mainCode() {
        ByteBuffer b = ByteBuffer.allocate(0x1b).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x55).put(new byte[] {0x48, (byte) 0x89, (byte) 0xe5}).put(new byte[] {(byte) 0x85, (byte) 0xff})
                .put(new byte[] {0x74, 0x07});
        b.put((byte) 0xe8).putInt((int) (HELPER - (B + 0x0d))).put(new byte[] {(byte) 0xeb, 0x03});
        b.put(new byte[] {(byte) 0x83, (byte) 0xc0, 0x01});
        b.put(new byte[] {(byte) 0x83, (byte) 0xff, 0x0a}).put(new byte[] {0x7f, 0x02});
        b.put(new byte[] {0x31, (byte) 0xc0});
        b.put(new byte[] {0x5d, (byte) 0xc3});
        assertEquals(0x1b, b.position());
        return b.array();
    }

    /** A subprogram nobody calls: xor eax,eax; ret. */
    static final byte[] SUB_CODE = {0x31, (byte) 0xc0, (byte) 0xc3};

    static final byte P = Invocation.STEP_PLAIN, T = Invocation.STEP_TAKEN, N = Invocation.STEP_NOT_TAKEN,
            C = Invocation.STEP_CALL_OUT, J = Invocation.STEP_JUMP;

    /** Builds an invocation from (offset, step) pairs. */
    static Invocation run(long entry, long exit, List<Invocation.Call> calls, int... offsetStep) {
        long[] path = new long[offsetStep.length / 2];
        byte[] steps = new byte[path.length];
        for (int i = 0; i < path.length; i++) {
            path[i] = B + offsetStep[2 * i];
            steps[i] = (byte) offsetStep[2 * i + 1];
        }
        return new Invocation(1, 100, 101, "bpf_prog_x", entry, exit,
                path.length == 2 ? Invocation.End.TRACE_END : Invocation.End.RETURN, path, steps, calls,
                List.of("bpf_prog_x"));
    }

    static Invocation.Call call(long enter, long exit, long insns) {
        return new Invocation.Call(4, B + 0x08, HELPER, "bpf_map_lookup_elem", enter, exit, insns);
    }

    static List<Invocation> invocations() {
        List<Invocation> l = new ArrayList<>();
        // edi == 0: je taken, jg not taken.
        l.add(run(0, 90, List.of(), 0x00, P, 0x01, P, 0x04, P, 0x06, T, 0x0f, P, 0x12, P, 0x15, N, 0x17, P, 0x19, P,
                0x1a, P));
        // edi == 5: je not taken, call, jmp, jg not taken.
        l.add(run(900, 1400, List.of(call(1000, 1300, 50)), 0x00, P, 0x01, P, 0x04, P, 0x06, N, 0x08, C, 0x0d, J,
                0x12, P, 0x15, N, 0x17, P, 0x19, P, 0x1a, P));
        // edi == 20: je not taken, call, jmp, jg taken.
        l.add(run(1900, 2600, List.of(call(2000, 2500, 40)), 0x00, P, 0x01, P, 0x04, P, 0x06, N, 0x08, C, 0x0d, J,
                0x12, P, 0x15, T, 0x19, P, 0x1a, P));
        // edi == 5 again, the call untimed.
        l.add(run(-1, -1, List.of(call(-1, -1, 0)), 0x00, P, 0x01, P, 0x04, P, 0x06, N, 0x08, C, 0x0d, J,
                0x12, P, 0x15, N, 0x17, P, 0x19, P, 0x1a, P));
        // The trace ended two instructions in.
        l.add(run(3000, 3001, List.of(), 0x00, P, 0x01, P));
        return l;
    }

    static FuncSummary summary(int top) {
        return FuncSummary.of("bpf_prog_x", invocations(),
                List.of(Section.of("main", B, mainCode()), Section.of("sub", SUB, SUB_CODE)), top);
    }

    @Test
    void instructionsPerInvocation() {
        FuncSummary s = summary(10);
        assertEquals(5, s.invocations());
        // lengths 10, 11, 10, 11, 2 -> sorted 2 10 10 11 11
        assertEquals(2, s.insnsMin());
        assertEquals(10, s.insnsMedian());
        assertEquals(11, s.insnsMax());
        // An even count: 10 10 11 11 -> the upper middle one, as the plain summary line reports it.
        FuncSummary even = FuncSummary.of("f", invocations().subList(0, 4), List.of(), 1);
        assertEquals(11, even.insnsMedian());
        assertEquals(10, even.insnsMin());
    }

    @Test
    void basicBlocksAndCoverage() {
        FuncSummary s = summary(10);
        long[][] expected = { // start offset, end offset, invocations that ran it
                {0x00, 0x08, 5}, {0x08, 0x0f, 3}, {0x0f, 0x12, 1}, {0x12, 0x17, 4}, {0x17, 0x19, 3},
                {0x19, 0x1b, 4}, {0x100, 0x103, 0}};
        assertEquals(expected.length, s.blocks().size(), s.blocks().toString());
        for (int i = 0; i < expected.length; i++) {
            FuncSummary.Block b = s.blocks().get(i);
            assertEquals(B + expected[i][0], b.start(), "block " + i);
            assertEquals(B + expected[i][1], b.end(), "block " + i);
            assertEquals(expected[i][2], b.invocations(), "block " + i);
        }
        assertEquals(6, s.blocksHit());
        assertEquals(27, s.bytesHit());
        assertEquals(30, s.bytesTotal());
        assertEquals(0, s.outsideBlocks());
    }

    @Test
    void edgeCountsPerConditionalBranch() {
        FuncSummary s = summary(10);
        // Count by hand from the invocations' steps, independently of the class.
        long jeTaken = 0, jeNot = 0, jgTaken = 0, jgNot = 0;
        for (Invocation inv : invocations()) {
            for (int i = 0; i < inv.path().length; i++) {
                long off = inv.path()[i] - B;
                byte st = inv.steps()[i];
                if (off == 0x06) { jeTaken += st == T ? 1 : 0; jeNot += st == N ? 1 : 0; }
                if (off == 0x15) { jgTaken += st == T ? 1 : 0; jgNot += st == N ? 1 : 0; }
            }
        }
        assertEquals(List.of(new FuncSummary.Branch(B + 0x06, B + 0x0f, jeTaken, jeNot),
                new FuncSummary.Branch(B + 0x15, B + 0x19, jgTaken, jgNot)), s.branches());
        assertEquals(List.of(1L, 3L, 1L, 3L), List.of(jeTaken, jeNot, jgTaken, jgNot));
    }

    @Test
    void hottestPathsFirstAndTruncatedToTopN() {
        FuncSummary s = summary(2);
        assertEquals(4, s.distinctPaths());
        assertEquals(2, s.hottestPaths().size());
        FuncSummary.PathCount hot = s.hottestPaths().get(0);
        assertEquals(2, hot.count());
        assertEquals(1, hot.example());
        assertEquals(11, hot.insns());
        assertEquals("NCjN", hot.decisions());
        assertEquals(fnv(invocations().get(1).path()), hot.signature());
        assertEquals(fnv(invocations().get(3).path()), hot.signature(), "same addresses, same signature");
        FuncSummary.PathCount next = s.hottestPaths().get(1);
        assertEquals(1, next.count());
        assertEquals(0, next.example(), "ties keep the order first seen");
        assertEquals("TN", next.decisions());
        assertNotEquals(hot.signature(), next.signature());
    }

    @Test
    void callsOutByTarget() {
        FuncSummary s = summary(10);
        assertEquals(1, s.calls().size());
        FuncSummary.CallStats c = s.calls().get(0);
        assertEquals("bpf_map_lookup_elem", c.name());
        assertEquals(3, c.count());
        assertEquals(2, c.timed());
        assertEquals(300 + 500, c.totalNs());
        assertEquals(400.0, c.meanNs());
        assertEquals(90, c.insns());
    }

    @Test
    void jsonIsOneObjectWithEveryFigure() {
        FuncSummary s = summary(3);
        String json = s.json();
        assertFalse(json.contains("\n"));
        Map<String, Object> o = JsonReader.object(json);
        assertEquals("summary", o.get("type"));
        assertEquals(5L, o.get("invocations"));
        assertEquals(2L, o.get("insns_min"));
        assertEquals(10L, o.get("insns_median"));
        assertEquals(11L, o.get("insns_max"));
        assertEquals(6L, o.get("blocks_hit"));
        assertEquals(7L, o.get("blocks_total"));
        assertEquals(27L, o.get("bytes_hit"));
        assertEquals(30L, o.get("bytes_total"));
        assertEquals(4L, o.get("distinct_paths"));
        List<?> branches = (List<?>) o.get("branches");
        assertEquals(2, branches.size());
        Map<?, ?> je = (Map<?, ?>) branches.get(0);
        assertEquals("0x" + Long.toHexString(B + 6), je.get("address"));
        assertEquals("0x" + Long.toHexString(B + 0xf), je.get("target"));
        assertEquals(1L, je.get("taken"));
        assertEquals(3L, je.get("not_taken"));
        assertEquals(3, ((List<?>) o.get("paths")).size());
        List<?> blocks = (List<?>) o.get("blocks");
        assertEquals(7, blocks.size());
        Map<?, ?> unrun = (Map<?, ?>) blocks.get(6);
        assertEquals("0x" + Long.toHexString(SUB), unrun.get("start"));
        assertEquals("0x" + Long.toHexString(SUB + 3), unrun.get("end"));
        assertEquals(0L, unrun.get("invocations"));
        Map<?, ?> call = (Map<?, ?>) ((List<?>) o.get("calls")).get(0);
        assertEquals(400L, call.get("mean_ns"));
        assertEquals(800L, call.get("total_ns"));
        String text = s.text();
        assertTrue(text.contains("6 of 7 basic blocks") && text.contains("27 of 30 bytes")
                && text.contains("bpf_map_lookup_elem")
                && text.contains("never run:\n  0x" + Long.toHexString(SUB) + "-0x" + Long.toHexString(SUB + 3)), text);
    }

    @Test
    void pathsThroughCodeNotGivenAreCountedOutside() {
        // Only the subprogram's code is given: the main function's instructions are outside every block, and its
        // two conditional branches are reported without targets.
        FuncSummary s = FuncSummary.of("f", invocations(), List.of(Section.of("sub", SUB, SUB_CODE)), 5);
        assertEquals(10 + 11 + 10 + 11 + 2, s.outsideBlocks());
        assertEquals(List.of(new FuncSummary.Branch(B + 0x06, -1, 1, 3), new FuncSummary.Branch(B + 0x15, -1, 1, 3)),
                s.branches());
        Map<?, ?> je = (Map<?, ?>) ((List<?>) JsonReader.object(s.json()).get("branches")).get(0);
        assertTrue(je.containsKey("target") && je.get("target") == null);
        assertTrue(s.text().contains("44 instructions outside the given code"), s.text());
    }

    @Test
    void noInvocationsIsAnEmptySummary() {
        FuncSummary s = FuncSummary.of("f", List.of(), List.of(Section.of("sub", SUB, SUB_CODE)), 5);
        assertEquals(0, s.invocations());
        assertEquals(0, s.blocksHit());
        assertEquals(1, s.blocks().size());
        assertTrue(s.hottestPaths().isEmpty());
        assertEquals(0L, JsonReader.object(s.json()).get("insns_max"));
    }

    private static String fnv(long[] path) {
        long h = 0xcbf29ce484222325L;
        ByteBuffer b = ByteBuffer.allocate(8 * path.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long a : path) b.putLong(a);
        for (byte x : b.array()) {
            h ^= x & 0xff;
            h *= 0x100000001b3L;
        }
        return String.format("%016x", h);
    }
}

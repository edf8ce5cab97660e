package ptfence.func;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import ptfence.cli.JsonReader;

/** The Perfetto/Chrome trace read back with a strict JSON reader and checked against the invocations. */
class PerfettoWriterTest {
    static final long BASE = 1_234_567_890_123L; // perf time, ns

    static Invocation inv(int cpu, long entry, long exit, int insns, List<Invocation.Call> calls) {
        long[] path = new long[insns];
        for (int i = 0; i < insns; i++) path[i] = 0xffffffffc0001000L + 4 * i;
        return new Invocation(cpu, 40 + cpu, 400 + cpu, "bpf_prog_0123456789abcdef_handler", entry, exit,
                Invocation.End.RETURN, path, new byte[insns], calls, List.of("bpf_prog_0123456789abcdef_handler"));
    }

    static Invocation.Call call(int index, String name, long enter, long exit, long insns) {
        return new Invocation.Call(index, 0xffffffffc0001000L + 4 * index, 0xffffffff81200000L, name, enter, exit,
                insns);
    }

    static List<Invocation> timed() {
        return List.of(
                inv(3, BASE + 5_000, BASE + 7_250, 30, List.of(call(4, "bpf_map_lookup_elem", BASE + 5_100,
                        BASE + 5_333, 21), call(20, "bpf_ktime_get_ns", BASE + 6_000, BASE + 6_040, 8))),
                inv(0, BASE, BASE + 1_999, 12, List.of()),
                inv(0, BASE + 3_000, BASE + 3_500, 15, List.of(call(2, "bpf_map_lookup_elem", BASE + 3_010,
                        BASE + 3_400, 0))));
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> events(String json) {
        Map<String, Object> root = JsonReader.object(json);
        return (List<Map<String, Object>>) root.get("traceEvents");
    }

    static double num(Object o) {
        return ((Number) o).doubleValue();
    }

    @Test
    void oneTrackPerCpuOneSlicePerInvocationCallsNestedInside() {
        List<Invocation> in = timed();
        String json = PerfettoWriter.toJson("bpf_prog_0123", in);
        List<Map<String, Object>> ev = events(json);
        assertEquals("perf-time", ((Map<?, ?>) JsonReader.object(json).get("otherData")).get("clock"));

        // Metadata: the process and one named thread per CPU.
        List<String> threadNames = new ArrayList<>();
        for (Map<String, Object> e : ev) {
            if ("M".equals(e.get("ph")) && "thread_name".equals(e.get("name"))) {
                threadNames.add(((Map<?, ?>) e.get("args")).get("name") + "@" + e.get("tid"));
            }
            if ("M".equals(e.get("ph")) && "process_name".equals(e.get("name"))) {
                assertEquals("bpf_prog_0123", ((Map<?, ?>) e.get("args")).get("name"));
            }
        }
        assertEquals(List.of("CPU 0@1", "CPU 3@4"), threadNames);

        List<Map<String, Object>> slices = ev.stream().filter(e -> "X".equals(e.get("ph"))).toList();
        long callsTimed = in.stream().mapToLong(i -> i.calls().size()).sum();
        assertEquals(in.size() + callsTimed, slices.size());

        for (Invocation i : in) {
            Map<String, Object> s = slices.stream().filter(e -> e.get("name").equals(i.function())
                    && Math.abs(num(e.get("ts")) - i.entryTime() / 1000.0) < 1e-6).findFirst().orElseThrow();
            assertEquals((long) i.cpu() + 1, s.get("tid"));
            assertEquals(i.duration() / 1000.0, num(s.get("dur")), 1e-9);
            Map<?, ?> args = (Map<?, ?>) s.get("args");
            assertEquals((long) i.pid(), args.get("pid"));
            assertEquals((long) i.tid(), args.get("tid"));
            assertEquals((long) i.instructions(), args.get("insns"));
            assertEquals("return", args.get("end"));
            double from = num(s.get("ts")), to = from + num(s.get("dur"));
            // Its calls: same track, inside it, named after the callee, with their own durations.
            List<Map<String, Object>> inside = slices.stream().filter(e -> e != s && e.get("tid").equals(s.get("tid"))
                    && num(e.get("ts")) >= from && num(e.get("ts")) + num(e.get("dur")) <= to + 1e-9).toList();
            assertEquals(i.calls().size(), inside.size(), "calls of the invocation at " + i.entryTime());
            for (int k = 0; k < i.calls().size(); k++) {
                Invocation.Call c = i.calls().get(k);
                Map<String, Object> cs = inside.get(k);
                assertEquals(c.name(), cs.get("name"));
                assertEquals(c.enter() / 1000.0, num(cs.get("ts")), 1e-6);
                assertEquals(c.duration() / 1000.0, num(cs.get("dur")), 1e-9);
                assertEquals(c.insns(), ((Map<?, ?>) cs.get("args")).get("insns"));
            }
        }
        // Invocations on one track never overlap.
        for (Map<String, Object> a : slices) {
            for (Map<String, Object> b : slices) {
                if (a == b || !a.get("tid").equals(b.get("tid")) || !a.get("name").equals(b.get("name"))) continue;
                double a0 = num(a.get("ts")), a1 = a0 + num(a.get("dur")), b0 = num(b.get("ts"));
                assertFalse(b0 > a0 && b0 < a1, "overlap on track " + a.get("tid"));
            }
        }
        assertTrue(json.contains("\"ts\":1234567890.123,"), "exact microseconds: " + json);
    }

    @Test
    void withoutTimingAnInstructionClockKeepsCallsNested() {
        List<Invocation> in = List.of(
                inv(2, -1, -1, 10, List.of(call(3, "helper_a", -1, -1, 7), call(6, "helper_b", -1, -1, 0))),
                inv(2, -1, -1, 4, List.of()));
        String json = PerfettoWriter.toJson("f", in);
        assertEquals("instructions", ((Map<?, ?>) JsonReader.object(json).get("otherData")).get("clock"));
        List<Map<String, Object>> x = events(json).stream().filter(e -> "X".equals(e.get("ph"))).toList();
        assertEquals(4, x.size());
        // first invocation: 10 own + 7 callee instructions, from 0
        assertEquals(List.of(0L, 17L), List.of(x.get(0).get("ts"), x.get(0).get("dur")));
        // helper_a after the call instruction at index 3: 0 + 3 + 1, 7 long
        assertEquals(List.of("helper_a", 4L, 7L),
                List.of(x.get(1).get("name"), x.get(1).get("ts"), x.get(1).get("dur")));
        // helper_b: index 6 + 1 + the 7 instructions helper_a ran
        assertEquals(List.of("helper_b", 14L, 0L),
                List.of(x.get(2).get("name"), x.get(2).get("ts"), x.get(2).get("dur")));
        // second invocation right after the first
        assertEquals(List.of(17L, 4L), List.of(x.get(3).get("ts"), x.get(3).get("dur")));
    }

    /** A stream told the trace has no timing writes each invocation at once, the same file as the whole list. */
    @Test
    void aStreamOverAnUntimedTraceWritesAsItGoes() throws Exception {
        List<Invocation> in = List.of(
                inv(2, -1, -1, 10, List.of(call(3, "helper_a", -1, -1, 7), call(6, "helper_b", -1, -1, 0))),
                inv(2, -1, -1, 4, List.of()), inv(0, -1, -1, 3, List.of()));
        StringBuilder sb = new StringBuilder();
        PerfettoWriter.Stream s = new PerfettoWriter.Stream("f", sb, true);
        s.add(in.get(0));
        int afterFirst = sb.length();
        assertTrue(sb.toString().contains("helper_b"), "written on add, not held back: " + sb);
        s.add(in.get(1));
        s.add(in.get(2));
        s.end();
        assertTrue(afterFirst < sb.length());
        java.util.Set<String> streamed = new java.util.HashSet<>(), whole = new java.util.HashSet<>();
        events(sb.toString()).forEach(e -> streamed.add(e.toString()));
        events(PerfettoWriter.toJson("f", in)).forEach(e -> whole.add(e.toString()));
        assertEquals(whole, streamed);
        assertEquals(JsonReader.object(PerfettoWriter.toJson("f", in)).get("otherData"),
                JsonReader.object(sb.toString()).get("otherData"));
    }

    @Test
    void anUntimedCallInATimedTraceIsCountedNotDrawn() {
        Invocation i = inv(1, BASE, BASE + 100, 5, List.of(call(1, "h", -1, -1, 3)));
        List<Map<String, Object>> x = events(PerfettoWriter.toJson("t\"q", List.of(i))).stream()
                .filter(e -> "X".equals(e.get("ph"))).toList();
        assertEquals(1, x.size());
        assertEquals(1L, ((Map<?, ?>) x.get(0).get("args")).get("untimed_calls"));
    }

    @Test
    void inATimedTraceAnInvocationWithoutTimesIsLeftOutAndCounted() {
        List<Invocation> in = new ArrayList<>(timed());
        in.add(inv(0, -1, -1, 9, List.of()));
        String json = PerfettoWriter.toJson("f", in);
        Map<?, ?> other = (Map<?, ?>) JsonReader.object(json).get("otherData");
        assertEquals("perf-time", other.get("clock"));
        assertEquals(4L, other.get("invocations"));
        assertEquals(1L, other.get("untimed_invocations"));
        long drawn = events(json).stream().filter(e -> "X".equals(e.get("ph"))
                && "bpf_prog_0123456789abcdef_handler".equals(e.get("name"))).count();
        assertEquals(3, drawn);
    }

    @Test
    void microsecondsAreExactDecimals() {
        assertEquals("1234567890.123", PerfettoWriter.micros(1_234_567_890_123L));
        assertEquals("0.5", PerfettoWriter.micros(500));
        assertEquals("7", PerfettoWriter.micros(7000));
        assertEquals("12.01", PerfettoWriter.micros(12_010));
        assertEquals("12.001", PerfettoWriter.micros(12_001));
        assertEquals("12.1", PerfettoWriter.micros(12_100));
        assertEquals("-0.25", PerfettoWriter.micros(-250));
        assertEquals("-3.5", PerfettoWriter.micros(-3_500));
    }

    @Test
    void noInvocationsIsAValidEmptyTrace() {
        List<Map<String, Object>> ev = events(PerfettoWriter.toJson("f", List.of()));
        assertEquals(1, ev.size(), "the process name only");
    }
}

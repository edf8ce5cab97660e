package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.JsonReader;

/**
 * The branch and call views of {@code ptdecode RECORDING} against perf 6.1 on HASE's control_flow recording (real
 * Intel PT): --branches is perf script --itrace=b (245 branches, the stored list, and perf's flags and times),
 * --call-trace and --call-ret-trace are perf's (flags, depth, function, time).
 */
class CallViewsHaseTest {
    private static final String NAME = "control_flow-20180404T163033";
    private static final Path DIR = RecordingPacketsTest.hase(NAME);
    private static final Path REC = DIR.resolve("control_flow__control_flow-20180404T163033.perf");
    private static final Path ELF = DIR.resolve("control_flow");

    /** One line of a branch or call view: time, perf's flags, from, to, depth, function name. */
    record Line(String time, String flags, long from, long to, int depth, String name) {
    }

    private static String perf(Path tmp, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("script", "-i", REC.toString(), "--symfs=" + DIR.resolve("symfs")));
        cmd.addAll(List.of(args));
        PerfExitStatusTest.Outcome o = PerfExitStatusTest.perf(tmp, cmd);
        assertEquals(0, o.status(), o.err());
        return o.out();
    }

    private static List<Map<String, Object>> ours(String... view) {
        List<String> args = new ArrayList<>(List.of(view));
        args.addAll(List.of("--format", "jsonl", "--sysroot", DIR.resolve("symfs").toString(), REC.toString()));
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode(args.toArray(String[]::new));
        assertEquals(0, r.exit(), r.err());
        List<Map<String, Object>> out = new ArrayList<>();
        for (String l : r.out().split("\n")) {
            if (!l.isBlank()) {
                out.add(JsonReader.object(l));
            }
        }
        return out;
    }

    private static String seconds(Object ns) {
        long t = ((Number) ns).longValue();
        return String.format("%d.%09d", t / 1_000_000_000L, t % 1_000_000_000L);
    }

    private static long hex(Object o) {
        return Long.parseUnsignedLong(((String) o).substring(2), 16);
    }

    /** Our lines that are branches (events and losses left out). */
    private static List<Line> branchLines(List<Map<String, Object>> json) {
        List<Line> out = new ArrayList<>();
        for (Map<String, Object> j : json) {
            if (j.containsKey("flags")) {
                Object d = j.get("depth");
                out.add(new Line(seconds(j.get("time")), ((String) j.get("flags")).replaceAll(" +", " "),
                        hex(j.get("from")), hex(j.get("to")), d == null ? -1 : ((Number) d).intValue(),
                        (String) j.get("name")));
            }
        }
        return out;
    }

    /**
     * The times our plain flow and perf give each instruction (the same sequence, RecordingFlowTest): a branch's time
     * is its instruction's, so a branch time can only match perf's where the flow's does.
     */
    private static Set<Long> flowTimesDiffer(Path tmp) throws Exception {
        List<String> perfTimes = new ArrayList<>();
        List<Long> ips = new ArrayList<>();
        for (String l : perf(tmp, "--itrace=i1i", "-F", "time,ip", "--ns").split("\n")) {
            String[] f = l.trim().split("[:\\s]+");
            if (f.length == 2) {
                perfTimes.add(f[0]);
                ips.add(Long.parseUnsignedLong(f[1], 16));
            }
        }
        List<String> ourTimes = new ArrayList<>();
        for (Map<String, Object> j : ours()) {
            if (j.containsKey("insn")) {
                ourTimes.add(seconds(j.get("time")));
            }
        }
        assertEquals(perfTimes.size(), ourTimes.size());
        Set<Long> differ = new TreeSet<>();
        for (int i = 0; i < perfTimes.size(); i++) {
            if (!perfTimes.get(i).equals(ourTimes.get(i))) {
                differ.add(ips.get(i));
            }
        }
        assertTrue(differ.size() < perfTimes.size() / 50, "the flow's times are perf's but for a few: " + differ);
        return differ;
    }

    @Test
    void branchesArePerfsItraceB(@TempDir Path tmp) throws Exception {
        List<Line> got = branchLines(ours("--branches"));
        // the stored perf 6.1 list: from, to of every branch sample (0 where tracing starts or stops)
        List<String> stored = Files.readAllLines(DIR.resolve("expected/perf61_branches_itrace_b.txt"));
        assertEquals(245, stored.size());
        assertEquals(stored.size(), got.size());
        for (int i = 0; i < got.size(); i++) {
            String[] f = stored.get(i).trim().split("\\s+");
            assertEquals(Long.parseUnsignedLong(f[0], 16), got.get(i).from(), "from of branch " + i);
            assertEquals(Long.parseUnsignedLong(f[1], 16), got.get(i).to(), "to of branch " + i);
        }
        // flags and times as perf prints them now
        Pattern p = Pattern.compile("^\\s*(\\d+\\.\\d+):\\s+(.*?)\\s+([0-9a-f]+) =>\\s+([0-9a-f]+)\\s*$");
        List<Line> want = new ArrayList<>();
        for (String l : perf(tmp, "--itrace=b", "-F", "time,flags,ip,addr", "--ns").split("\n")) {
            Matcher m = p.matcher(l);
            if (m.matches()) {
                want.add(new Line(m.group(1), m.group(2).replaceAll(" +", " "), Long.parseUnsignedLong(m.group(3), 16),
                        Long.parseUnsignedLong(m.group(4), 16), -1, null));
            }
        }
        assertEquals(245, want.size());
        Set<Long> differ = flowTimesDiffer(tmp);
        int timed = 0;
        for (int i = 0; i < want.size(); i++) {
            Line w = want.get(i);
            Line g = got.get(i);
            assertEquals(w.flags(), g.flags(), "flags of branch " + i + " " + w);
            if (!differ.contains(g.from())) {
                assertEquals(w.time(), g.time(), "time of branch " + i + " " + w);
                timed++;
            }
        }
        assertTrue(timed > 230, timed + " branch times compared");
    }

    /** perf's --call-trace / --call-ret-trace lines: time, flags (ret-trace), depth from the indent, name. */
    private static List<Line> perfCalls(String text) {
        Pattern head = Pattern.compile("(\\d+\\.\\d+):\\s+(.*?)\\s*\\(");
        List<Line> out = new ArrayList<>();
        for (String l : text.split("\n")) {
            int tab = l.indexOf('\t');
            if (tab < 0) {
                continue; // psb, cbr
            }
            Matcher m = head.matcher(l.substring(0, tab));
            assertTrue(m.find(), l);
            String right = l.substring(tab + 1);
            String name = right.strip();
            int spaces = right.length() - right.stripLeading().length();
            int depth = name.isEmpty() ? -1 : name.matches("[0-9a-f]+") ? (spaces - (16 - name.length())) / 4
                    : spaces / 4;
            out.add(new Line(m.group(1), m.group(2).replaceAll(" +", " "), 0, 0, depth, name));
        }
        return out;
    }

    /** Every symbol of the ELF (functions and labels) by address: perf and we may pick different aliases. */
    private static TreeMap<Long, Set<String>> symbols() throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(ELF)).order(ByteOrder.LITTLE_ENDIAN);
        TreeMap<Long, Set<String>> out = new TreeMap<>();
        long shoff = b.getLong(0x28);
        int shentsize = Short.toUnsignedInt(b.getShort(0x3a));
        int shnum = Short.toUnsignedInt(b.getShort(0x3c));
        for (int i = 0; i < shnum; i++) {
            int sh = (int) (shoff + (long) i * shentsize);
            if (b.getInt(sh + 4) != 2) { // SHT_SYMTAB
                continue;
            }
            int off = (int) b.getLong(sh + 0x18);
            int size = (int) b.getLong(sh + 0x20);
            int str = (int) b.getLong((int) (shoff + (long) b.getInt(sh + 0x28) * shentsize) + 0x18);
            for (int e = off; e + 24 <= off + size; e += 24) {
                int type = b.get(e + 4) & 0xf;
                long value = b.getLong(e + 8);
                if ((type == 0 || type == 2) && value != 0 && b.getShort(e + 6) != 0) {
                    int n = str + b.getInt(e);
                    int end = n;
                    while (b.get(end) != 0) {
                        end++;
                    }
                    byte[] s = new byte[end - n];
                    b.get(n, s);
                    out.computeIfAbsent(value, k -> new TreeSet<>()).add(new String(s, StandardCharsets.UTF_8));
                }
            }
        }
        return out;
    }

    private static void sameCalls(List<Line> want, List<Line> got, Set<Long> differ, boolean flags)
            throws IOException {
        TreeMap<Long, Set<String>> syms = symbols();
        Map<String, Long> start = new HashMap<>();
        syms.forEach((a, names) -> names.forEach(n -> start.putIfAbsent(n, a)));
        assertEquals(want.size(), got.size());
        for (int i = 0; i < want.size(); i++) {
            Line w = want.get(i);
            Line g = got.get(i);
            String where = "line " + i + ": perf " + w + ", ours " + g;
            if (flags) {
                assertEquals(w.flags(), g.flags(), where);
            }
            if (w.depth() >= 0) {
                assertEquals(w.depth(), g.depth(), where);
            }
            long at = (g.flags().contains("call") || g.flags().startsWith("tr strt")) && !g.flags().startsWith(
                    "tr end") ? g.to() : g.from();
            if (w.name().isEmpty()) {
                assertEquals(null, g.name(), where); // perf names nothing: no target (a syscall leaving the trace)
            } else if (w.name().matches("[0-9a-f]+")) {
                assertEquals(Long.parseUnsignedLong(w.name(), 16), at, where);
            } else if (g.name() != null) {
                // the same function: perf's name and ours are symbols at the same address
                assertEquals(start.get(w.name()), start.get(g.name()), where);
            } else {
                // a label perf names that is no function symbol (musl's _start): the address is inside it
                assertEquals(start.get(w.name()), syms.floorKey(at), where);
            }
            if (!differ.contains(g.from())) {
                assertEquals(w.time(), g.time(), where);
            }
        }
    }

    @Test
    void callRetTraceIsPerfs(@TempDir Path tmp) throws Exception {
        List<Line> want = perfCalls(perf(tmp, "--call-ret-trace"));
        assertTrue(want.size() > 40, want.toString());
        sameCalls(want, branchLines(ours("--call-ret-trace")), flowTimesDiffer(tmp), true);
    }

    @Test
    void callTraceIsPerfs(@TempDir Path tmp) throws Exception {
        List<Line> want = perfCalls(perf(tmp, "--call-trace"));
        assertTrue(want.size() > 20, want.toString());
        sameCalls(want, branchLines(ours("--call-trace")), flowTimesDiffer(tmp), false);
    }

    /** Our text of a call view with the given perf fields (what the option layer hands the views for -F). */
    private static String ours(boolean branches, boolean returns, ptfence.calls.SampleFields fields, boolean events)
            throws Exception {
        java.io.StringWriter text = new java.io.StringWriter();
        RecordingDecode rd = new RecordingDecode(new RecordingDecode.Request(REC, null, false, null, null, null,
                null, DIR.resolve("symfs"), null, "text", false, false, Long.MIN_VALUE, Long.MAX_VALUE, null, 1,
                false, false), new java.io.PrintStream(java.io.OutputStream.nullOutputStream()));
        rd.load();
        CallViews views = new CallViews();
        views.branches = branches;
        views.callRetTrace = returns;
        views.callTrace = !branches && !returns;
        views.weight = "insns";
        try (java.io.PrintWriter out = new java.io.PrintWriter(text)) {
            views.run(rd, rd.request(), "text", out, new ptfence.calls.LineOptions(fields, events, events,
                    Long.MIN_VALUE, Long.MAX_VALUE));
        }
        return text.toString();
    }

    /**
     * perf's -F choices carry over to the views' text: for each, every line is perf 6.1's but the two whose time the
     * flow gives one CYC step later (the same two in every view).
     */
    @Test
    void fieldsChosenAsWithDashFAreLaidOutAsPerfLaysThemOut(@TempDir Path tmp) throws Exception {
        record Case(String[] perf, boolean branches, boolean returns, ptfence.calls.SampleFields fields,
                boolean events) {
        }
        long all = ptfence.calls.SampleFields.COMM | ptfence.calls.SampleFields.TID | ptfence.calls.SampleFields.TIME
                | ptfence.calls.SampleFields.FLAGS | ptfence.calls.SampleFields.IP | ptfence.calls.SampleFields.SYM
                | ptfence.calls.SampleFields.SYMOFF | ptfence.calls.SampleFields.DSO | ptfence.calls.SampleFields.ADDR;
        List<Case> cases = List.of(
                new Case(new String[] {"--call-ret-trace", "-F", "+pid"}, false, true,
                        ptfence.calls.SampleFields.callRetTrace().with(ptfence.calls.SampleFields.PID), true),
                new Case(new String[] {"--call-trace", "-F", "-cpu,+flags"}, false, false,
                        ptfence.calls.SampleFields.callTrace().without(ptfence.calls.SampleFields.CPU)
                                .with(ptfence.calls.SampleFields.FLAGS), true),
                new Case(new String[] {"--itrace=b", "-F", "comm,tid,time,flags,ip,sym,symoff,dso,addr", "--ns"},
                        true, false, ptfence.calls.SampleFields.branches().only(all).nanosecs(true), false),
                new Case(new String[] {"--itrace=b", "-F", "+callindent,-period,-event,+pid"}, true, false,
                        ptfence.calls.SampleFields.branches().with(ptfence.calls.SampleFields.CALLINDENT)
                                .without(ptfence.calls.SampleFields.PERIOD | ptfence.calls.SampleFields.EVENT)
                                .with(ptfence.calls.SampleFields.PID), false));
        Pattern time = Pattern.compile(" (\\d+\\.\\d{6}(?:\\d{3})?): ");
        for (Case c : cases) {
            List<String> want = perf(tmp, c.perf()).lines().toList();
            List<String> got = ours(c.branches(), c.returns(), c.fields(), c.events()).lines().toList();
            assertEquals(want.size(), got.size(), String.join(" ", c.perf()));
            int timesDiffer = 0;
            for (int i = 0; i < want.size(); i++) {
                if (!want.get(i).equals(got.get(i))) {
                    assertEquals(time.matcher(want.get(i)).replaceFirst(" T: "),
                            time.matcher(got.get(i)).replaceFirst(" T: "), String.join(" ", c.perf()) + " line " + i);
                    timesDiffer++;
                }
            }
            assertTrue(timesDiffer <= 2, timesDiffer + " times differ in " + String.join(" ", c.perf()));
            assertTrue(want.size() > 20, String.join(" ", c.perf()));
        }
    }

    @Test
    void twoViewsAtOnceAreRefusedRatherThanOneDropped() {
        String rec = REC.toString();
        for (String[] args : new String[][] {{"--call-trace", "--branches", rec}, {"--call-trace", "--format",
                "perfetto", rec}, {"--branches", "--func", "main", rec}, {"--format", "folded", "--func", "main", rec},
                {"--format", "folded", "--weight", "cycles", rec}}) {
            RecordingFlowTest.Run r = RecordingFlowTest.ptdecode(args);
            assertEquals(2, r.exit(), String.join(" ", args) + ": " + r.err());
            assertEquals(1, r.err().strip().lines().count(), r.err());
            assertEquals("", r.out());
        }
    }
}

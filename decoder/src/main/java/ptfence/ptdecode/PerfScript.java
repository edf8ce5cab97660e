package ptfence.ptdecode;

import java.io.OutputStream;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;
import ptfence.script.PerfEvents;
import ptfence.script.PerfTime;
import ptfence.script.SidebandLines;
import ptfence.script.SampleSink;
import ptfence.script.TimeRanges;
import ptfence.script.ScriptConfig;
import ptfence.script.ScriptMerge;

/**
 * perf script's lines for a whole recording: every CPU's trace decoded on its own thread into the samples perf's Intel
 * PT decoder makes ({@link SampleSink}), merged by time as perf merges its queues ({@link ScriptMerge}).
 */
final class PerfScript {
    private PerfScript() {
    }

    static void run(RecordingDecode rd, ScriptConfig cfg, SidebandLines.Show show, OutputStream out)
            throws Exception {
        run(rd, cfg, show, out, true);
    }

    /** As {@link #run}; without {@code decode} (perf's --no-itrace) only the recording's own records are printed. */
    static void run(RecordingDecode rd, ScriptConfig cfg, SidebandLines.Show show, OutputStream out, boolean decode)
            throws Exception {
        List<RecordingDecode.CpuTrace> traces = decode ? rd.traces : List.of();
        SidebandLines side = sidebandLines(rd, cfg, show);
        rd.err.print(side.warnings());
        rd.err.flush();
        ScriptMerge merge = new ScriptMerge(traces.size() + (side.isEmpty() ? 0 : 1), rd.turns);
        merge.gates(cfg.dsoData);
        merge.queueLimits(rd.queueLimits);
        merge.perEvent(cfg.perEvent);
        if (cfg.dlfilter != null) {
            merge.calls(new ptfence.script.DlFilterCalls(cfg.dlfilter, rd.symbols));
        }
        Thread sideThread = null;
        if (!side.isEmpty()) {
            ScriptMerge.Producer p = merge.producer(traces.size(), true);
            sideThread = new Thread(() -> side.write(p), "ptdecode-sideband");
            sideThread.setDaemon(true);
            sideThread.start();
        }
        Map<RecordingDecode.CpuTrace, ScriptMerge.Producer> producers = new IdentityHashMap<>();
        Map<RecordingDecode.CpuTrace, SampleSink> sinks = java.util.Collections.synchronizedMap(
                new IdentityHashMap<>());
        for (int i = 0; i < traces.size(); i++) {
            producers.put(traces.get(i), merge.producer(i, false));
        }
        boolean timed = rd.code.timed();
        ptfence.script.ThreadStacks stacks = timed && (cfg.itrace.callchain || cfg.itrace.lastBranch
                || cfg.fields.has(ptfence.script.FieldSet.Type.HW, ptfence.script.FieldSet.CALLINDENT))
                ? new ptfence.script.ThreadStacks(rd.sideband, traces.stream().map(RecordingDecode.CpuTrace::cpu)
                        .toList()) : null;
        Throwable[] failure = new Throwable[1];
        if (!decode) {
            merge.drain(out, new PerfTime(cfg.nanoseconds, cfg.reltime, cfg.deltatime), cfg.itrace.initialSkip);
            if (sideThread != null) {
                sideThread.join();
            }
            return;
        }
        rd.config.hop = cfg.itrace.quick; // perf's q, qq: a walk of the packets alone, no code read
        Thread decoding = new Thread(() -> {
            try {
                rd.decodeCpus(t -> {
                    SampleSink s = new SampleSink(cfg, t.cpu(), t.tid(), rd.sideband, rd.symbols,
                            rd.code.forCpu(t.cpu(), t.tid() >= 0 ? t.tid() : -1), producers.get(t));
                    if (timed && !cfg.time.isEmpty()) {
                        s.timeFilter(timeFilter(rd, cfg.time, t));
                    }
                    if (stacks != null) {
                        s.threadStacks(stacks);
                    }
                    sinks.put(t, s);
                    return s;
                }, (t, d) -> sinks.get(t).decoder(d, tsc -> timed ? rd.code.clock().toPerf(tsc) : -1), t -> {
                    try {
                        SampleSink s = sinks.get(t);
                        if (s != null) {
                            s.endOfTrace();
                        }
                    } finally {
                        producers.get(t).end();
                    }
                });
            } catch (Throwable e) {
                failure[0] = e;
                merge.abandon();
            }
        }, "ptdecode-script");
        decoding.setDaemon(true);
        decoding.start();
        merge.drain(out, new PerfTime(cfg.nanoseconds, cfg.reltime, cfg.deltatime), cfg.itrace.initialSkip);
        decoding.join();
        if (sideThread != null) {
            sideThread.join();
        }
        if (failure[0] instanceof Exception e) {
            throw e;
        }
        if (failure[0] instanceof Error e) {
            throw e;
        }
    }

    /**
     * perf script -D: the records and, unless {@code packets} is off (--no-itrace), the trace's packets. Under -D perf
     * synthesizes nothing from the trace; each recorded sample is followed by its thread, its dso and its script line.
     */
    static void dumpRaw(RecordingDecode rd, ScriptConfig cfg, String label, boolean packets, OutputStream out,
            boolean unordered, boolean rounds) throws Exception {
        java.io.ByteArrayOutputStream lines = new java.io.ByteArrayOutputStream();
        run(rd, cfg, SidebandLines.Show.NONE, lines, false);
        String[] scriptLines = lines.toString(java.nio.charset.StandardCharsets.UTF_8).split("\n", -1);
        int[] next = {0};
        FileOrder order = unordered ? FileOrder.of(rd) : null;
        try (PerfDataFile f = rd.openPerfData()) {
            ptfence.script.RawDump dump = new ptfence.script.RawDump(f, label, packets, s -> {
                String comm = rd.sideband.commAt(s.tid(), s.time());
                String dso = rd.symbols.dso(s.ip(), s.time(), s.pid());
                int i = next[0]++;
                int k = order == null ? i : order.rank[i];
                String line = k < scriptLines.length - 1 ? scriptLines[k] + "\n" : "";
                if (order != null) {
                    // the thread's name as the records read so far left it; the line was made with the name at
                    // the sample's time
                    String now = comm == null ? ":" + s.tid() : comm;
                    comm = order.comm[i];
                    String was = String.format("%16s ", now);
                    if (!now.equals(comm) && line.startsWith(was)) {
                        line = String.format("%16s ", comm) + line.substring(was.length());
                    }
                }
                return " ... thread: " + (comm == null ? ":" + s.tid() : comm) + ":" + s.tid() + "\n ...... dso: "
                        + (dso == null ? "<not found>" : dso) + "\n" + line;
            }, out);
            if (unordered) {
                dump.unordered(rounds);
            }
            dump.run();
        }
    }

    /**
     * Samples as perf delivers them unordered: for each in file order, its place in time order (where its script
     * line is) and its thread's name as the COMM and FORK records read before it left it (perf's threads then).
     */
    private record FileOrder(int[] rank, String[] comm) {
        static FileOrder of(RecordingDecode rd) throws java.io.IOException {
            List<long[]> times = new java.util.ArrayList<>(); // {time, file index}
            List<String> comms = new java.util.ArrayList<>();
            Map<Integer, String> names = new java.util.HashMap<>();
            try (PerfDataFile f = rd.openPerfData()) {
                for (PerfDataFile.RecordReader r = f.records(); r.hasNext();) {
                    PerfRecord rec = r.next();
                    if (rec instanceof PerfRecord.Comm c) {
                        names.put(c.tid(), c.comm());
                    } else if (rec instanceof PerfRecord.Fork k && names.containsKey(k.ptid())) {
                        names.put(k.tid(), names.get(k.ptid()));
                    } else if (rec instanceof PerfRecord.Sample s) {
                        times.add(new long[] {s.time(), times.size()});
                        comms.add(names.getOrDefault(s.tid(), ":" + s.tid()));
                    }
                }
            }
            List<long[]> sorted = new java.util.ArrayList<>(times);
            sorted.sort((a, b) -> Long.compareUnsigned(a[0], b[0])); // stable: equal times in file order
            int[] rank = new int[times.size()];
            for (int i = 0; i < sorted.size(); i++) {
                rank[(int) sorted.get(i)[1]] = i;
            }
            return new FileOrder(rank, comms.toArray(new String[0]));
        }
    }

    /**
     * The lines of the recording's own records {@code show} asks for, as the sample views print them, for a text call
     * view to print among its lines (it prints the recorded samples of other events itself).
     */
    static ptfence.calls.RecordLines recordLines(RecordingDecode rd, ScriptConfig cfg, SidebandLines.Show show)
            throws Exception {
        SidebandLines side = sidebandLines(rd, cfg, show, false);
        rd.err.print(side.warnings());
        rd.err.flush();
        ptfence.calls.RecordLines lines = new ptfence.calls.RecordLines();
        if (side.isEmpty()) {
            return lines;
        }
        ScriptMerge merge = new ScriptMerge(1, new java.util.concurrent.Semaphore(1));
        ScriptMerge.Producer p = merge.producer(0, true);
        Thread writer = new Thread(() -> side.write(p), "ptdecode-sideband");
        writer.setDaemon(true);
        writer.start();
        merge.collect(lines);
        writer.join();
        return lines;
    }

    /** The recording's own records perf script prints: other events' samples, and the --show-* records. */
    private static SidebandLines sidebandLines(RecordingDecode rd, ScriptConfig cfg, SidebandLines.Show show)
            throws java.io.IOException {
        return sidebandLines(rd, cfg, show, true);
    }

    /** {@code samples}: the recorded samples of other events too (the sample views print them among the lines). */
    private static SidebandLines sidebandLines(RecordingDecode rd, ScriptConfig cfg, SidebandLines.Show show,
            boolean samples) throws java.io.IOException {
        Map<Long, PerfEvents.Event> byId = new java.util.HashMap<>();
        List<PerfEvents.Event> recorded = cfg.events.events().stream()
                .filter(e -> e.kind() == PerfEvents.Kind.RECORDED).toList();
        for (int i = 0; i < recorded.size() && i < rd.eventIds.size(); i++) {
            for (long id : rd.eventIds.get(i)) {
                byId.put(id, recorded.get(i));
            }
        }
        SidebandLines side = new SidebandLines(cfg, rd.sideband, rd.symbols, byId,
                recorded.size() == 1 ? recorded.get(0) : null);
        try (PerfDataFile f = rd.openPerfData()) {
            PerfDataFile.RecordReader r = f.records();
            try {
                while (r.hasNext()) {
                    PerfRecord rec = r.next();
                    if (samples || !(rec instanceof PerfRecord.Sample)) {
                        side.add(rec, show, (int) rd.pt.pmuType());
                    }
                }
            } catch (ptfence.cli.BadInputException e) {
                // the decode reported the damage; the lines stop where the records do
            }
        }
        return side;
    }

    /** perf's in-decoder --time filter for CPU queue {@code t}: the ranges in TSC, the queue's PSBs. */
    static ptfence.script.PerfTimeFilter timeFilter(RecordingDecode rd, TimeRanges time, RecordingDecode.CpuTrace t) {
        List<TimeRanges.Range> rs = time.ranges();
        long[] starts = new long[rs.size()];
        long[] ends = new long[rs.size()];
        for (int i = 0; i < rs.size(); i++) {
            TimeRanges.Range r = rs.get(i);
            starts[i] = r.start() == 0 ? 0 : tscAtOrAfter(rd.code.clock(), r.start());
            ends[i] = r.end() == 0 ? 0 : tscAtOrBefore(rd.code.clock(), r.end());
        }
        return new ptfence.script.PerfTimeFilter(starts, ends, ptfence.script.PerfFastForward.of(t.runs()));
    }

    /** The least TSC whose perf time is {@code ns} or later (perf's time ranges in TSC). */
    static long tscAtOrAfter(ptfence.sideband.CodeMap.Clock c, long ns) {
        long tsc = c.toDecoder(ns);
        while (Long.compareUnsigned(c.toPerf(tsc), ns) >= 0 && tsc > 0) {
            tsc--;
        }
        while (Long.compareUnsigned(c.toPerf(tsc), ns) < 0) {
            tsc++;
        }
        return tsc;
    }

    /** The greatest TSC whose perf time is {@code ns} or earlier. */
    static long tscAtOrBefore(ptfence.sideband.CodeMap.Clock c, long ns) {
        long tsc = c.toDecoder(ns);
        while (Long.compareUnsigned(c.toPerf(tsc), ns) <= 0) {
            tsc++;
        }
        while (Long.compareUnsigned(c.toPerf(tsc), ns) > 0) {
            tsc--;
        }
        return tsc;
    }
}

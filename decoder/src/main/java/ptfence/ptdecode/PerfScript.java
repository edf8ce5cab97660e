package ptfence.ptdecode;

import java.io.OutputStream;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import ptfence.perfdata.PerfDataFile;
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
        ScriptMerge merge = new ScriptMerge(traces.size() + (side.isEmpty() ? 0 : 1), rd.turns);
        merge.gates(cfg.dsoData);
        merge.queueLimits(rd.queueLimits);
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
    static void dumpRaw(RecordingDecode rd, ScriptConfig cfg, String label, boolean packets, OutputStream out)
            throws Exception {
        java.io.ByteArrayOutputStream lines = new java.io.ByteArrayOutputStream();
        run(rd, cfg, new SidebandLines.Show(false, false, false, false, false, false), lines, false);
        String[] scriptLines = lines.toString(java.nio.charset.StandardCharsets.UTF_8).split("\n", -1);
        int[] next = {0};
        try (PerfDataFile f = rd.openPerfData()) {
            new ptfence.script.RawDump(f, label, packets, s -> {
                String comm = rd.sideband.commAt(s.tid(), s.time());
                String dso = rd.symbols.dso(s.ip(), s.time(), s.pid());
                String line = next[0] < scriptLines.length - 1 ? scriptLines[next[0]++] + "\n" : "";
                return " ... thread: " + (comm == null ? ":" + s.tid() : comm) + ":" + s.tid() + "\n ...... dso: "
                        + (dso == null ? "<not found>" : dso) + "\n" + line;
            }, out).run();
        }
    }

    /** The recording's own records perf script prints: other events' samples, and the --show-* records. */
    private static SidebandLines sidebandLines(RecordingDecode rd, ScriptConfig cfg, SidebandLines.Show show)
            throws java.io.IOException {
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
                    side.add(r.next(), show, (int) rd.pt.pmuType());
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

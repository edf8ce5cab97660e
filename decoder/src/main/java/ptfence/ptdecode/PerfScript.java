package ptfence.ptdecode;

import java.io.OutputStream;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import ptfence.script.PerfTime;
import ptfence.script.SampleSink;
import ptfence.script.ScriptConfig;
import ptfence.script.ScriptMerge;

/**
 * perf script's lines for a whole recording: every CPU's trace decoded on its own thread into the samples perf's Intel
 * PT decoder makes ({@link SampleSink}), merged by time as perf merges its queues ({@link ScriptMerge}).
 */
final class PerfScript {
    private PerfScript() {
    }

    static void run(RecordingDecode rd, ScriptConfig cfg, OutputStream out) throws Exception {
        List<RecordingDecode.CpuTrace> traces = rd.traces;
        ScriptMerge merge = new ScriptMerge(traces.size(), rd.turns);
        Map<RecordingDecode.CpuTrace, ScriptMerge.Producer> producers = new IdentityHashMap<>();
        Map<RecordingDecode.CpuTrace, SampleSink> sinks = java.util.Collections.synchronizedMap(
                new IdentityHashMap<>());
        for (int i = 0; i < traces.size(); i++) {
            producers.put(traces.get(i), merge.producer(i, false));
        }
        boolean timed = rd.code.timed();
        Throwable[] failure = new Throwable[1];
        Thread decode = new Thread(() -> {
            try {
                rd.decodeCpus(t -> {
                    SampleSink s = new SampleSink(cfg, t.cpu(), t.tid(), rd.sideband, rd.symbols,
                            rd.code.forCpu(t.cpu(), t.tid() >= 0 ? t.tid() : -1), producers.get(t));
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
        decode.setDaemon(true);
        decode.start();
        merge.drain(out, new PerfTime(cfg.nanoseconds, cfg.reltime, cfg.deltatime), cfg.itrace.initialSkip);
        decode.join();
        if (failure[0] instanceof Exception e) {
            throw e;
        }
        if (failure[0] instanceof Error e) {
            throw e;
        }
    }
}

package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import ptfence.calls.BranchSink;
import ptfence.flow.CursorInput;
import ptfence.flow.FlowDecoder;
import ptfence.flow.PsbSegments;
import ptfence.image.CodeSpace;
import ptfence.perfdata.AuxBuffer;
import ptfence.perfdata.AuxRuns;

/**
 * The call views' sink at each PSB of real recordings: the state the sequential decode has at a PSB's seam point
 * against the one a decode started fresh at that PSB rebuilds (docs/script.md, "PSB segments for the call views").
 * This is what a PSB-segmented decode of the call views has to carry or check at each seam.
 */
class CallViewSeamsTest {
    /** A recording, the sysroot its code is read from (null: none). */
    record Rec(Path file, Path sysroot) {
    }

    static List<Rec> recordings() {
        List<Rec> out = new ArrayList<>();
        Path cf = RecordingPacketsTest.hase("control_flow-20180404T163033");
        out.add(new Rec(cf.resolve("control_flow__control_flow-20180404T163033.perf"), cf.resolve("symfs")));
        Path lp = RecordingPacketsTest.hase("loopy-20180404T162955");
        out.add(new Rec(lp.resolve("loopy-20180404T162955.perf"), lp.resolve("symfs")));
        for (String d : List.of("control_flow-20180515T180451", "loopy-20180514T145114")) {
            Path h = RecordingPacketsTest.hase(d);
            out.add(new Rec(h.resolve("perf.data.1"), h.resolve("symfs")));
        }
        out.add(new Rec(RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14"), null));
        return out;
    }

    static RecordingDecode load(Rec r) throws Exception {
        RecordingDecode rd = new RecordingDecode(new RecordingDecode.Request(r.file(), null, false, null, null, null,
                null, r.sysroot(), null, "text", false, false, Long.MIN_VALUE, Long.MAX_VALUE, null, 1, false, false),
                new java.io.PrintStream(java.io.OutputStream.nullOutputStream()));
        rd.load();
        return rd;
    }

    /** Thrown by the probe to end a fresh decode once it has told its first seam. */
    private static final class Told extends RuntimeException {
        Told() {
            super("told", null, false, false);
        }
    }

    /** Seams of one run: the sequential decode's, and each fresh decode's first (null: it told none there). */
    record RunSeams(List<BranchSink.Seam> sequential, Map<Long, BranchSink.Seam> fresh) {
    }

    /** What is done with each run of a recording: its CPU, its code, its bytes, the clock to perf time. */
    interface RunWalk {
        void run(RecordingDecode.CpuTrace t, CodeSpace space, ByteBuffer bytes,
                java.util.function.LongUnaryOperator toPerf) throws Exception;
    }

    /** Walks every run of every CPU of {@code rd}, as the call views decode them. */
    static void eachRun(RecordingDecode rd, RunWalk walk) throws Exception {
        boolean timed = rd.code.timed();
        java.util.function.LongUnaryOperator toPerf = tsc -> timed ? rd.code.clock().toPerf(tsc) : -1;
        for (RecordingDecode.CpuTrace t : rd.traces) {
            CodeSpace space = rd.code.forCpu(t.cpu(), t.tid() >= 0 ? t.tid() : -1);
            for (List<AuxBuffer> run : t.runs()) {
                walk.run(t, space, AuxRuns.bytes(run), toPerf);
            }
        }
    }

    /** A call views' sink of {@code t} as {@link CallViews} makes one (the merge's times told where CPUs merge). */
    static BranchSink sink(RecordingDecode rd, RecordingDecode.CpuTrace t, CodeSpace space, BranchSink.Out out) {
        return new BranchSink(t.cpu(), out, space, true, rd.traces.size() > 1);
    }

    /** Items into {@code out}, a merge time as a loss item in its place. */
    static BranchSink.Out into(List<ptfence.calls.FlowItem> out) {
        return new BranchSink.Out() {
            @Override
            public void add(ptfence.calls.FlowItem item) {
                out.add(item);
            }

            @Override
            public void time(long time) {
                out.add(new ptfence.calls.FlowItem.Loss(-1, time, "time", 0, 0, 0, 0));
            }
        };
    }

    /** The sequential decode of a run on {@code s}. */
    static void sequential(RecordingDecode rd, BranchSink s, CodeSpace space, ByteBuffer bytes,
            java.util.function.LongUnaryOperator toPerf) {
        FlowDecoder d = new FlowDecoder(space, rd.config, CursorInput.of(bytes.duplicate(), rd.config.errata), s,
                false);
        s.decoder(d, toPerf);
        d.run();
    }

    static List<RunSeams> seams(RecordingDecode rd) throws Exception {
        List<RunSeams> out = new ArrayList<>();
        eachRun(rd, (t, space, bytes, toPerf) -> {
            List<BranchSink.Seam> seq = new ArrayList<>();
            BranchSink s = sink(rd, t, space, item -> { });
            s.seams(seq::add);
            sequential(rd, s, space, bytes, toPerf);
            PsbSegments segs = new PsbSegments(space, rd.config, b -> CursorInput.of(b, rd.config.errata), bytes);
            Map<Long, BranchSink.Seam> fresh = new LinkedHashMap<>();
            for (BranchSink.Seam want : seq) {
                BranchSink.Seam[] got = new BranchSink.Seam[1];
                BranchSink f = sink(rd, t, space, item -> { });
                f.seams(seam -> {
                    got[0] = seam;
                    throw new Told();
                });
                FlowDecoder fd = segs.decoderAt(want.psb(), f);
                f.decoder(fd, toPerf);
                try {
                    fd.run();
                } catch (Told e) {
                    // its first seam told
                }
                fresh.put(want.psb(), got[0] != null && got[0].psb() == want.psb() ? got[0] : null);
            }
            out.add(new RunSeams(seq, fresh));
        });
        return out;
    }

    /** The fields of two records that differ, by name. */
    static List<String> differ(Record a, Record b) {
        List<String> out = new ArrayList<>();
        for (var c : a.getClass().getRecordComponents()) {
            try {
                Object x = c.getAccessor().invoke(a);
                Object y = c.getAccessor().invoke(b);
                if (!java.util.Objects.equals(x, y)) {
                    out.add(c.getName() + " " + y + " (fresh " + x + ")");
                }
            } catch (ReflectiveOperationException e) {
                throw new AssertionError(e);
            }
        }
        return out;
    }

    /**
     * Where tracing is on at the PSB (its PSB+ has a FUP) a fresh decode rebuilds the whole start; where it is off,
     * the start differs only in the trace end before it (where tracing went off, that a trace end was the last item,
     * whether it was asynchronous), which a segment must be given or have checked. Of the carried part only the last
     * instruction (read by an asynchronous trace end before the first instruction) and the last state's IP (written
     * by the next call before any read) differ.
     */
    @Test
    void aFreshDecodeRebuildsTheStartWhereTracingIsOn() throws Exception {
        int on = 0;
        int off = 0;
        StringBuilder report = new StringBuilder();
        for (Rec r : recordings()) {
            RecordingDecode rd = load(r);
            for (RunSeams rs : seams(rd)) {
                for (BranchSink.Seam want : rs.sequential()) {
                    String where = r.file().getParent().getFileName() + "/" + r.file().getFileName() + " @"
                            + want.psb();
                    BranchSink.Seam got = rs.fresh().get(want.psb());
                    assertTrue(got != null, where + ": the fresh decode reached no seam there");
                    List<String> start = differ(got.start(), want.start());
                    List<String> carried = differ(got.carried(), want.carried());
                    report.append(where).append(": start ").append(start).append(" carried ").append(carried)
                            .append('\n');
                    carried.removeIf(f -> f.startsWith("lastIp ") || f.startsWith("stateIp "));
                    assertEquals(List.of(), carried, where);
                    if (want.start().offIp() == -1) {
                        on++;
                        assertEquals(want.start(), got.start(), where + ": " + start);
                    } else {
                        off++;
                        start.removeIf(f -> f.startsWith("offIp ") || f.startsWith("afterEnd ")
                                || f.startsWith("asyncEnd "));
                        assertEquals(List.of(), start, where);
                    }
                }
            }
        }
        System.out.print(report);
        // HASE 2018-04 and quipper: tracing on at every PSB; HASE 2018-05: PSBs while tracing is off
        assertTrue(on >= 12 && off >= 10, on + " on, " + off + " off");
    }

    /**
     * One run decoded in PSB segments ({@link ptfence.calls.CallSegments}: a segment at every PSB whose PSB+ ends within
     * reach, at most {@code cap} items held ahead a segment, starts checked once each decode ran as far as it can).
     */
    static List<ptfence.calls.FlowItem> segmented(RecordingDecode rd, RecordingDecode.CpuTrace t, CodeSpace space,
            ByteBuffer bytes, java.util.function.LongUnaryOperator toPerf, int threads, int cap, int[] counts)
            throws Exception {
        PsbSegments segs = new PsbSegments(space, rd.config, b -> CursorInput.of(b, rd.config.errata), bytes);
        List<ptfence.calls.FlowItem> out = new ArrayList<>();
        ptfence.calls.CallSegments cs = new ptfence.calls.CallSegments(segs, threads, cap,
                items -> sink(rd, t, space, items), (sink, d) -> sink.decoder(d, toPerf), ip -> { }).settleLate(true);
        cs.run(into(out));
        counts[0] += cs.segments();
        counts[1] += cs.redone();
        return out;
    }

    /** An item as text to compare (a mark's keys and values are arrays). */
    static String show(ptfence.calls.FlowItem i) {
        if (i instanceof ptfence.calls.FlowItem.Mark m) {
            return m.toString().replaceAll("keys=[^,]*, values=[^,]*,", "") + java.util.Arrays.toString(m.keys())
                    + java.util.Arrays.toString(m.values());
        }
        return i.toString();
    }

    /**
     * Every run's items decoded in PSB segments, at every PSB, on 1 and 3 threads, holding few items ahead, are the
     * sequential decode's, including where a segment's guessed start does not check and it is decoded again.
     */
    @Test
    void itemsDecodedInSegmentsAreTheSequentialItems() throws Exception {
        int[] counts = new int[2];
        for (Rec r : recordings()) {
            RecordingDecode rd = load(r);
            eachRun(rd, (t, space, bytes, toPerf) -> {
                List<ptfence.calls.FlowItem> seq = new ArrayList<>();
                sequential(rd, sink(rd, t, space, into(seq)), space, bytes, toPerf);
                for (int[] tc : new int[][] {{1, 1 << 20}, {3, 4}}) {
                    List<ptfence.calls.FlowItem> got = segmented(rd, t, space, bytes, toPerf, tc[0], tc[1], counts);
                    String where = r.file().getParent().getFileName() + "/" + r.file().getFileName() + " cpu "
                            + t.cpu() + ", " + tc[0] + " threads";
                    for (int k = 0; k < Math.min(seq.size(), got.size()); k++) {
                        assertEquals(show(seq.get(k)), show(got.get(k)), where + " item " + k);
                    }
                    assertEquals(seq.size(), got.size(), where + ": items");
                }
            });
        }
        System.out.println("segments " + counts[0] + ", decoded again " + counts[1]);
        assertTrue(counts[0] >= 40 && counts[1] > 0, counts[0] + " segments, " + counts[1] + " decoded again");
    }
}

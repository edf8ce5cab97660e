package ptfence.calls;

import java.io.IOException;
import java.io.UncheckedIOException;
import ptfence.cli.Json;
import java.util.List;
import ptfence.func.PerfettoWriter;
import ptfence.sideband.BpfOutputFormat;
import ptfence.sideband.BpfOutputs;
import ptfence.symbol.Symbol;
import ptfence.symbol.Symbolizer;

/**
 * {@code --format perfetto} for a whole recording: each thread a track, each call a slice nested in its caller's,
 * from call to return (what magic-trace draws). A stack dropped where the flow was lost ends its slices there with
 * {@code "lost":true}; the root (the function a thread was found in) is the outermost slice. Without timing the
 * clock is each thread's instruction count.
 */
public final class PerfettoView implements CallView {
    private final PerfettoWriter.Slices w;
    private final Symbolizer names;
    private final boolean timed;
    private final java.util.function.IntFunction<String> comms;
    private long untimed;

    /** @param comms a thread's name (its last, as perf report names a process), or null when the sideband has none */
    public PerfettoView(String title, Appendable out, Symbolizer names, boolean timed,
            java.util.function.IntFunction<String> comms) throws IOException {
        this.w = new PerfettoWriter.Slices(title, out, timed);
        this.names = names;
        this.timed = timed;
        this.comms = comms;
    }

    /** "comm id" where the sideband names the thread, else "what id". */
    private String label(int tid, String what, int id) {
        String comm = comms.apply(tid);
        return comm != null ? comm + " " + id : what + " " + id;
    }

    /** The slice time of an event of {@code t} at {@code time}: -1 when it has none. */
    private long at(ThreadStack t, long time) {
        if (!timed) {
            return t.insns();
        }
        return time >= 0 ? time : t.lastTime();
    }

    private int pid(ThreadStack t) {
        return t.tid() > 0 ? t.pid() : 0;
    }

    private int tid(ThreadStack t) {
        return t.tid() > 0 ? t.tid() : 1_000_000 + Math.max(0, t.cpu());
    }

    @Override
    public void enter(ThreadStack t, int level, long time) {
        long ts = at(t, time);
        if (ts < 0) {
            untimed++;
            t.tag(level, 0); // no place on a timed track: neither begun nor ended
            return;
        }
        t.tag(level, 1);
        long a = t.address(level);
        Symbol sym = names.symbol(a, time, t.pid());
        String name = sym == null ? null : sym.name();
        try {
            w.thread(pid(t), tid(t), t.tid() > 0 ? label(t.pid(), "pid", t.pid()) : "unknown task",
                    t.tid() > 0 ? label(t.tid(), "tid", t.tid()) : "CPU " + t.cpu());
            Json args = new Json().address("address", a);
            if (level == 0 && t.untrusted()) {
                args.field("after_loss", true);
            }
            w.begin(pid(t), tid(t), name == null ? "0x" + Long.toHexString(a) : name, ts, args);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void leave(ThreadStack t, int level, long time, boolean lost) {
        if (t.tag(level) == 0) {
            return;
        }
        long ts = Math.max(at(t, time), t.enterTime(level) >= 0 && timed ? t.enterTime(level) : 0);
        try {
            w.end(pid(t), tid(t), ts, lost ? new Json().field("lost", true) : null);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void item(ThreadStack t, FlowItem item) {
    }

    private List<BpfOutputs.Sample> samples = List.of();
    private BpfOutputFormat format;

    /** The bpf-output samples to draw as instant events (on the writing thread's track: where its stack is). */
    public PerfettoView samples(List<BpfOutputs.Sample> samples, BpfOutputFormat format) {
        this.samples = samples;
        this.format = format;
        return this;
    }

    @Override
    public void end() throws IOException {
        // viewers order events by time themselves: the samples go last, each on its thread's track (a kernel
        // thread's, tid 0, on its CPU's track, as the stacks are)
        for (BpfOutputs.Sample s : timed ? samples : List.<BpfOutputs.Sample>of()) {
            int pid = s.tid() > 0 ? s.pid() : 0;
            int tid = s.tid() > 0 ? s.tid() : 1_000_000 + Math.max(0, s.cpu());
            w.thread(pid, tid, s.tid() > 0 ? label(s.pid(), "pid", s.pid()) : "unknown task",
                    s.tid() > 0 ? label(s.tid(), "tid", s.tid()) : "CPU " + s.cpu());
            w.instant(pid, tid, s.event(), s.time(), format.args(s));
        }
        w.finish(new Json().field("untimed_calls", untimed).field("bpf_output_samples", timed ? samples.size() : 0)
                .field("bpf_output_untimed", timed ? 0 : samples.size()));
    }
}

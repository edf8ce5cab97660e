package ptfence.func;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import ptfence.cli.Json;

/**
 * Invocations as a Chrome trace-event JSON file ({@code --format perfetto}), the "JSON Object format" that
 * ui.perfetto.dev and chrome://tracing open: {@code {"traceEvents":[...]}} with one track per CPU, one complete
 * event ({@code "ph":"X"}) per invocation named after the function, and inside it one per call out, named after
 * the callee.
 *
 * <p>Times: {@code ts}/{@code dur} are microseconds. When invocations have timing they are perf time (ns / 1000,
 * exact to the nanosecond), so the file lines up with perf's own exports; any without times are then left out and
 * counted ({@code otherData.untimed_invocations}). When none has timing the whole file uses an instruction clock,
 * one microsecond per instruction: each CPU's invocations are laid end to end in trace order, an invocation lasting
 * its instructions plus its callees' traced instructions ({@code otherData.clock} says which).
 */
public final class PerfettoWriter {
    /** The one process the CPU tracks belong to. */
    static final int PID = 1;

    private PerfettoWriter() {}

    /** The thread id of a CPU's track: viewers treat tid 0 as the idle task, so CPU n is n + 1. */
    static int trackOf(int cpu) {
        return cpu + 1;
    }

    public static String toJson(String title, List<Invocation> invocations) {
        StringBuilder sb = new StringBuilder();
        try {
            write(title, invocations, sb);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a StringBuilder does not throw
        }
        return sb.toString();
    }

    /**
     * Writes the trace.
     *
     * @param title        the process track's name (the function as asked for, e.g. "bpf_prog_1a2b…")
     * @param invocations  in any order; each CPU's are placed by entry time (or trace order without timing)
     */
    public static void write(String title, List<Invocation> invocations, Appendable out) throws IOException {
        boolean timed = invocations.stream().anyMatch(PerfettoWriter::hasTimes);
        List<Invocation> order = new ArrayList<>(invocations);
        // Stable: without timing, trace order stands within a CPU.
        order.sort(timed ? Comparator.comparingInt(Invocation::cpu).thenComparingLong(Invocation::entryTime)
                : Comparator.comparingInt(Invocation::cpu));
        Stream s = new Stream(title, out, !timed);
        for (Invocation i : order) {
            s.add(i);
        }
        s.end();
    }

    /**
     * The trace written as invocations come (each CPU's in entry order, or in trace order without timing). The
     * trace is timed when any invocation has times; until the first one does, invocations are held back, and in a
     * timed trace those without times (cut before the first timing packet) have no place and are only counted.
     */
    public static final class Stream {
        private final Appendable out;
        private final Set<Integer> cpus = new TreeSet<>();
        private final List<Invocation> heldBack = new ArrayList<>();
        private final java.util.Map<Integer, long[]> clocks = new java.util.HashMap<>(); // instruction clock per CPU
        private final boolean untimedTrace;
        private boolean timed;
        private long written, untimed;
        private ptfence.sideband.BpfOutputFormat outputFormat = ptfence.sideband.BpfOutputFormat.hexOnly();

        /** How the bpf-output samples inside invocations are shown (instant events' args). */
        public Stream outputs(ptfence.sideband.BpfOutputFormat format) {
            this.outputFormat = format;
            return this;
        }

        /**
         * @param untimed  the trace is known to have no timing (a recording without the TSC bit): nothing is held
         *                 back waiting for a time that cannot come
         */
        public Stream(String title, Appendable out, boolean untimed) throws IOException {
            this.out = out;
            this.untimedTrace = untimed;
            out.append("{\"traceEvents\":[\n");
            out.append(new Json().field("name", "process_name").field("cat", "__metadata").field("ph", "M").field("pid", PID)
                    .raw("args", new Json().field("name", title).toString()).toString());
        }

        public void add(Invocation inv) throws IOException {
            if (untimedTrace) {
                place(inv);
                return;
            }
            if (!timed && hasTimes(inv)) {
                timed = true;
                untimed += heldBack.size();
                heldBack.clear();
            }
            if (timed) {
                if (hasTimes(inv)) {
                    place(inv);
                } else {
                    untimed++;
                }
            } else {
                heldBack.add(inv);
            }
        }

        public void end() throws IOException {
            for (Invocation inv : heldBack) {
                place(inv);
            }
            out.append("\n],\"displayTimeUnit\":\"ns\",\"otherData\":")
                    .append(new Json().field("clock", timed ? "perf-time" : "instructions")
                            .field("invocations", written + untimed).field("untimed_invocations", untimed)
                            .toString())
                    .append("}\n");
        }

        private void place(Invocation inv) throws IOException {
            written++;
            if (cpus.add(inv.cpu())) {
                int cpu = inv.cpu();
                out.append(",\n").append(new Json().field("name", "thread_name").field("cat", "__metadata").field("ph", "M").field("pid", PID)
                        .field("tid", trackOf(cpu)).raw("args", new Json().field("name", "CPU " + cpu).toString())
                        .toString());
                out.append(",\n").append(new Json().field("name", "thread_sort_index").field("cat", "__metadata").field("ph", "M")
                        .field("pid", PID).field("tid", trackOf(cpu))
                        .raw("args", new Json().field("sort_index", cpu).toString()).toString());
            }
            long start, length;
            if (timed) {
                start = inv.entryTime();
                length = inv.exitTime() - inv.entryTime();
            } else {
                long[] clock = clocks.computeIfAbsent(inv.cpu(), c -> new long[1]);
                start = clock[0];
                length = inv.instructions();
                for (Invocation.Call c : inv.calls()) length += c.insns();
                clock[0] += length;
            }
            int untimedCalls = 0;
            List<String> children = new ArrayList<>(inv.calls().size());
            long calleeInsns = 0;
            for (Invocation.Call c : inv.calls()) {
                long cs, cl;
                if (timed) {
                    if (c.duration() < 0) {
                        untimedCalls++;
                        continue;
                    }
                    cs = Math.max(start, Math.min(c.enter(), start + length));
                    cl = Math.min(start + length, Math.max(cs, c.exit())) - cs;
                } else {
                    cs = start + c.index() + 1 + calleeInsns;
                    cl = c.insns();
                    calleeInsns += c.insns();
                }
                children.add(event(c.name(), inv.cpu(), cs, cl, timed, new Json().address("from", c.from())
                        .address("target", c.target()).field("insns", c.insns())));
            }
            Json args = new Json().field("pid", inv.pid()).field("tid", inv.tid()).field("insns", inv.instructions())
                    .field("end", FuncPrinter.endName(inv.end())).field("calls", inv.calls().size());
            if (inv.path().length > 0) args.address("entry", inv.path()[0]);
            if (untimedCalls > 0) args.field("untimed_calls", untimedCalls);
            if (inv.programs().size() > 1) args.field("programs", String.join(",", inv.programs()));
            out.append(",\n").append(event(inv.function(), inv.cpu(), start, length, timed, args));
            for (String child : children) out.append(",\n").append(child);
            for (Invocation.Output o : inv.outputs()) {
                // at its time; on the instruction clock, after the instructions before it
                long ts = timed ? o.sample().time() : start + o.index();
                out.append(",\n").append(instantEvent(o.sample().event(), "bpf-output", PID, trackOf(inv.cpu()),
                        timed ? micros(ts) : Long.toString(ts), outputFormat.args(o.sample())));
            }
        }
    }

    /**
     * Nested slices streamed as they open and close ({@code "ph":"B"}/{@code "E"}), one track per thread of each
     * process: a whole recording's call stacks over time. Each thread's begins and ends must come in its time order
     * and nest, which a call stack gives; nothing is held back.
     */
    public static final class Slices {
        private final Appendable out;
        private final boolean timed;
        private final Set<Long> named = new java.util.HashSet<>();
        private long written;

        /** @param timed  times are perf time (ns); else an instruction clock, one microsecond per instruction */
        public Slices(String title, Appendable out, boolean timed) throws IOException {
            this.out = out;
            this.timed = timed;
            out.append("{\"traceEvents\":[\n");
            out.append(new Json().field("name", "process_name").field("cat", "__metadata").field("ph", "M").field("pid", 0)
                    .raw("args", new Json().field("name", title).toString()).toString());
        }

        /** Names the track of (pid, tid) the first time it is used. */
        public void thread(int pid, int tid, String processName, String threadName) throws IOException {
            long key = (long) pid << 32 | (tid & 0xffffffffL);
            if (!named.add(key)) {
                return;
            }
            if (named.add((long) pid << 32 | 0xffffffffL)) {
                out.append(",\n").append(new Json().field("name", "process_name").field("cat", "__metadata").field("ph", "M").field("pid", pid)
                        .raw("args", new Json().field("name", processName).toString()).toString());
            }
            out.append(",\n").append(new Json().field("name", "thread_name").field("cat", "__metadata").field("ph", "M").field("pid", pid)
                    .field("tid", tid).raw("args", new Json().field("name", threadName).toString()).toString());
        }

        public void begin(int pid, int tid, String name, long time, Json args) throws IOException {
            written++;
            Json j = new Json().field("name", name).field("cat", "call").field("ph", "B").field("pid", pid).field("tid", tid)
                    .raw("ts", timed ? micros(time) : Long.toString(time));
            if (args != null) {
                j.raw("args", args.toString());
            }
            out.append(",\n").append(j.toString());
        }

        public void end(int pid, int tid, long time, Json args) throws IOException {
            Json j = new Json().field("cat", "call").field("ph", "E").field("pid", pid).field("tid", tid)
                    .raw("ts", timed ? micros(time) : Long.toString(time));
            if (args != null) {
                j.raw("args", args.toString());
            }
            out.append(",\n").append(j.toString());
        }

        /** An instant event ({@code "ph":"i"}, thread scope) on the track of (pid, tid): a bpf-output sample. */
        public void instant(int pid, int tid, String name, long time, Json args) throws IOException {
            out.append(",\n").append(instantEvent(name, "bpf-output", pid, tid, timed ? micros(time)
                    : Long.toString(time), args));
        }

        public void finish(Json otherData) throws IOException {
            out.append("\n],\"displayTimeUnit\":\"ns\",\"otherData\":")
                    .append(otherData.field("clock", timed ? "perf-time" : "instructions").field("slices", written)
                            .toString())
                    .append("}\n");
        }
    }

    /** The one form of an instant event: thread-scoped, so it sits on the track it is drawn on. */
    static String instantEvent(String name, String cat, int pid, int tid, String ts, Json args) {
        return new Json().field("name", name).field("cat", cat).field("ph", "i").field("s", "t").field("pid", pid)
                .field("tid", tid).raw("ts", ts).raw("args", args.toString()).toString();
    }

    private static boolean hasTimes(Invocation i) {
        return i.entryTime() >= 0 && i.exitTime() >= i.entryTime();
    }

    private static String event(String name, int cpu, long start, long length, boolean timed, Json args) {
        return new Json().field("name", name).field("cat", "function").field("ph", "X").field("pid", PID).field("tid", trackOf(cpu))
                .raw("ts", timed ? micros(start) : Long.toString(start))
                .raw("dur", timed ? micros(length) : Long.toString(length))
                .raw("args", args.toString()).toString();
    }

    /** Nanoseconds as exact decimal microseconds ("1234.5" for 1234500). */
    static String micros(long ns) {
        String whole = Long.toString(ns / 1000);
        int frac = (int) Math.abs(ns % 1000);
        if (frac == 0) return whole;
        StringBuilder sb = new StringBuilder(whole.length() + 5);
        if (ns < 0 && ns / 1000 == 0) sb.append('-');
        sb.append(whole).append('.').append((char) ('0' + frac / 100));
        if (frac % 100 != 0) sb.append((char) ('0' + frac / 10 % 10));
        if (frac % 10 != 0) sb.append((char) ('0' + frac % 10));
        return sb.toString();
    }
}

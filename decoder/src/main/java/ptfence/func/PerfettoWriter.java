package ptfence.func;

import ptfence.cli.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;

/**
 * Invocations as a Chrome trace-event JSON file ({@code --format perfetto}), the "JSON Object format" that
 * ui.perfetto.dev and chrome://tracing open: {@code {"traceEvents":[...]}} with one track per CPU, one complete
 * event ({@code "ph":"X"}) per invocation named after the function, and inside it one per call out, named after
 * the callee.
 *
 * <p>Times: {@code ts}/{@code dur} are microseconds. When every invocation has timing they are perf time (ns / 1000,
 * exact to the nanosecond), so the file lines up with perf's own exports. Otherwise the whole file uses an
 * instruction clock, one microsecond per instruction: each CPU's invocations are laid end to end in trace order, an
 * invocation lasting its instructions plus its callees' traced instructions ({@code otherData.clock} says which).
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
        boolean timed = !invocations.isEmpty()
                && invocations.stream().allMatch(i -> i.entryTime() >= 0 && i.exitTime() >= i.entryTime());
        List<Invocation> order = new ArrayList<>(invocations);
        // Stable: without timing, trace order stands within a CPU.
        order.sort(timed ? Comparator.comparingInt(Invocation::cpu).thenComparingLong(Invocation::entryTime)
                : Comparator.comparingInt(Invocation::cpu));
        TreeSet<Integer> cpus = new TreeSet<>();
        for (Invocation i : order) cpus.add(i.cpu());

        out.append("{\"traceEvents\":[\n");
        out.append(new Json().field("name", "process_name").field("ph", "M").field("pid", PID)
                .raw("args", new Json().field("name", title).toString()).toString());
        for (int cpu : cpus) {
            out.append(",\n").append(new Json().field("name", "thread_name").field("ph", "M").field("pid", PID)
                    .field("tid", trackOf(cpu)).raw("args", new Json().field("name", "CPU " + cpu).toString())
                    .toString());
            out.append(",\n").append(new Json().field("name", "thread_sort_index").field("ph", "M")
                    .field("pid", PID).field("tid", trackOf(cpu))
                    .raw("args", new Json().field("sort_index", cpu).toString()).toString());
        }
        int lastCpu = Integer.MIN_VALUE;
        long clock = 0; // instruction clock of the current CPU
        for (Invocation inv : order) {
            if (inv.cpu() != lastCpu) {
                lastCpu = inv.cpu();
                clock = 0;
            }
            long start, length;
            if (timed) {
                start = inv.entryTime();
                length = inv.exitTime() - inv.entryTime();
            } else {
                start = clock;
                length = inv.instructions();
                for (Invocation.Call c : inv.calls()) length += c.insns();
                clock += length;
            }
            int untimed = 0;
            List<String> children = new ArrayList<>(inv.calls().size());
            long calleeInsns = 0;
            for (Invocation.Call c : inv.calls()) {
                long cs, cl;
                if (timed) {
                    if (c.duration() < 0) {
                        untimed++;
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
            if (untimed > 0) args.field("untimed_calls", untimed);
            if (inv.programs().size() > 1) args.field("programs", String.join(",", inv.programs()));
            out.append(",\n").append(event(inv.function(), inv.cpu(), start, length, timed, args));
            for (String child : children) out.append(",\n").append(child);
        }
        out.append("\n],\"displayTimeUnit\":\"ns\",\"otherData\":")
                .append(new Json().field("clock", timed ? "perf-time" : "instructions")
                        .field("invocations", invocations.size()).toString())
                .append("}\n");
    }

    private static String event(String name, int cpu, long start, long length, boolean timed, Json args) {
        return new Json().field("name", name).field("ph", "X").field("pid", PID).field("tid", trackOf(cpu))
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

package ptfence.ptdecode;

import java.io.PrintWriter;
import ptfence.flow.Event;
import ptfence.flow.FlowDecoder;
import ptfence.flow.FlowSink;
import ptfence.flow.PtError;
import ptfence.image.CodeSpace;
import ptfence.insn.CodeCache;
import ptfence.insn.X86Decoder;
import ptfence.output.Columns;
import ptfence.output.EventNames;
import ptfence.sideband.CodeMap;
import ptfence.sideband.TaskCursor;
import ptfence.symbol.Symbol;
import ptfence.symbol.SymbolCursor;

/**
 * Every CPU's flow, merged by time: each CPU decodes on its own thread into small batches of timed lines, and the
 * printer always takes the earliest line of any CPU, so memory stays bounded however long the recording.
 */
final class MergedFlow {
    private MergedFlow() {
    }

    /** One merged line, its perf time (-1: none) and the thread it belongs to (for --per-thread). */
    record Line(long time, int pid, int tid, String comm, String text) {
    }

    static void print(RecordingDecode rd, PrintWriter out, RecordingDecode.Request req, ThreadOptions threads)
            throws Exception {
        boolean jsonl = req.format().equals("jsonl");
        ThreadGroups groups = threads.perThread ? new ThreadGroups(!jsonl) : null;
        try {
            java.util.function.Consumer<Line> print = groups == null ? line -> out.append(line.text()).append('\n')
                    : line -> groups.add(line.pid(), line.tid(), line.comm(), line.text());
            SampleLines samples = new SampleLines(rd, jsonl, print);
            rd.<Line>decodeMerged((t, lines) -> {
                LineSink s = new LineSink(t, lines, rd, jsonl, req, threads);
                return new RecordingDecode.CpuPart(s, d -> {
                    s.decoder = d;
                    s.clock.decoder(d);
                }, () -> { });
            }, line -> {
                samples.before(line.time());
                print.accept(line);
            });
            samples.before(Long.MAX_VALUE);
            if (groups != null) {
                groups.finish(out);
            }
        } finally {
            if (groups != null) {
                groups.close();
            }
        }
    }

    /**
     * The bpf-output samples, each printed before the first line later than it: a line of its own in the flow
     * (jsonl: {"cpu","time","event":"bpf-output","ip","size","data" hex, "type"/"fields" where BTF decodes it,
     * "pid","tid","comm"}). Lines without a time leave them where they are.
     */
    private static final class SampleLines {
        private final java.util.List<ptfence.sideband.BpfOutputs.Sample> samples;
        private final ptfence.sideband.BpfOutputFormat format;
        private final RecordingDecode rd;
        private final boolean jsonl;
        private final java.util.function.Consumer<Line> print;
        private int next;

        SampleLines(RecordingDecode rd, boolean jsonl, java.util.function.Consumer<Line> print) throws java.io.IOException {
            this.rd = rd;
            this.samples = rd.bpfOutputs().all();
            this.format = samples.isEmpty() ? null : rd.bpfOutputFormat();
            this.jsonl = jsonl;
            this.print = print;
        }

        void before(long time) {
            while (time >= 0 && next < samples.size() && samples.get(next).time() < time) {
                ptfence.sideband.BpfOutputs.Sample s = samples.get(next++);
                String comm = rd.sideband.commAt(s.tid(), s.time());
                StringBuilder sb = new StringBuilder(96);
                if (jsonl) {
                    sb.append("{\"cpu\":").append(s.cpu()).append(",\"time\":").append(s.time());
                    format.json(sb, s);
                    sb.append(",\"pid\":").append(s.pid()).append(",\"tid\":").append(s.tid());
                    if (comm != null) {
                        sb.append(",\"comm\":").append(ptfence.cli.Json.quote(comm));
                    }
                    sb.append('}');
                } else {
                    Columns.right(sb, Integer.toString(s.cpu()), 3, ' ').append(' ');
                    Columns.seconds(sb, s.time()).append("  ");
                    Columns.right(sb, comm != null ? comm : ":" + s.tid(), 16, ' ').append(' ');
                    Columns.right(sb, Integer.toString(s.pid()), 7, ' ').append('/');
                    Columns.left(sb, Integer.toString(s.tid()), 7).append(' ');
                    format.text(sb, s);
                }
                print.accept(new Line(s.time(), s.pid(), s.tid(), comm, sb.toString()));
            }
        }
    }

    /** Appends {@code s} as a JSON string: as it is when nothing in it needs escaping (disassembly, file:line). */
    static void jsonString(StringBuilder sb, String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f) {
                sb.append(ptfence.cli.Json.quote(s));
                return;
            }
        }
        sb.append('"').append(s).append('"');
    }

    /** One CPU's lines: instructions with time, symbol and disassembly; events and errors in brackets. */
    private static final class LineSink implements FlowSink {
        private final int cpu;
        private final TimeMerge<Line>.Producer queue;
        private final CodeMap code;
        private final boolean jsonl;
        private final CodeSpace space;
        private final RecordingDecode.Request req;
        private final ThreadOptions threads;
        private final TaskCursor task;
        private final SymbolCursor symbols;
        private final X86Decoder dec = new X86Decoder();
        private final byte[] buf = new byte[15];
        FlowDecoder decoder;
        private final StringBuilder sb = new StringBuilder(128);
        private Symbol jsonSym;
        private String jsonName;
        private int textPid = Integer.MIN_VALUE;
        private int textTid;
        private String textComm;
        private String textThread;
        private String jsonCommOf;
        private String jsonComm;
        private String jsonDso;
        private final ptfence.calls.EventMarks marks = new ptfence.calls.EventMarks();

        LineSink(RecordingDecode.CpuTrace t, TimeMerge<Line>.Producer queue, RecordingDecode rd, boolean jsonl,
                RecordingDecode.Request req, ThreadOptions threads) {
            this.cpu = t.cpu();
            this.queue = queue;
            this.code = rd.code;
            this.jsonl = jsonl;
            this.space = rd.code.forCpu(t.cpu(), -1);
            this.req = req;
            this.threads = threads;
            this.task = new TaskCursor(rd.sideband, t.cpu(), t.tid());
            this.symbols = new SymbolCursor(rd.symbols);
        }

        private long tsc() {
            return decoder == null ? -1 : decoder.time();
        }

        /** perf's time for the samples of this CPU (see SampleClock), as perf time. */
        private final ptfence.flow.SampleClock clock = new ptfence.flow.SampleClock();

        private long perfTime(long tsc) {
            return tsc >= 0 ? code.clock().toPerf(tsc) : -1;
        }

        private void emit(long time, String line) {
            queue.add(time, new Line(time, task.pid(), task.tid(), task.comm(), line));
        }

        /** Moves to time {@code t}; false if the line is outside --time or the thread filters. */
        private boolean wanted(long t) {
            if (t >= 0 && (t < req.timeFrom() || t > req.timeTo())) {
                return false;
            }
            task.at(t);
            return !threads.filters() || threads.accepts(task.pid(), task.tid(), task.comm());
        }

        /** jsonl: the thread's fields and the object's end (after the line's own fields, which keep their places). */
        private void endJson() {
            sb.append(",\"pid\":").append(task.pid()).append(",\"tid\":").append(task.tid());
            String comm = task.comm();
            if (comm != null) {
                if (comm != jsonCommOf) { // quoted once per thread name
                    jsonCommOf = comm;
                    jsonComm = ",\"comm\":" + ptfence.cli.Json.quote(comm);
                }
                sb.append(jsonComm);
            }
            sb.append('}');
        }

        private void prefix(long t) {
            sb.setLength(0);
            String comm = task.comm();
            if (jsonl) {
                sb.append("{\"cpu\":").append(cpu).append(",\"time\":").append(t);
            } else {
                Columns.right(sb, Integer.toString(cpu), 3, ' ').append(' ');
                if (t < 0) {
                    sb.append("             -");
                } else {
                    Columns.seconds(sb, t);
                }
                sb.append("  ");
                if (task.pid() != textPid || task.tid() != textTid || comm != textComm) {
                    textPid = task.pid(); // the thread's columns, made once per task switch
                    textTid = task.tid();
                    textComm = comm;
                    StringBuilder c = new StringBuilder(36);
                    Columns.right(c, comm != null ? comm : textTid >= 0 ? ":" + textTid : "-", 16, ' ').append(' ');
                    Columns.right(c, textPid >= 0 ? Integer.toString(textPid) : "-", 7, ' ').append('/');
                    Columns.left(c, textTid >= 0 ? Integer.toString(textTid) : "-", 7).append(' ');
                    textThread = c.toString();
                }
                sb.append(textThread);
            }
        }

        @Override
        public void insn(long ip, int size, int cls, int mode, boolean speculative) {
            marks.insn();
            long t = perfTime(clock.insn(cls));
            if (!wanted(t)) {
                return;
            }
            long tsc = tsc() >= 0 ? tsc() : CodeSpace.ANY_TIME;
            int len = space.read(ip, tsc, buf, 0, buf.length);
            String text = dec.text(buf, 0, len, mode, ip);
            Symbol sym = symbols.symbol(ip, t, task.pid());
            String src = threads.srcline ? symbols.srcline(ip, t, task.pid()) : null;
            prefix(t);
            if (jsonl) {
                sb.append(",\"ip\":\"0x").append(Long.toHexString(ip)).append("\",\"insn\":");
                jsonString(sb, text == null ? "(bad)" : text);
                if (sym != null) {
                    if (sym != jsonSym) { // quoted once per function entered, not per instruction (the path of the
                        // file on every line would double a line's length: only with --dso)
                        jsonSym = sym;
                        String q = ptfence.cli.Json.quote(sym.name());
                        jsonName = ",\"sym\":" + q.substring(0, q.length() - 1);
                        jsonDso = threads.dso ? ",\"dso\":" + ptfence.cli.Json.quote(sym.dso()) : "";
                    }
                    sb.append(jsonName);
                    if (ip != sym.start()) {
                        sb.append("+0x").append(Long.toHexString(ip - sym.start()));
                    }
                    sb.append('"').append(jsonDso);
                }
                if (src != null) {
                    jsonString(sb.append(",\"srcline\":"), src);
                }
                if (ptfence.insn.InsnClass.isBranch(cls)) {
                    sb.append(",\"class\":\"").append(ptfence.insn.InsnClass.name(cls)).append('"');
                }
                if (speculative) {
                    sb.append(",\"speculative\":true");
                }
                endJson();
            } else {
                sb.append(speculative ? "? " : "");
                Columns.hex16(sb, ip).append("  ");
                Columns.left(sb, text == null ? "(bad)" : text, 36);
                if (sym != null) {
                    sb.append("  <").append(sym.name());
                    if (ip != sym.start()) {
                        sb.append("+0x").append(Long.toHexString(ip - sym.start()));
                    }
                    sb.append('>');
                    if (threads.dso) {
                        sb.append(" (").append(sym.dso()).append(')');
                    }
                }
                if (src != null) {
                    sb.append("  ").append(src);
                }
            }
            emit(t, sb.toString());
        }

        @Override
        public void block(long ip, int count, CodeCache cc, int off, int mode, boolean speculative) {
            throw new UnsupportedOperationException("merged flow uses the instruction decoder");
        }

        @Override
        public void event(Event ev) {
            if (ev.type == Event.TIP || ev.type == Event.TNT || ev.type == Event.IGNORE) {
                return;
            }
            long t = perfTime(clock.event());
            ptfence.calls.FlowItem.Mark m = marks.of(ev, cpu, t, 0, decoder == null ? -1 : decoder.psbOffset());
            if (m != null) {
                if (wanted(t)) {
                    prefix(t);
                    if (jsonl) {
                        ptfence.calls.EventMarks.json(sb, m);
                        endJson();
                    } else {
                        ptfence.calls.EventMarks.text(sb, m);
                    }
                    emit(t, sb.toString());
                }
                if (!ev.statusUpdate) {
                    return; // shown with its numbers
                }
            }
            String name = EventNames.of(ev.type);
            if (ev.type == Event.EXEC_MODE || ev.type == Event.TICK || ev.type == Event.CBR || ev.type == Event.MNT
                    || !wanted(t)) {
                return; // state, not flow
            }
            prefix(t);
            if (jsonl) {
                sb.append(",\"event\":\"").append(name).append('"');
                if (!ev.ipSuppressed && ev.ip != 0) {
                    sb.append(",\"ip\":\"0x").append(Long.toHexString(ev.ip)).append('"');
                }
                endJson();
            } else {
                sb.append('[').append(name);
                if (!ev.ipSuppressed && ev.ip != 0) {
                    sb.append(", ip: ").append(Long.toHexString(ev.ip));
                }
                sb.append(']');
            }
            emit(t, sb.toString());
        }

        @Override
        public void error(String kind, int codeNo, long offset, long ip) {
            long t = perfTime(clock.error());
            if (!wanted(t)) {
                return;
            }
            prefix(t);
            if (jsonl) {
                sb.append(",\"error\":\"").append(PtError.message(codeNo)).append("\",\"kind\":\"").append(kind)
                        .append("\",\"offset\":").append(offset).append(",\"ip\":\"0x").append(Long.toHexString(ip))
                        .append('"');
                endJson();
            } else {
                sb.append('[').append(Long.toHexString(offset)).append(", ").append(Long.toHexString(ip)).append(": ")
                        .append(kind).append(": ").append(PtError.message(codeNo)).append(']');
            }
            emit(t, sb.toString());
        }

        @Override
        public void endOfTrace() {
        }
    }
}

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

/**
 * Every CPU's flow, merged by time: each CPU decodes on its own thread into small batches of timed lines, and the
 * printer always takes the earliest line of any CPU, so memory stays bounded however long the recording.
 */
final class MergedFlow {
    private MergedFlow() {
    }

    static void print(RecordingDecode rd, PrintWriter out, RecordingDecode.Request req) throws Exception {
        boolean jsonl = req.format().equals("jsonl");
        rd.<String>decodeMerged((t, lines) -> {
            LineSink s = new LineSink(t.cpu(), lines, rd.code, jsonl, rd.code.forCpu(t.cpu(), -1), req);
            return new RecordingDecode.CpuPart(s, d -> s.decoder = d, () -> { });
        }, line -> out.append(line).append('\n'));
    }

    /** One CPU's lines: instructions with time, symbol and disassembly; events and errors in brackets. */
    private static final class LineSink implements FlowSink {
        private final int cpu;
        private final TimeMerge<String>.Producer queue;
        private final CodeMap code;
        private final boolean jsonl;
        private final CodeSpace space;
        private final RecordingDecode.Request req;
        private final X86Decoder dec = new X86Decoder();
        private final byte[] buf = new byte[15];
        FlowDecoder decoder;
        private final StringBuilder sb = new StringBuilder(128);
        private final ptfence.calls.EventMarks marks = new ptfence.calls.EventMarks();

        LineSink(int cpu, TimeMerge<String>.Producer queue, CodeMap code, boolean jsonl, CodeSpace space,
                RecordingDecode.Request req) {
            this.cpu = cpu;
            this.queue = queue;
            this.code = code;
            this.jsonl = jsonl;
            this.space = space;
            this.req = req;
        }

        private long tsc() {
            return decoder == null ? -1 : decoder.time();
        }

        private long perfTime() {
            long tsc = tsc();
            return tsc >= 0 ? code.clock().toPerf(tsc) : -1;
        }

        private void emit(long time, String line) {
            if (time >= 0 && (time < req.timeFrom() || time > req.timeTo())) {
                return;
            }
            queue.add(time, line);
        }

        private void prefix(long t) {
            sb.setLength(0);
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
            }
        }

        @Override
        public void insn(long ip, int size, int cls, int mode, boolean speculative) {
            marks.insn();
            long t = perfTime();
            long tsc = tsc() >= 0 ? tsc() : CodeSpace.ANY_TIME;
            int len = space.read(ip, tsc, buf, 0, buf.length);
            String text = dec.text(buf, 0, len, mode, ip);
            String sym = code.symbols().describe(ip);
            if (sym == null) {
                var p = code.programAt(ip, t >= 0 ? t : CodeSpace.ANY_TIME);
                if (p != null) {
                    for (var f : p.functions()) {
                        if (f.covers(ip, t >= 0 ? t : f.from())) {
                            sym = ip == f.address() ? f.name() : f.name() + "+0x" + Long.toHexString(ip - f.address());
                        }
                    }
                }
            }
            prefix(t);
            if (jsonl) {
                sb.append(",\"ip\":\"0x").append(Long.toHexString(ip)).append("\",\"insn\":")
                        .append(ptfence.cli.Json.quote(text == null ? "(bad)" : text));
                if (sym != null) {
                    sb.append(",\"sym\":").append(ptfence.cli.Json.quote(sym));
                }
                if (ptfence.insn.InsnClass.isBranch(cls)) {
                    sb.append(",\"class\":\"").append(ptfence.insn.InsnClass.name(cls)).append('"');
                }
                if (speculative) {
                    sb.append(",\"speculative\":true");
                }
                sb.append('}');
            } else {
                sb.append(speculative ? "? " : "");
                Columns.hex16(sb, ip).append("  ");
                Columns.left(sb, text == null ? "(bad)" : text, 36);
                if (sym != null) {
                    sb.append("  <").append(sym).append('>');
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
            long t = perfTime();
            ptfence.calls.FlowItem.Mark m = marks.of(ev, cpu, t, 0, decoder == null ? -1 : decoder.psbOffset());
            if (m != null) {
                prefix(t);
                if (jsonl) {
                    ptfence.calls.EventMarks.json(sb, m).append('}');
                } else {
                    ptfence.calls.EventMarks.text(sb, m);
                }
                emit(t, sb.toString());
                if (!ev.statusUpdate) {
                    return; // shown with its numbers
                }
            }
            String name = EventNames.of(ev.type);
            if (ev.type == Event.EXEC_MODE || ev.type == Event.TICK || ev.type == Event.CBR || ev.type == Event.MNT) {
                return; // state, not flow
            }
            prefix(t);
            if (jsonl) {
                sb.append(",\"event\":\"").append(name).append('"');
                if (!ev.ipSuppressed && ev.ip != 0) {
                    sb.append(",\"ip\":\"0x").append(Long.toHexString(ev.ip)).append('"');
                }
                sb.append('}');
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
            long t = perfTime();
            prefix(t);
            if (jsonl) {
                sb.append(",\"error\":\"").append(PtError.message(codeNo)).append("\",\"kind\":\"").append(kind)
                        .append("\",\"offset\":").append(offset).append(",\"ip\":\"0x").append(Long.toHexString(ip))
                        .append("\"}");
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

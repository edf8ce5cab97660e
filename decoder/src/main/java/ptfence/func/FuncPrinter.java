package ptfence.func;

import java.io.PrintWriter;
import java.util.List;
import ptfence.image.CodeSpace;
import ptfence.insn.X86Decoder;
import ptfence.output.Columns;
import ptfence.sideband.CodeMap;

/** Prints invocations as text (for people) or JSON Lines (schema ptfence.func/1, docs/func.md). */
public final class FuncPrinter {
    private final PrintWriter out;
    private final boolean jsonl;
    private final StringBuilder line = new StringBuilder(96);
    private final X86Decoder dec = new X86Decoder();
    private final byte[] buf = new byte[15];

    private java.util.function.LongFunction<String> names = a -> null;
    private ptfence.sideband.BpfOutputFormat outputs = ptfence.sideband.BpfOutputFormat.hexOnly();

    /** How bpf-output samples inside invocations are shown (hex only by default). */
    public FuncPrinter outputs(ptfence.sideband.BpfOutputFormat format) {
        this.outputs = format;
        return this;
    }

    public FuncPrinter(PrintWriter out, boolean jsonl) {
        this.out = out;
        this.jsonl = jsonl;
    }

    /** Names branch and call targets in the text view ("jmp 0x… <__x86_indirect_thunk_rcx>"). */
    public FuncPrinter names(java.util.function.LongFunction<String> names) {
        this.names = names;
        return this;
    }

    private String withTarget(String text, long ip, long[] path) {
        int at = text.lastIndexOf(" 0x");
        if (at < 0 || text.indexOf(' ') != at || !(text.startsWith("j") || text.startsWith("call"))) {
            return text;
        }
        try {
            long target = Long.parseUnsignedLong(text.substring(at + 3), 16);
            String name = names.apply(target);
            return name == null ? text : text + " <" + name + ">";
        } catch (NumberFormatException e) {
            return text;
        }
    }

    public void header(String recording, FunctionNames.Target target) {
        if (!jsonl) {
            out.append("# ").append(target.name()).append(": ");
            for (int i = 0; i < target.programs().size() && i < 8; i++) {
                out.append(i == 0 ? "" : ", ").append(target.programs().get(i).fullName());
            }
            if (target.programs().size() > 8) {
                out.append(", ... (").append(Integer.toString(target.programs().size())).append(" instances)");
            }
            out.append('\n');
            return;
        }
        out.append("{\"type\":\"header\",\"schema\":\"ptfence.func/1\",\"recording\":").append(str(recording))
                .append(",\"function\":").append(str(target.name())).append(",\"regions\":[");
        List<CodeMap.Function> fns = target.functions();
        for (int i = 0; i < fns.size(); i++) {
            CodeMap.Function f = fns.get(i);
            out.append(i == 0 ? "" : ",").append("{\"name\":").append(str(f.name())).append(",\"address\":")
                    .append(hex(f.address())).append(",\"length\":").append(Long.toString(f.length()))
                    .append(",\"from\":").append(Long.toString(time(f.from()))).append(",\"to\":")
                    .append(Long.toString(time(f.to()))).append('}');
        }
        out.append("]}\n");
    }

    private static long time(long t) {
        return t == Long.MIN_VALUE || t == Long.MAX_VALUE ? -1 : t;
    }

    /**
     * One invocation; {@code code} (the CPU's code space, asked at {@code decoderTime}) gives the disassembly in
     * text.
     */
    public void invocation(Invocation inv, CodeSpace code, long decoderTime) {
        if (jsonl) {
            out.append("{\"type\":\"invocation\",\"cpu\":").append(Integer.toString(inv.cpu())).append(",\"pid\":")
                    .append(Integer.toString(inv.pid())).append(",\"tid\":").append(Integer.toString(inv.tid()))
                    .append(",\"function\":").append(str(inv.function())).append(",\"entry\":")
                    .append(Long.toString(inv.entryTime())).append(",\"exit\":").append(Long.toString(inv.exitTime()))
                    .append(",\"end\":").append(str(endName(inv.end()))).append(",\"insns\":")
                    .append(Integer.toString(inv.instructions())).append(",\"path\":[");
            long[] p = inv.path();
            for (int i = 0; i < p.length; i++) {
                out.append(i == 0 ? "" : ",").append(hex(p[i]));
            }
            out.append("],\"steps\":\"").append(steps(inv.steps())).append("\",\"calls\":[");
            for (int i = 0; i < inv.calls().size(); i++) {
                Invocation.Call c = inv.calls().get(i);
                out.append(i == 0 ? "" : ",").append("{\"index\":").append(Integer.toString(c.index()))
                        .append(",\"from\":").append(hex(c.from())).append(",\"target\":").append(hex(c.target()))
                        .append(",\"name\":").append(str(c.name())).append(",\"enter\":")
                        .append(Long.toString(c.enter())).append(",\"exit\":").append(Long.toString(c.exit()))
                        .append(",\"insns\":").append(Long.toString(c.insns())).append('}');
            }
            out.append("],\"programs\":[");
            for (int i = 0; i < inv.programs().size(); i++) {
                out.append(i == 0 ? "" : ",").append(str(inv.programs().get(i)));
            }
            out.append(']');
            if (!inv.outputs().isEmpty()) {
                line.setLength(0);
                line.append(",\"bpf_output\":[");
                for (int i = 0; i < inv.outputs().size(); i++) {
                    Invocation.Output o = inv.outputs().get(i);
                    line.append(i == 0 ? "" : ",").append("{\"index\":").append(o.index()).append(",\"time\":")
                            .append(o.sample().time());
                    outputs.json(line, o.sample());
                    line.append('}');
                }
                out.append(line).append(']');
            }
            out.append("}\n");
            return;
        }
        out.append(String.format("%s  cpu %d  pid %d/%d  %s -> %s  %s  %d insns  %s%n", inv.function(), inv.cpu(),
                inv.pid(), inv.tid(), seconds(inv.entryTime()), seconds(inv.exitTime()), duration(inv.duration()),
                inv.instructions(), endName(inv.end())));
        long[] p = inv.path();
        byte[] s = inv.steps();
        int call = 0;
        int output = 0;
        for (int i = 0; i < p.length; i++) {
            output = printOutputs(inv, output, i);
            int n = code.read(p[i], decoderTime, buf, 0, buf.length);
            String text = n == 0 ? "(no code)" : dec.text(buf, 0, n, ptfence.insn.ExecMode.BITS64, p[i]);
            text = text == null ? null : withTarget(text, p[i], p);
            String note = switch (s[i]) {
                case Invocation.STEP_TAKEN -> "taken";
                case Invocation.STEP_NOT_TAKEN -> "not taken";
                case Invocation.STEP_TAIL_CALL -> i + 1 < p.length && names.apply(p[i + 1]) != null
                        ? "tail call -> " + names.apply(p[i + 1]) : "tail call";
                case Invocation.STEP_RETURN -> text != null && text.startsWith("jmp") ? "return (thunk)" : "";
                default -> "";
            };
            while (call < inv.calls().size() && inv.calls().get(call).index() == i) {
                Invocation.Call c = inv.calls().get(call++);
                note = (note.isEmpty() ? "" : note + "; ") + (text != null && text.contains("<" + c.name() + ">")
                        ? "" : c.name() + " ") + "returned after " + duration(c.duration())
                        + (c.insns() > 0 ? ", " + c.insns() + " insns traced" : "");
            }
            line.setLength(0);
            Columns.hex16(line.append("  "), p[i]).append("  ");
            Columns.left(line, text == null ? "(bad)" : text, 40).append(' ').append(note);
            out.append(line.toString().stripTrailing()).append('\n');
        }
        printOutputs(inv, output, p.length);
    }

    /** The text lines of the samples written after {@code index} instructions; the next sample's position. */
    private int printOutputs(Invocation inv, int from, int index) {
        int o = from;
        while (o < inv.outputs().size() && inv.outputs().get(o).index() == index) {
            ptfence.sideband.BpfOutputs.Sample x = inv.outputs().get(o++).sample();
            line.setLength(0);
            line.append("  bpf-output ").append(seconds(x.time())).append("  ").append(x.data().length)
                    .append(" bytes: ");
            ptfence.sideband.BpfOutputFormat.hex(line, x.data());
            String f = outputs.fields(x);
            if (f != null) {
                line.append("  ").append(f);
            }
            out.append(line).append('\n');
        }
        return o;
    }

    public void summary(List<Invocation> all) {
        InsnCounts counts = new InsnCounts();
        all.forEach(i -> counts.add(i.instructions()));
        summary(counts);
    }

    public void summary(InsnCounts counts) {
        if (jsonl) {
            out.append("{\"type\":\"summary\",\"invocations\":").append(Integer.toString(counts.count()))
                    .append(",\"insns_min\":").append(Integer.toString(counts.min())).append(",\"insns_median\":")
                    .append(Integer.toString(counts.median())).append(",\"insns_max\":")
                    .append(Integer.toString(counts.max())).append("}\n");
        } else {
            out.append(String.format("# %d invocations; instructions per invocation min %d, median %d, max %d%n",
                    counts.count(), counts.min(), counts.median(), counts.max()));
        }
    }

    static String endName(Invocation.End e) {
        return e.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }

    /** The steps as docs/func.md spells them. */
    public static String steps(byte[] steps) {
        char[] c = new char[steps.length];
        for (int i = 0; i < steps.length; i++) {
            c[i] = ".TNCcrtj".charAt(steps[i]);
        }
        return new String(c);
    }

    private static String seconds(long t) {
        return t < 0 ? "-" : Columns.seconds(new StringBuilder(24), t).toString();
    }

    private static String duration(long ns) {
        if (ns < 0) {
            return "(no timing)";
        }
        return ns < 10_000 ? ns + " ns" : String.format("%.3f us", ns / 1000.0);
    }

    private static String hex(long v) {
        return "\"0x" + Long.toHexString(v) + "\"";
    }

    static String str(String s) {
        return ptfence.cli.Json.quote(s);
    }
}

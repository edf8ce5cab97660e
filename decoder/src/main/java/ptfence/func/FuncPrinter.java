package ptfence.func;

import java.io.PrintWriter;
import java.util.List;
import ptfence.image.CodeSpace;
import ptfence.insn.X86Decoder;
import ptfence.sideband.CodeMap;

/** Prints invocations as text (for people) or JSON Lines (schema ptfence.func/1, docs/func.md). */
public final class FuncPrinter {
    private final PrintWriter out;
    private final boolean jsonl;
    private final X86Decoder dec = new X86Decoder();
    private final byte[] buf = new byte[15];

    public FuncPrinter(PrintWriter out, boolean jsonl) {
        this.out = out;
        this.jsonl = jsonl;
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
            out.append("]}\n");
            return;
        }
        out.append(String.format("%s  cpu %d  pid %d/%d  %s -> %s  %s  %d insns  %s%n", inv.function(), inv.cpu(),
                inv.pid(), inv.tid(), seconds(inv.entryTime()), seconds(inv.exitTime()), duration(inv.duration()),
                inv.instructions(), endName(inv.end())));
        long[] p = inv.path();
        byte[] s = inv.steps();
        int call = 0;
        for (int i = 0; i < p.length; i++) {
            int n = code.read(p[i], decoderTime, buf, 0, buf.length);
            String text = n == 0 ? "(no code)" : dec.text(buf, 0, n, ptfence.insn.ExecMode.BITS64, p[i]);
            String note = switch (s[i]) {
                case Invocation.STEP_TAKEN -> "taken";
                case Invocation.STEP_NOT_TAKEN -> "not taken";
                case Invocation.STEP_TAIL_CALL -> "tail call";
                default -> "";
            };
            while (call < inv.calls().size() && inv.calls().get(call).index() == i) {
                Invocation.Call c = inv.calls().get(call++);
                note = (note.isEmpty() ? "" : note + "; ") + "-> " + c.name() + " " + duration(c.duration())
                        + (c.insns() > 0 ? " " + c.insns() + " insns" : "");
            }
            out.append(String.format("  %016x  %-40s %s%n", p[i], text == null ? "(bad)" : text, note).stripTrailing())
                    .append('\n');
        }
    }

    public void summary(List<Invocation> all) {
        int[] counts = all.stream().mapToInt(Invocation::instructions).sorted().toArray();
        int min = counts.length == 0 ? 0 : counts[0];
        int max = counts.length == 0 ? 0 : counts[counts.length - 1];
        int median = counts.length == 0 ? 0 : counts[counts.length / 2];
        if (jsonl) {
            out.append("{\"type\":\"summary\",\"invocations\":").append(Integer.toString(all.size()))
                    .append(",\"insns_min\":").append(Integer.toString(min)).append(",\"insns_median\":")
                    .append(Integer.toString(median)).append(",\"insns_max\":").append(Integer.toString(max))
                    .append("}\n");
        } else {
            out.append(String.format("# %d invocations; instructions per invocation min %d, median %d, max %d%n",
                    all.size(), min, median, max));
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
        return t < 0 ? "-" : String.format("%d.%09d", t / 1_000_000_000L, t % 1_000_000_000L);
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

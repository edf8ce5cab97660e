package ptfence.calls;

import java.io.PrintWriter;
import ptfence.cli.Json;

/**
 * {@code --call-trace} and {@code --call-ret-trace}: the calls (and returns) of every thread, indented by the
 * thread's stack depth, named by their function, as perf script's options of the same names print them: a call (an
 * interrupt, a syscall) is named by its target, a return or the end of tracing by the function left; the depth is
 * the stack's after a call and before a return. A return shows the instructions of the call it ends, and with CYC
 * its cycles and IPC. Events (cbr, psb, ptwrite, power) and the points where the stack was lost are shown between.
 */
public final class CallTraceView extends LineView {
    private static final int CALLS = BranchFlags.CALL | BranchFlags.ASYNC | BranchFlags.TRACE_END;
    private static final int RETURNS = BranchFlags.RETURN | BranchFlags.TRACE_BEGIN;

    private final boolean returns;

    /**
     * @param returns  also the returns and trace begins ({@code --call-ret-trace}), each with its flags
     * @param from     only items at perf times in [from, to] (untimed ones always)
     */
    public CallTraceView(PrintWriter out, boolean jsonl, boolean returns, Symbolizer names, long from, long to) {
        super(out, jsonl, names, from, to);
        this.returns = returns;
    }

    @Override
    void branch(ThreadStack t, FlowItem.Branch b) {
        int f = b.flags();
        if ((f & (returns ? CALLS | RETURNS : CALLS)) == 0) {
            return;
        }
        int depth = Math.max(0, t.depth()) + ((f & BranchFlags.RETURN) != 0 ? 1 : 0);
        long at = (f & (BranchFlags.CALL | BranchFlags.TRACE_BEGIN)) != 0 ? b.to() : b.from();
        String name = at == 0 ? null : names.function(at, b.time(), b.cpu());
        if (jsonl) {
            Lines.kind(sb, f);
            sb.append(",\"depth\":").append(depth).append(",\"from\":").append(Lines.hex(b.from()))
                    .append(",\"to\":").append(Lines.hex(b.to()));
            if (name != null) {
                sb.append(",\"name\":").append(Json.quote(name));
            }
            if (t.returnInsns() >= 0) {
                sb.append(",\"insns\":").append(t.returnInsns());
                if (t.returnCycles() > 0) {
                    sb.append(",\"cycles\":").append(t.returnCycles()).append(",\"ipc\":")
                            .append(ipc(t.returnInsns(), t.returnCycles()));
                }
            }
            if (t.untrusted()) {
                sb.append(",\"untrusted\":true");
            }
            out.append(sb.append('}')).append('\n');
            return;
        }
        if (returns) {
            sb.append(' ').append(BranchFlags.perfName(f)).append(' ');
        }
        sb.append(" ".repeat(depth * 4));
        if (name != null) {
            sb.append(name);
        } else if (at != 0) {
            String h = Long.toHexString(at);
            sb.append(" ".repeat(Math.max(0, 16 - h.length()))).append(h);
        }
        if (t.returnCycles() > 0) {
            // as perf script -F +ipc: "IPC: 1.23 (insns/cycles)", for the call this return ends
            sb.append("  IPC: ").append(ipc(t.returnInsns(), t.returnCycles())).append(" (")
                    .append(t.returnInsns()).append('/').append(t.returnCycles()).append(')');
        }
        out.append(sb).append('\n');
    }

    /** Instructions per cycle with two decimals, truncated as perf prints it. */
    static String ipc(long insns, long cycles) {
        long x = insns * 100 / cycles;
        return x / 100 + "." + (x % 100 < 10 ? "0" : "") + x % 100;
    }
}

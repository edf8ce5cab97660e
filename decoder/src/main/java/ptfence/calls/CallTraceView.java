package ptfence.calls;

import java.io.IOException;
import java.io.PrintWriter;
import ptfence.cli.Json;

/**
 * {@code --call-trace} and {@code --call-ret-trace}: the calls (and returns) of every thread, indented by the
 * thread's stack depth, named by their function, as perf script's options of the same names print them: a call (an
 * interrupt, a syscall) is named by its target, a return or the end of tracing by the function left; the depth is
 * the stack's after a call and before a return. Events (cbr, psb, ptwrite, power) and the points where the stack was
 * lost are shown between them.
 */
public final class CallTraceView implements CallView {
    private static final int CALLS = BranchFlags.CALL | BranchFlags.ASYNC | BranchFlags.TRACE_END;
    private static final int RETURNS = BranchFlags.RETURN | BranchFlags.TRACE_BEGIN;

    private final PrintWriter out;
    private final boolean jsonl;
    private final boolean returns;
    private final Symbolizer names;
    private final long from;
    private final long to;
    private final StringBuilder sb = new StringBuilder(160);

    /**
     * @param returns  also the returns and trace begins ({@code --call-ret-trace}), each with its flags
     * @param from     only items at perf times in [from, to] (untimed ones always)
     */
    public CallTraceView(PrintWriter out, boolean jsonl, boolean returns, Symbolizer names, long from, long to) {
        this.out = out;
        this.jsonl = jsonl;
        this.returns = returns;
        this.names = names;
        this.from = from;
        this.to = to;
    }

    @Override
    public void item(ThreadStack t, FlowItem item) throws IOException {
        if (item.time() >= 0 && (item.time() < from || item.time() > to)) {
            return;
        }
        Lines.head(sb, t, item, jsonl);
        String other = Lines.other(sb, item, jsonl);
        if (other != null) {
            out.append(other).append('\n');
            return;
        }
        FlowItem.Branch b = (FlowItem.Branch) item;
        int f = b.flags();
        if ((f & (returns ? CALLS | RETURNS : CALLS)) == 0) {
            return;
        }
        int depth = Math.max(0, t.depth()) + ((f & BranchFlags.RETURN) != 0 ? 1 : 0);
        long at;
        if ((f & (BranchFlags.CALL | BranchFlags.TRACE_BEGIN)) != 0) {
            at = b.to();
        } else {
            at = b.from();
        }
        String name = at == 0 ? null : names.function(at, b.time(), b.cpu());
        if (jsonl) {
            sb.append(",\"class\":\"").append(BranchFlags.className(f)).append("\",\"flags\":\"")
                    .append(BranchFlags.perfName(f).trim()).append('"');
            if ((f & BranchFlags.TRACE_BEGIN) != 0) {
                sb.append(",\"trace\":\"begin\"");
            } else if ((f & BranchFlags.TRACE_END) != 0) {
                sb.append(",\"trace\":\"end\"");
            }
            sb.append(",\"depth\":").append(depth).append(",\"from\":").append(Lines.hex(b.from()))
                    .append(",\"to\":").append(Lines.hex(b.to()));
            if (name != null) {
                sb.append(",\"name\":").append(Json.quote(name));
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
        out.append(sb).append('\n');
    }

    @Override
    public void end() {
    }
}

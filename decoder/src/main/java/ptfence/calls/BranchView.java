package ptfence.calls;

import java.io.PrintWriter;
import ptfence.cli.Json;

/**
 * {@code --branches}: every taken branch and every start and end of tracing, from -> to with perf's flags (call,
 * return, jcc, jmp, syscall, sysret, int, iret, hw int, async, tr strt, tr end, ...), as perf script
 * {@code --itrace=b -F +flags,+ip,+addr} lists them; events and losses between them.
 */
public final class BranchView extends LineView {
    public BranchView(PrintWriter out, boolean jsonl, Symbolizer names, long from, long to) {
        super(out, jsonl, names, from, to);
    }

    @Override
    void branch(ThreadStack t, FlowItem.Branch b) {
        String fromSym = b.from() == 0 ? null : names.describe(b.from(), b.time(), b.cpu());
        String toSym = b.to() == 0 ? null : names.describe(b.to(), b.time(), b.cpu());
        if (jsonl) {
            sb.append(",\"from\":").append(Lines.hex(b.from())).append(",\"to\":").append(Lines.hex(b.to()));
            Lines.kind(sb, b.flags());
            if (fromSym != null) {
                sb.append(",\"from_sym\":").append(Json.quote(fromSym));
            }
            if (toSym != null) {
                sb.append(",\"to_sym\":").append(Json.quote(toSym));
            }
            out.append(sb.append('}')).append('\n');
            return;
        }
        sb.append("  ").append(BranchFlags.perfName(b.flags())).append(' ');
        address(b.from(), fromSym);
        sb.append(" => ");
        address(b.to(), toSym);
        out.append(sb).append('\n');
    }

    private void address(long a, String sym) {
        String h = Long.toHexString(a);
        sb.append(" ".repeat(Math.max(0, 16 - h.length()))).append(h);
        sb.append(' ').append(sym == null ? "([unknown])" : sym);
    }
}

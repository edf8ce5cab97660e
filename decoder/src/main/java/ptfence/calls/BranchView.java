package ptfence.calls;

import java.io.IOException;
import java.io.PrintWriter;

/**
 * {@code --branches}: every taken branch and every start and end of tracing, from -> to with perf's flags (call,
 * return, jcc, jmp, syscall, sysret, int, iret, hw int, async, tr strt, tr end, ...), as perf script
 * {@code --itrace=b -F +flags,+ip,+addr} lists them; events and losses between them.
 */
public final class BranchView implements CallView {
    private final PrintWriter out;
    private final boolean jsonl;
    private final Symbolizer names;
    private final long from;
    private final long to;
    private final StringBuilder sb = new StringBuilder(160);

    public BranchView(PrintWriter out, boolean jsonl, Symbolizer names, long from, long to) {
        this.out = out;
        this.jsonl = jsonl;
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
        String fromSym = b.from() == 0 ? null : names.describe(b.from(), b.time(), b.cpu());
        String toSym = b.to() == 0 ? null : names.describe(b.to(), b.time(), b.cpu());
        if (jsonl) {
            sb.append(",\"from\":").append(Lines.hex(b.from())).append(",\"to\":").append(Lines.hex(b.to()))
                    .append(",\"class\":\"").append(BranchFlags.className(f)).append('"')
                    .append(",\"flags\":\"").append(BranchFlags.perfName(f).trim()).append('"');
            if ((f & BranchFlags.TRACE_BEGIN) != 0) {
                sb.append(",\"trace\":\"begin\"");
            } else if ((f & BranchFlags.TRACE_END) != 0) {
                sb.append(",\"trace\":\"end\"");
            }
            if ((f & BranchFlags.IN_TX) != 0) {
                sb.append(",\"in_tx\":true");
            }
            if (fromSym != null) {
                sb.append(",\"from_sym\":").append(ptfence.cli.Json.quote(fromSym));
            }
            if (toSym != null) {
                sb.append(",\"to_sym\":").append(ptfence.cli.Json.quote(toSym));
            }
            out.append(sb.append('}')).append('\n');
            return;
        }
        sb.append("  ").append(BranchFlags.perfName(f)).append(' ');
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

    @Override
    public void end() {
    }
}

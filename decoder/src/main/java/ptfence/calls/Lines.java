package ptfence.calls;

import ptfence.cli.Json;
import ptfence.output.Columns;

/** The parts the call-trace and branch lines share: who and when, events and losses, in text or JSON Lines. */
final class Lines {
    private Lines() {
    }

    /** perf script's line head: "pid/tid [cpu] seconds: " (text), or the opening fields of a JSON object. */
    static StringBuilder head(StringBuilder sb, ThreadStack t, FlowItem item, boolean jsonl) {
        sb.setLength(0);
        if (jsonl) {
            sb.append("{\"cpu\":").append(item.cpu()).append(",\"pid\":").append(t.pid()).append(",\"tid\":")
                    .append(t.tid()).append(",\"time\":").append(item.time());
            return sb;
        }
        String who = t.tid() > 0 ? t.pid() + "/" + t.tid() : "-/-";
        Columns.right(sb, who, 13, ' ').append(" [");
        Columns.right(sb, item.cpu() < 0 ? "-" : Integer.toString(item.cpu()), 3, '0').append("] ");
        if (item.time() < 0) {
            sb.append("                -");
        } else {
            StringBuilder s = Columns.seconds(new StringBuilder(), item.time());
            Columns.right(sb, s.toString(), 17, ' ');
        }
        return sb.append(": ");
    }

    /** An event (cbr, psb, ptwrite, ...) or a loss as the rest of a line; null for a branch. */
    static String other(StringBuilder sb, FlowItem item, boolean jsonl) {
        if (item instanceof FlowItem.Mark m) {
            return (jsonl ? EventMarks.json(sb, m).append('}') : EventMarks.text(sb, m)).toString();
        }
        if (item instanceof FlowItem.Loss l) {
            if (jsonl) {
                return sb.append(",\"event\":\"stack_lost\",\"reason\":").append(Json.quote(l.reason())).append('}')
                        .toString();
            }
            return sb.append("[stack lost: ").append(l.reason()).append(']').toString();
        }
        return null;
    }

    /** A branch's kind in JSON: {@code ,"class":…,"flags":…} and "trace" (begin/end), "in_tx" where they apply. */
    static StringBuilder kind(StringBuilder sb, int f) {
        sb.append(",\"class\":\"").append(BranchFlags.className(f)).append("\",\"flags\":\"")
                .append(BranchFlags.perfName(f).trim()).append('"');
        if ((f & BranchFlags.TRACE_BEGIN) != 0) {
            sb.append(",\"trace\":\"begin\"");
        } else if ((f & BranchFlags.TRACE_END) != 0) {
            sb.append(",\"trace\":\"end\"");
        }
        if ((f & BranchFlags.IN_TX) != 0) {
            sb.append(",\"in_tx\":true");
        }
        return sb;
    }

    static String hex(long a) {
        return "\"0x" + Long.toHexString(a) + "\"";
    }
}

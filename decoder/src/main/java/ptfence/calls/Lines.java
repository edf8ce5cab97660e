package ptfence.calls;

import ptfence.cli.Json;

/** The parts the call-trace and branch JSON lines share: who and when, events and losses. */
final class Lines {
    private Lines() {
    }

    /** The opening fields of a JSON object: cpu, pid, tid, time. */
    static StringBuilder head(StringBuilder sb, ThreadStack t, FlowItem item) {
        sb.setLength(0);
        return sb.append("{\"cpu\":").append(item.cpu()).append(",\"pid\":").append(t.pid()).append(",\"tid\":")
                .append(t.tid()).append(",\"time\":").append(item.time());
    }

    /** An event (cbr, psb, ptwrite, ...) or a loss as the rest of the object (true), or false for a branch. */
    static boolean other(StringBuilder sb, FlowItem item) {
        if (item instanceof FlowItem.Mark m) {
            EventMarks.json(sb, m).append('}');
            return true;
        }
        if (item instanceof FlowItem.Loss l) {
            sb.append(",\"event\":\"stack_lost\",\"reason\":").append(Json.quote(l.reason()));
            if (l.ip() != 0) {
                sb.append(",\"ip\":").append(hex(l.ip()));
            }
            sb.append(",\"code\":").append(PerfLines.perfCode(l.code())).append('}');
            return true;
        }
        return false;
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

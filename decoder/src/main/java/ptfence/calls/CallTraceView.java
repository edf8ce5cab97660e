package ptfence.calls;

import java.io.IOException;
import java.io.Writer;
import ptfence.cli.Json;
import ptfence.symbol.Symbolizer;

/**
 * {@code --call-trace} and {@code --call-ret-trace}: the calls (and returns) of every thread, indented by the
 * thread's stack depth, named by their function, as perf script's options of the same names print them: a call (an
 * interrupt, a syscall, an end of tracing) is named by its target, a return or the end of tracing by the function
 * left; the depth is the stack's after a call and before a return. Text is perf's lines (events and trace errors
 * between them); in JSON Lines a return also gives the instructions of the call it ends, with CYC its cycles and IPC.
 */
public final class CallTraceView extends LineView {
    private static final int CALLS = BranchFlags.CALL | BranchFlags.ASYNC | BranchFlags.TRACE_END;
    private static final int RETURNS = BranchFlags.RETURN | BranchFlags.TRACE_BEGIN;

    private final int shown;

    /**
     * perf's --call-trace ({@code returns} false) or --call-ret-trace with perf's fields, events and errors.
     *
     * @param from only items at perf times in [from, to] (untimed ones always)
     */
    public CallTraceView(Writer out, boolean jsonl, boolean returns, Symbolizer names, PerfLines.Comms comms,
            PerfLines.Recording rec, long from, long to) {
        this(out, jsonl, returns, names, comms, rec, new LineOptions(returns ? SampleFields.callRetTrace()
                : SampleFields.callTrace(), true, true, from, to));
    }

    /** With the fields, events and errors of {@code options} (perf's -F and --itrace as the command line gave them). */
    public CallTraceView(Writer out, boolean jsonl, boolean returns, Symbolizer names, PerfLines.Comms comms,
            PerfLines.Recording rec, LineOptions options) {
        super(out, jsonl, names, comms, rec, options);
        this.shown = returns ? CALLS | RETURNS : CALLS;
    }

    @Override
    boolean shows(FlowItem.Branch b) {
        return (b.flags() & shown) != 0;
    }

    @Override
    void json(ThreadStack t, FlowItem.Branch b) throws IOException {
        int f = b.flags();
        if (!shows(b)) {
            return;
        }
        long at = (f & (BranchFlags.CALL | BranchFlags.TRACE_BEGIN)) != 0 ? b.to() : b.from();
        String name = function(at, b.time(), t.pid());
        Lines.kind(sb, f);
        sb.append(",\"depth\":").append(depth(t, b)).append(",\"from\":").append(Lines.hex(b.from()))
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
        sb.append('}');
        emit();
    }

    /** Instructions per cycle with two decimals, truncated as perf prints it. */
    static String ipc(long insns, long cycles) {
        long x = insns * 100 / cycles;
        return x / 100 + "." + (x % 100 < 10 ? "0" : "") + x % 100;
    }
}

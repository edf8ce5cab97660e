package ptfence.calls;

import java.io.IOException;
import java.io.Writer;
import ptfence.cli.Json;
import ptfence.symbol.Symbolizer;

/**
 * {@code --branches}: every taken branch and every start and end of tracing, from -> to with perf's flags (call,
 * return, jcc, jmp, syscall, sysret, int, iret, hw int, async, tr strt, tr end, ...). Text is perf script
 * {@code --itrace=b}'s lines (perf's default fields, or those of -F); JSON Lines also give the events and losses.
 */
public final class BranchView extends LineView {
    /** perf's --itrace=b: its default fields, no events, no errors. */
    public BranchView(Writer out, boolean jsonl, Symbolizer names, PerfLines.Comms comms, PerfLines.Recording rec,
            long from, long to) {
        this(out, jsonl, names, comms, rec, new LineOptions(SampleFields.branches(), false, false, from, to));
    }

    public BranchView(Writer out, boolean jsonl, Symbolizer names, PerfLines.Comms comms, PerfLines.Recording rec,
            LineOptions options) {
        super(out, jsonl, names, comms, rec, options);
    }

    @Override
    boolean shows(FlowItem.Branch b) {
        return true;
    }

    @Override
    void json(ThreadStack t, FlowItem.Branch b) throws IOException {
        String fromSym = describe(b.from(), b.time(), t.pid());
        String toSym = describe(b.to(), b.time(), t.pid());
        sb.append(",\"from\":").append(Lines.hex(b.from())).append(",\"to\":").append(Lines.hex(b.to()));
        Lines.kind(sb, b.flags());
        if (fromSym != null) {
            sb.append(",\"from_sym\":").append(Json.quote(fromSym));
        }
        if (toSym != null) {
            sb.append(",\"to_sym\":").append(Json.quote(toSym));
        }
        sb.append('}');
        emit();
    }
}

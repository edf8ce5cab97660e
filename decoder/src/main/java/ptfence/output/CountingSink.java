package ptfence.output;

import java.io.PrintWriter;
import ptfence.flow.Event;
import ptfence.flow.FlowSink;
import ptfence.insn.CodeCache;

/** --quiet: prints only errors (as ptxed does); the decoder keeps the counts. */
public final class CountingSink implements FlowSink {
    private final PtxedPrinter errors;

    public CountingSink(PrintWriter out) {
        this.errors = new PtxedPrinter(out, false, false);
    }

    @Override
    public void insn(long ip, int size, int cls, int mode, boolean speculative) {
    }

    @Override
    public void block(long ip, int count, CodeCache code, int off, int mode, boolean speculative) {
    }

    @Override
    public boolean countsOnly() {
        return true;
    }

    @Override
    public void event(Event ev) {
    }

    @Override
    public void error(String kind, int code, long offset, long ip) {
        errors.error(kind, code, offset, ip);
    }

    @Override
    public void endOfTrace() {
    }
}

package ptfence.calls;

import java.io.IOException;
import java.io.PrintWriter;

/**
 * A view that prints a line per item of the merged flow, in text or JSON Lines: events and losses as they are, and
 * branches as the view says; only items in the --time range (untimed ones always).
 */
abstract class LineView implements CallView {
    final PrintWriter out;
    final boolean jsonl;
    final Symbolizer names;
    private final long from;
    private final long to;
    final StringBuilder sb = new StringBuilder(160);

    LineView(PrintWriter out, boolean jsonl, Symbolizer names, long from, long to) {
        this.out = out;
        this.jsonl = jsonl;
        this.names = names;
        this.from = from;
        this.to = to;
    }

    @Override
    public final void item(ThreadStack t, FlowItem item) throws IOException {
        if (item.time() >= 0 && (item.time() < from || item.time() > to)) {
            return;
        }
        Lines.head(sb, t, item, jsonl);
        String other = Lines.other(sb, item, jsonl);
        if (other != null) {
            out.append(other).append('\n');
        } else {
            branch(t, (FlowItem.Branch) item);
        }
    }

    /** Prints {@code b} of thread {@code t}, if the view shows it; {@link #sb} holds the line's head. */
    abstract void branch(ThreadStack t, FlowItem.Branch b);

    @Override
    public void end() {
    }
}

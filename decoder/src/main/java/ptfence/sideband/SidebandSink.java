package ptfence.sideband;

import java.io.OutputStream;
import java.io.PrintWriter;
import ptfence.cli.Json;
import ptfence.flow.Event;
import ptfence.flow.FlowSink;
import ptfence.insn.CodeCache;
import ptfence.output.TextSink;

/**
 * Passes the flow on to {@code next} and shows every event to a {@link PeventSession} right after it was printed,
 * as ptxed does: the session's records and messages go to the same output, between the lines they fall between.
 * When the session's code changes, {@code codeChanged} runs (the decoder forgets the code it cached).
 */
public final class SidebandSink implements FlowSink {
    private final FlowSink next;
    private final PeventSession session;
    private final TextSink text;
    private Runnable codeChanged = () -> { };

    /**
     * @param json write each sideband line as a JSON object {@code {"type":"sideband","text":...}} (jsonl format)
     *             instead of as it is
     */
    public SidebandSink(FlowSink next, PeventSession session, PrintWriter out, boolean json) {
        this.next = next;
        this.session = session;
        this.text = new TextSink(new Lines(out, json), 4096);
    }

    /** Passes the session's text on line by line (sideband output is rare: a few lines per record). */
    private static final class Lines extends OutputStream {
        private final PrintWriter out;
        private final boolean json;
        private final StringBuilder line = new StringBuilder();

        Lines(PrintWriter out, boolean json) {
            this.out = out;
            this.json = json;
        }

        @Override
        public void write(int b) {
            char c = (char) (b & 0xff);
            if (c != '\n') {
                line.append(c);
                return;
            }
            if (json) {
                out.append("{\"type\":\"sideband\",\"text\":").append(Json.quote(line.toString())).append("}\n");
            } else {
                out.append(line).append('\n');
            }
            line.setLength(0);
        }
    }

    /** What to run when the session's code changed (the decoder is made after its sink). */
    public void onCodeChange(Runnable r) {
        codeChanged = r;
    }

    /** Reads every sideband file's first record (errors printed), before decoding starts. */
    public void start() {
        session.start(text);
        text.flush();
    }

    @Override
    public void event(Event ev) {
        next.event(ev);
        boolean changed = session.onEvent(ev, text);
        text.flush();
        if (changed) {
            codeChanged.run();
        }
    }

    @Override
    public void insn(long ip, int size, int cls, int mode, boolean speculative) {
        next.insn(ip, size, cls, mode, speculative);
    }

    @Override
    public void block(long ip, int count, CodeCache code, int off, int mode, boolean speculative) {
        next.block(ip, count, code, off, mode, speculative);
    }

    @Override
    public void error(String kind, int code, long offset, long ip) {
        next.error(kind, code, offset, ip);
    }

    @Override
    public void endOfTrace() {
        next.endOfTrace();
    }

    @Override
    public void beginBlock() {
        next.beginBlock();
    }

    @Override
    public boolean countsOnly() {
        return next.countsOnly();
    }

    @Override
    public void disabledAfterResync() {
        next.disabledAfterResync();
    }

    @Override
    public void resumedAtPsb() {
        next.resumedAtPsb();
    }

    @Override
    public void noCode(long ip, long tsc) {
        next.noCode(ip, tsc);
    }
}

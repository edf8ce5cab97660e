package ptfence.output;

import java.io.PrintWriter;
import ptfence.flow.Event;
import ptfence.flow.FlowSink;
import ptfence.image.CodeSpace;
import ptfence.image.Symbols;
import ptfence.insn.CodeCache;
import ptfence.insn.X86Decoder;

/** ptxed's lines plus capstone's disassembly after each address. */
public final class TextPrinter implements FlowSink {
    private final PrintWriter out;
    private final CodeSpace image;
    private final PtxedPrinter events;
    private final X86Decoder dec = new X86Decoder();
    private final byte[] buf = new byte[15];

    private final Symbols symbols;
    private boolean timeColumn;
    private final StringBuilder line = new StringBuilder(32);

    private boolean rawInsn;

    /** ptxed --raw-insn: each instruction's bytes after its address, padded to 15 bytes. */
    public TextPrinter rawInsn(boolean on) {
        rawInsn = on;
        return this;
    }

    /** ptxed --att: AT&T syntax. */
    public TextPrinter att(boolean on) {
        dec.att(on);
        return this;
    }

    /** ptxed --block:show-blocks: "[block]" where each block starts. */
    public TextPrinter showBlocks(boolean on) {
        events.showBlocks(on);
        return this;
    }

    @Override
    public void beginBlock() {
        events.beginBlock();
    }

    /** ptxed --offset: the trace offset first on each line. */
    public TextPrinter offsetColumn(java.util.function.LongSupplier offsets) {
        events.offsetColumn(offsets);
        return this;
    }

    /** --time: the last event's TSC estimate before each instruction, as ptxed prints it. */
    public TextPrinter timeColumn(boolean on) {
        timeColumn = on;
        return this;
    }

    public TextPrinter(PrintWriter out, CodeSpace image, Symbols symbols, boolean eventIp, boolean eventTime) {
        this.out = out;
        this.image = image;
        this.symbols = symbols;
        this.events = new PtxedPrinter(out, eventIp, eventTime);
    }

    @Override
    public void insn(long ip, int size, int cls, int mode, boolean speculative) {
        int n = image.read(ip, CodeSpace.ANY_TIME, buf, 0, buf.length);
        String text = dec.text(buf, 0, n, mode, ip);
        line.setLength(0);
        events.offset(line);
        if (timeColumn) {
            Columns.hex16(line, events.time()).append("  ");
        }
        out.append(line);
        if (speculative) {
            out.append("? ");
        }
        String sym = symbols == null ? null : symbols.describe(ip);
        line.setLength(0);
        Columns.hex16(line, ip);
        if (rawInsn) {
            int len = Math.min(size > 0 ? size : n, n);
            for (int i = 0; i < X86Decoder.MAX_LENGTH; i++) {
                if (i < len) {
                    line.append(' ').append(Character.forDigit((buf[i] >> 4) & 0xf, 16))
                            .append(Character.forDigit(buf[i] & 0xf, 16));
                } else {
                    line.append("   ");
                }
            }
        }
        line.append("  ");
        Columns.left(line, text == null ? "(bad)" : text, 40);
        if (sym != null) {
            line.append("  <").append(sym).append('>');
        }
        out.append(line).append('\n');
    }

    @Override
    public void block(long ip, int count, CodeCache code, int off, int mode, boolean speculative) {
        long a = ip;
        int o = off;
        for (int i = 0; i < count; i++) {
            int len = code == null ? 0 : code.length(o, dec);
            insn(a, len, 0, mode, speculative);
            a += len;
            o += len;
        }
    }

    @Override
    public void event(Event ev) {
        events.event(ev);
    }

    @Override
    public void error(String kind, int code, long offset, long ip) {
        events.error(kind, code, offset, ip);
    }

    @Override
    public void endOfTrace() {
        events.endOfTrace();
    }

    @Override
    public void disabledAfterResync() {
        events.disabledAfterResync();
    }
}

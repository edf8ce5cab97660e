package ptfence.output;

import java.io.PrintWriter;
import ptfence.flow.Event;
import ptfence.flow.FlowSink;
import ptfence.flow.PtError;
import ptfence.insn.CodeCache;
import ptfence.insn.ExecMode;
import ptfence.insn.InsnClass;
import ptfence.insn.X86Decoder;

/** One JSON object per line for each instruction, event and error (schema in docs/flow.md). */
public final class JsonlPrinter implements FlowSink {
    private final PrintWriter out;
    private final X86Decoder dec = new X86Decoder();
    private final StringBuilder sb = new StringBuilder(128);

    private boolean time;
    /** The time of the last event: events carry the trace's TSC estimate (ptxed's instruction time). */
    private long lastTsc;
    private boolean haveTsc;

    public JsonlPrinter(PrintWriter out) {
        this.out = out;
    }

    /** --time: give each instruction the last event's TSC estimate ({@code "tsc"}), as ptxed --time does. */
    public JsonlPrinter time(boolean on) {
        time = on;
        return this;
    }

    private static String hex(long v) {
        return "\"0x" + Long.toHexString(v) + "\"";
    }

    private static int bits(int mode) {
        return switch (mode) {
            case ExecMode.BITS16 -> 16;
            case ExecMode.BITS32 -> 32;
            case ExecMode.BITS64 -> 64;
            default -> 0;
        };
    }

    @Override
    public void insn(long ip, int size, int cls, int mode, boolean speculative) {
        sb.setLength(0);
        sb.append("{\"type\":\"insn\",\"ip\":").append(hex(ip)).append(",\"size\":").append(size)
                .append(",\"class\":\"").append(InsnClass.name(cls)).append("\",\"mode\":").append(bits(mode));
        if (speculative) {
            sb.append(",\"speculative\":true");
        }
        if (time && haveTsc) {
            sb.append(",\"tsc\":").append(lastTsc);
        }
        out.append(sb).append("}\n");
    }

    @Override
    public void block(long ip, int count, CodeCache code, int off, int mode, boolean speculative) {
        long a = ip;
        int o = off;
        for (int i = 0; i < count; i++) {
            int len = code == null ? 0 : code.length(o, dec);
            insn(a, len, code == null ? InsnClass.OTHER : code.cls(o), mode, speculative);
            a += len;
            o += len;
        }
    }

    @Override
    public void event(Event ev) {
        lastTsc = ev.tsc;
        haveTsc = ev.hasTsc;
        sb.setLength(0);
        sb.append("{\"type\":\"event\",\"event\":\"").append(EventNames.of(ev.type)).append('"');
        if (ev.statusUpdate) {
            sb.append(",\"status\":true");
        }
        if (!ev.ipSuppressed && ev.type != Event.STOP && ev.type != Event.PWRE && ev.type != Event.PWRX
                && ev.type != Event.CBR && ev.type != Event.MNT) {
            sb.append(",\"ip\":").append(hex(ev.ip));
        }
        switch (ev.type) {
            case Event.ENABLED -> sb.append(",\"resumed\":").append(ev.resumed);
            case Event.ASYNC_DISABLED, Event.ASYNC_BRANCH -> sb.append(",\"from\":").append(hex(ev.from));
            case Event.PAGING, Event.ASYNC_PAGING -> sb.append(",\"cr3\":").append(hex(ev.cr3)).append(",\"nr\":").append(ev.nonRoot);
            case Event.VMCS, Event.ASYNC_VMCS -> sb.append(",\"base\":").append(hex(ev.base));
            case Event.EXEC_MODE -> sb.append(",\"mode\":").append(bits(ev.mode));
            case Event.TSX -> sb.append(",\"speculative\":").append(ev.speculative).append(",\"aborted\":").append(ev.aborted);
            case Event.MWAIT -> sb.append(",\"hints\":").append(ev.hints).append(",\"ext\":").append(ev.ext);
            case Event.PWRE -> sb.append(",\"state\":").append(ev.state).append(",\"sub_state\":").append(ev.subState).append(",\"hw\":").append(ev.hw);
            case Event.PWRX -> sb.append(",\"last\":").append(ev.last).append(",\"deepest\":").append(ev.deepest)
                    .append(",\"interrupt\":").append(ev.interrupt).append(",\"store\":").append(ev.store)
                    .append(",\"autonomous\":").append(ev.autonomous);
            case Event.PTWRITE, Event.MNT -> sb.append(",\"payload\":").append(hex(ev.payload));
            case Event.CBR -> sb.append(",\"ratio\":").append(ev.ratio);
            default -> { }
        }
        if (ev.hasTsc) {
            sb.append(",\"tsc\":").append(ev.tsc);
        }
        out.append(sb).append("}\n");
    }

    @Override
    public void error(String kind, int code, long offset, long ip) {
        out.append("{\"type\":\"error\",\"kind\":\"").append(kind).append("\",\"offset\":").append(Long.toString(offset))
                .append(",\"ip\":").append(hex(ip)).append(",\"message\":\"").append(PtError.message(code)).append("\"}\n");
    }

    @Override
    public void disabledAfterResync() {
        out.append("{\"type\":\"event\",\"event\":\"disabled\",\"resync\":true}\n");
    }

    @Override
    public void endOfTrace() {
        out.append("{\"type\":\"end_of_trace\"}\n");
    }
}

package ptfence.output;

import java.io.PrintWriter;
import ptfence.flow.Event;
import ptfence.flow.FlowSink;
import ptfence.flow.PtError;
import ptfence.insn.CodeCache;
import ptfence.insn.ExecMode;
import ptfence.insn.X86Decoder;

/**
 * Writes the flow the way {@code ptxed --no-inst} does: one instruction address per line (prefixed
 * "? " while speculative), events and errors in brackets.
 */
public final class PtxedPrinter implements FlowSink {
    private final PrintWriter out;
    private final boolean eventIp;
    private final boolean eventTime;
    private final X86Decoder dec = new X86Decoder();
    private final StringBuilder line = new StringBuilder(64);

    private boolean showBlocks;
    private boolean timeColumn;
    /** The time of the last event (ptxed's instruction time: events carry the trace's TSC estimate). */
    private long time;

    /** The time of the last event, as --time prints it before an instruction. */
    long time() {
        return time;
    }

    /** ptxed --time: print the last event's TSC estimate before each instruction. */
    public PtxedPrinter timeColumn(boolean on) {
        timeColumn = on;
        return this;
    }

    private java.util.function.LongSupplier offsets;

    /** ptxed --offset: the trace offset the decoder has read to, first on each instruction and event line. */
    public PtxedPrinter offsetColumn(java.util.function.LongSupplier offsets) {
        this.offsets = offsets;
        return this;
    }

    /** The offset column ptxed --offset puts first ({@code %016x} and two spaces), if on. */
    void offset(StringBuilder sb) {
        if (offsets != null) {
            Columns.hex16(sb, offsets.getAsLong()).append("  ");
        }
    }

    /** ptxed --block:show-blocks: a "[block]" line where each block starts. */
    public PtxedPrinter showBlocks(boolean on) {
        showBlocks = on;
        return this;
    }

    @Override
    public void beginBlock() {
        if (showBlocks) {
            out.append("[block]\n");
        }
    }

    public PtxedPrinter(PrintWriter out, boolean eventIp, boolean eventTime) {
        this.out = out;
        this.eventIp = eventIp;
        this.eventTime = eventTime;
    }

    private void printIp(long ip, boolean speculative) {
        line.setLength(0);
        offset(line);
        if (timeColumn) {
            Columns.hex16(line, time);
            line.append("  ");
        }
        if (speculative) {
            line.append("? ");
        }
        Columns.hex16(line, ip);
        out.append(line).append('\n');
    }

    @Override
    public void insn(long ip, int size, int cls, int mode, boolean speculative) {
        printIp(ip, speculative);
    }

    @Override
    public void block(long ip, int count, CodeCache code, int off, int mode, boolean speculative) {
        long a = ip;
        int o = off;
        for (int i = 0; i < count; i++) {
            printIp(a, speculative);
            if (code != null && i + 1 < count) {
                int len = code.length(o, dec);
                a += len;
                o += len;
            }
        }
    }

    @Override
    public void error(String kind, int code, long offset, long ip) {
        out.append('[').append(Long.toHexString(offset)).append(", ").append(Long.toHexString(ip)).append(": ")
                .append(kind).append(": ").append(PtError.message(code)).append("]\n");
    }

    @Override
    public void disabledAfterResync() {
        out.append("[disabled]\n");
    }

    @Override
    public void endOfTrace() {
        out.append("[end of trace]\n");
    }

    @Override
    public void event(Event ev) {
        time = ev.tsc;
        if (ev.statusUpdate) {
            return;
        }
        line.setLength(0);
        line.append('[');
        offset(line);
        if (eventTime && ev.hasTsc) {
            Columns.hex16(line, ev.tsc);
            line.append("  ");
        }
        boolean ipPart = eventIp && !ev.ipSuppressed;
        switch (ev.type) {
            case Event.ENABLED -> {
                line.append(ev.resumed ? "resumed" : "enabled");
                if (eventIp) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.DISABLED -> {
                line.append("disabled");
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.ASYNC_DISABLED -> {
                line.append("disabled");
                if (eventIp) {
                    line.append(", at: ");
                    Columns.hex16(line, ev.from);
                    if (!ev.ipSuppressed) {
                        ipSuffix(ev.ip);
                    }
                }
            }
            case Event.ASYNC_BRANCH -> {
                line.append("interrupt");
                if (eventIp) {
                    line.append(", from: ");
                    Columns.hex16(line, ev.from);
                    if (!ev.ipSuppressed) {
                        line.append(", to: ");
                        Columns.hex16(line, ev.ip);
                    }
                }
            }
            case Event.PAGING, Event.ASYNC_PAGING -> {
                line.append("paging, cr3: ");
                Columns.hex16(line, ev.cr3);
                if (ev.nonRoot) {
                    line.append(", nr");
                }
                if (ev.type == Event.ASYNC_PAGING && eventIp) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.OVERFLOW -> {
                line.append("overflow");
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.EXEC_MODE -> {
                line.append("exec mode: ").append(ExecMode.name(ev.mode));
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.TSX -> {
                line.append(ev.aborted ? "aborted" : ev.speculative ? "begin transaction" : "committed");
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.STOP -> line.append("stopped");
            case Event.VMCS, Event.ASYNC_VMCS -> {
                line.append("vmcs, base: ");
                Columns.hex16(line, ev.base);
                if (ev.type == Event.ASYNC_VMCS && eventIp) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.EXSTOP -> {
                line.append("exstop");
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.MWAIT -> {
                line.append("mwait ").append(Integer.toHexString(ev.hints)).append(' ').append(Integer.toHexString(ev.ext));
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.PWRE -> {
                line.append("pwre c").append((ev.state + 1) & 0xf).append('.').append((ev.subState + 1) & 0xf);
                if (ev.hw) {
                    line.append(" hw");
                }
            }
            case Event.PWRX -> {
                line.append("pwrx ");
                if (ev.interrupt) {
                    line.append("int: ");
                }
                if (ev.store) {
                    line.append("st: ");
                }
                if (ev.autonomous) {
                    line.append("hw: ");
                }
                line.append('c').append((ev.last + 1) & 0xf).append(" (c").append((ev.deepest + 1) & 0xf).append(')');
            }
            case Event.PTWRITE -> {
                line.append("ptwrite: ").append(Long.toHexString(ev.payload));
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.TICK -> {
                line.append("tick");
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.CBR -> line.append("cbr: ").append(Integer.toHexString(ev.ratio));
            case Event.IFLAGS -> {
                line.append("interrupts ").append(ev.iflag ? "enabled" : "disabled");
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.INTERRUPT -> {
                line.append("interrupt ").append(ev.vector);
                if (ev.hasCr2) {
                    line.append(", cr2: ");
                    Columns.hex16(line, ev.cr2);
                }
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.IRET, Event.SMI, Event.RSM, Event.INIT, Event.VMENTRY, Event.SHUTDOWN, Event.UIRET, Event.SYSCALL -> {
                line.append(switch (ev.type) {
                    case Event.IRET -> "iret";
                    case Event.SMI -> "smi";
                    case Event.RSM -> "rsm";
                    case Event.INIT -> "init";
                    case Event.VMENTRY -> "vmentry";
                    case Event.SHUTDOWN -> "shutdown";
                    case Event.UIRET -> "uiret";
                    default -> "syscall";
                });
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.SIPI -> line.append("sipi: ").append(Integer.toHexString(ev.vector));
            case Event.TRIG -> {
                line.append("trig ");
                String h = Integer.toHexString(ev.trbv);
                if (h.length() < 2) {
                    line.append('0');
                }
                line.append(h);
                if (ev.mult) {
                    line.append(", mult");
                }
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
                if (ev.icnt != 0) {
                    line.append(", icnt: ").append(ev.icnt);
                }
            }
            case Event.VMEXIT -> {
                line.append("vmexit");
                if (ev.hasVector) {
                    line.append(", intr: ").append(ev.vector);
                }
                if (ev.hasVmxr) {
                    line.append(", vmxr: ");
                    Columns.hex16(line, ev.vmxr);
                }
                if (ev.hasVmxq) {
                    line.append(", vmxq: ");
                    Columns.hex16(line, ev.vmxq);
                }
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.UINTR, Event.SWINTR -> {
                line.append(ev.type == Event.UINTR ? "uintr " : "swintr ").append(ev.vector);
                if (ipPart) {
                    ipSuffix(ev.ip);
                }
            }
            case Event.MNT -> line.append("mnt: ").append(Long.toHexString(ev.payload));
            default -> {
                return;
            }
        }
        line.append("]\n");
        out.append(line);
    }

    private void ipSuffix(long ip) {
        line.append(", ip: ");
        Columns.hex16(line, ip);
    }
}

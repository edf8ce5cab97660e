package ptfence.calls;

import java.io.IOException;
import ptfence.flow.PtError;
import ptfence.symbol.Symbol;
import ptfence.symbol.Symbolizer;

/**
 * perf script's text lines for what the call views show, field by field as perf 6.1 writes them: a branch sample
 * (perf_sample__fprintf_start, the flags, callindent, ip and addr with symbol and dso), a synthesized event (psb,
 * cbr, ptwrite, mwait, pwre, exstop, pwrx) and an instruction trace error. Which fields appear is
 * {@link SampleFields}. One per view: it keeps perf's callindent column width, which perf keeps across lines.
 */
public final class PerfLines {
    /** A thread's name at a time (its comm), or null when the recording never named it. */
    public interface Comms {
        String comm(int tid, long time);

        /** When the thread is next renamed after {@code time} (its name holds until then), Long.MAX_VALUE if never. */
        long nextChange(int tid, long time);
    }

    /**
     * What perf knows of the recording beyond the samples: the synthesized branches event's name and the width perf
     * gives event names (the longest of the recording's), and for cbr the TSC frequency and the maximum non-turbo
     * ratio (0: unknown).
     */
    public record Recording(String branchEvent, int eventWidth, long tscHz, int maxNonTurboRatio) {
    }

    /** The code of a recording, for -F insn and insnlen (asked only with them). */
    public interface Code {
        /**
         * The instruction at {@code ip} as thread {@code pid} on {@code cpu} ran it at perf time {@code time}: its
         * bytes into {@code into}, returning its length (0 when no code is there or it does not decode).
         */
        int instruction(long ip, long time, int cpu, int pid, byte[] into);

        Code NONE = (ip, time, cpu, pid, into) -> 0;
    }

    /** Where -F insn and insnlen read instructions ({@link Code#NONE}: none). */
    private Code code = Code.NONE;
    private final byte[] insn = new byte[16];

    /** The recording's code, for -F insn and insnlen. */
    void code(Code c) {
        code = c;
    }

    /** perf's --reltime or --deltatime. */
    void clock(ptfence.script.PerfTime c) {
        clock = c;
    }

    private final LineBuffer buf;
    /** How times are shown: as they are, or perf's --reltime or --deltatime (over every line printed). */
    private ptfence.script.PerfTime clock = new ptfence.script.PerfTime(true, false, false);
    /** The fields of the line being written: {@link #branchFields} or {@link #eventFields}. */
    private SampleFields f;
    private final SampleFields branchFields;
    private final SampleFields eventFields;
    private final Symbolizer names;
    private final Comms comms;
    private final Recording rec;
    /** The misc column of the recorded sample being written (null: a synthesized line's). */
    private String recordedMisc;
    /** perf's callindent width: it grows to fit and shrinks when lines get much shorter. */
    private int spacing;

    PerfLines(LineBuffer buf, SampleFields branchFields, SampleFields eventFields, Symbolizer names, Comms comms,
            Recording rec) {
        this.buf = buf;
        this.f = branchFields;
        this.branchFields = branchFields;
        this.eventFields = eventFields;
        this.names = names;
        this.comms = comms;
        this.rec = rec;
    }

    /**
     * perf_sample__fprintf_start: comm, pid/tid, [cpu], time. All but the time stay the same over a thread's lines on
     * one CPU: they are kept as bytes in the thread and copied while its comm, CPU and the fields are unchanged.
     */
    private void start(ThreadStack t, int cpu, long time) {
        String comm = f.has(SampleFields.COMM) ? comm(t, time) : null;
        if (t.head != null && t.headComm == comm && t.headCpu == cpu && t.headFields == f) {
            buf.bytes(t.head);
        } else {
            int at = buf.column();
            who(t, cpu, comm);
            t.head = buf.lineFrom(at);
            t.headComm = comm;
            t.headCpu = cpu;
            t.headFields = f;
        }
        if (f.has(SampleFields.TIME)) {
            time(time);
        }
    }

    /** perf's time field, {@code --reltime} and {@code --deltatime} counted over every line printed. */
    private void time(long time) {
        long t0 = clock.shown(Math.max(0, time));
        long secs = t0 / 1_000_000_000L;
        long ns = t0 % 1_000_000_000L;
        if (f.nanosecs()) {
            buf.dec(secs, 5).ch('.').decZero(ns, 9).str(": ");
        } else {
            // "%lu.%06lu" right-aligned in 12
            buf.spaces(12 - LineBuffer.decLength(secs) - 7).dec(secs, 0).ch('.').decZero(ns / 1000, 6).str(": ");
        }
    }

    /**
     * A line of the recording's own records ({@code --show-*-events}, made by the sample views' printer): its bytes
     * [from, to), ending in a newline, with the time field written at {@code split} (-1: none) as this view's are.
     */
    void recordLine(byte[] text, int from, int split, int to, long time) throws IOException {
        if (split < 0) {
            buf.bytes(text, from, to - 1 - from);
        } else {
            buf.bytes(text, from, split - from);
            time(time);
            buf.bytes(text, split, to - 1 - split);
        }
        buf.endLine();
    }

    /** comm, pid/tid and [cpu] as perf prints them. */
    private void who(ThreadStack t, int cpu, String comm) {
        if (comm != null) {
            buf.right(comm, 16).ch(' ');
        }
        boolean pid = f.has(SampleFields.PID);
        boolean tid = f.has(SampleFields.TID);
        if (pid && tid) {
            buf.dec(t.pid(), 5).ch('/').decLeft(t.tid(), 5).ch(' ');
        } else if (pid) {
            buf.dec(t.pid(), 5).ch(' ');
        } else if (tid) {
            buf.dec(t.tid(), 5).ch(' ');
        }
        if (f.has(SampleFields.CPU)) {
            buf.ch('[').decZero(cpu, 3).str("] ");
        }
        if (f.has(SampleFields.MISC)) {
            if (recordedMisc != null) {
                buf.str(recordedMisc);
            } else {
                buf.spaces(6); // perf's misc letters: a synthesized sample's header has none
            }
        }
    }

    /** perf's comm: the thread's name, "swapper" for the idle task, ":tid" for a thread never named. */
    String comm(ThreadStack t, long time) {
        if (t.comm != null && time >= t.commFrom && time < t.commUntil) {
            return t.comm;
        }
        String c = t.tid() >= 0 ? comms.comm(t.tid(), time) : null;
        if (c == null) {
            c = t.tid() == 0 ? "swapper" : ":" + t.tid();
        }
        t.comm = c;
        t.commFrom = time < 0 ? Long.MIN_VALUE : time;
        t.commUntil = time < 0 || t.tid() < 0 ? 0 : comms.nextChange(t.tid(), time);
        return c;
    }

    /**
     * A branch sample of thread {@code t}; {@code depth} its call depth for callindent (perf's: after a call, before
     * a return); {@code insns}/{@code cycles} perf's insn_cnt/cyc_cnt of the sample (for ipc; 0: none);
     * {@code insnIp} where the instruction its sample carries is (-F insn: the branch's own, a trace begin's the one
     * that ended the trace; 0: none), as the code was at perf time {@code insnTime}.
     */
    void branch(ThreadStack t, FlowItem.Branch b, int depth, long insns, long cycles, long insnIp, long insnTime)
            throws IOException {
        int pid = t.pid();
        long time = b.time();
        f = branchFields;
        start(t, b.cpu(), time);
        if (f.has(SampleFields.PERIOD)) {
            buf.dec(1, 10).ch(' ');
        }
        if (f.has(SampleFields.EVENT)) {
            buf.right(rec.branchEvent(), rec.eventWidth()).str(": ");
        }
        if (f.has(SampleFields.FLAGS)) {
            buf.str("  ").left(BranchFlags.perfName(b.flags()), 21).ch(' ');
        }
        if (f.has(SampleFields.CALLINDENT)) {
            callindent(b, depth, pid);
        }
        if (f.has(SampleFields.IP)) {
            buf.ch(' ');
            location(b.from(), time, pid, true);
        }
        if (f.has(SampleFields.ADDR) || !f.userSet()) {
            buf.str(" => ");
            location(b.to(), time, pid, true);
        }
        if (f.has(SampleFields.IPC) && cycles > 0 && insns > 0) {
            long ipc = insns * 100 / cycles;
            buf.str(" \t IPC: ").dec(ipc / 100, 0).ch('.').decZero(ipc % 100, 2).str(" (").dec(insns, 0).ch('/')
                    .dec(cycles, 0).str(") ");
        }
        if (f.has(SampleFields.IP) && f.has(SampleFields.SRCLINE)) {
            srcline(b.from(), time, pid); // perf_sample__fprintf_bts: the source line after the target and IPC
        }
        insn(insnIp, insnTime, b.cpu(), pid);
        buf.endLine();
    }

    /** map__fprintf_srcline: a new line, two blanks and the source line of {@code a}, where one is known. */
    private void srcline(long a, long time, int pid) {
        String src = a == 0 ? null : names.srcline(a, time, pid);
        if (src == null && a != 0) {
            src = names.srclineFallback(a, time, pid);
        }
        if (src != null) {
            buf.str("\n  ").str(src);
        }
    }

    /**
     * perf_sample__fprintf_insn: the instruction at {@code ip} (perf script reads it from the file where the sample
     * carries none: a branch's own, an asynchronous one's at its source), its length with insnlen and bytes with insn.
     */
    private void insn(long ip, long time, int cpu, int pid) {
        if (!f.has(SampleFields.INSN | SampleFields.INSNLEN)) {
            return;
        }
        int n = ip == 0 ? 0 : code.instruction(ip, time, cpu, pid, insn);
        if (f.has(SampleFields.INSNLEN)) {
            buf.str(" ilen: ").dec(n, 0);
        }
        if (f.has(SampleFields.INSN) && n > 0) {
            buf.str(" insn:");
            for (int i = 0; i < n; i++) {
                int x = insn[i] & 0xff;
                buf.ch(' ').str(x < 16 ? "0" : "").hex(x, 0);
            }
        }
    }

    /**
     * A recorded sample of another event (the quipper recording's {@code cycles}) in a call view: perf prints it with
     * the view's fields (a hardware event's), by process_event: its period and {@code event} name, its flags blank, its
     * address (none: 0, no symbol), its {@code ip}; by default none but who and when.
     */
    void recorded(ThreadStack t, int cpu, long time, long ip, long period, String event, String misc)
            throws IOException {
        f = branchFields;
        recordedMisc = misc;
        t.head = null; // the misc column is the sample's own
        start(t, cpu, time);
        recordedMisc = null;
        t.head = null;
        if (f.has(SampleFields.PERIOD)) {
            buf.dec(period, 10).ch(' ');
        }
        if (f.has(SampleFields.EVENT)) {
            buf.right(event, rec.eventWidth()).str(": ");
        }
        if (f.has(SampleFields.FLAGS)) {
            buf.str("  ").left("", 21).ch(' ');
        }
        if (f.has(SampleFields.ADDR)) {
            buf.hex(0, 16);
        }
        if (f.has(SampleFields.IP)) {
            buf.ch(' ');
            location(ip, time, t.pid(), true);
            if (f.has(SampleFields.SRCLINE)) {
                srcline(ip, time, t.pid());
            }
        }
        insn(ip, time, cpu, t.pid());
        buf.endLine();
    }

    /** perf_sample__fprintf_callindent. */
    private void callindent(FlowItem.Branch b, int depth, int pid) {
        int fl = b.flags();
        long time = b.time();
        String name = null;
        long ip = 0;
        if ((fl & (BranchFlags.CALL | BranchFlags.TRACE_BEGIN)) != 0) {
            Symbol s = b.to() == 0 ? null : names.symbol(b.to(), time, pid);
            if (s != null) {
                name = s.name();
            } else {
                ip = b.to();
            }
        } else if ((fl & (BranchFlags.RETURN | BranchFlags.TRACE_END)) != 0) {
            Symbol s = b.from() == 0 ? null : names.symbol(b.from(), time, pid);
            if (s != null) {
                name = s.name();
            } else {
                ip = b.from();
            }
        }
        if (f.has(SampleFields.DSO) && !f.has(SampleFields.IP) && !f.has(SampleFields.ADDR)) {
            buf.ch('(');
            dso(b.from(), time, pid);
            buf.str(")\t");
        }
        int at = buf.column();
        if (name != null) {
            buf.spaces(depth * 4).str(name);
        } else if (ip != 0) {
            buf.spaces(depth * 4).hex(ip, 16);
        }
        int len = buf.column() - at;
        if (len > spacing || len != 0 && len < spacing - 52) {
            spacing = (len + 4 + 31) / 32 * 32;
        }
        buf.spaces(spacing - len);
    }

    /** "%16lx", then " sym[+0xoff]" and " (dso)" as the fields say (sample__fprintf_sym, perf_sample__fprintf_addr). */
    private void location(long a, long time, int pid, boolean hex) {
        if (hex) {
            buf.hex(a, 16);
        }
        Symbol s = a == 0 ? null : names.symbol(a, time, pid);
        if (f.has(SampleFields.SYM)) {
            buf.ch(' ');
            if (s == null) {
                buf.str("[unknown]");
            } else {
                buf.str(s.name());
                if (f.has(SampleFields.SYMOFF)) {
                    buf.str("+0x").hex(a - s.start(), 0);
                }
            }
        }
        if (f.has(SampleFields.DSO)) {
            buf.str(" (");
            dso(a, time, pid);
            buf.ch(')');
        }
    }

    /** map__fprintf_dsoname: the name, or [unknown]; with perf's padding, cut to one less than it and padded. */
    private void dso(long a, long time, int pid) {
        String d = a == 0 ? null : names.dso(a, time, pid);
        if (d == null) {
            d = "[unknown]";
        }
        int pad = f.dsoPad();
        if (pad == 0) {
            buf.str(d);
            return;
        }
        if (d != paddedDso) { // lines repeat a few files: the padded form of the last one is kept
            paddedDso = d;
            byte[] name = d.getBytes(java.nio.charset.StandardCharsets.UTF_8); // perf cuts and pads by bytes
            padded = new byte[pad];
            java.util.Arrays.fill(padded, (byte) ' ');
            System.arraycopy(name, 0, padded, 0, Math.min(name.length, pad - 1));
        }
        buf.bytes(padded);
    }

    private String paddedDso;
    private byte[] padded;

    /**
     * A synthesized event (psb, cbr, ptwrite, power events); false for one perf does not show (tsx). {@code flags}:
     * what perf's flags column shows for it (its CPU's last branch kind; 0 before any).
     */
    boolean mark(ThreadStack t, FlowItem.Mark m, int flags) throws IOException {
        String name = m.name();
        if (!PERF_EVENTS.contains(name)) {
            return false;
        }
        f = eventFields;
        start(t, m.cpu(), m.time());
        if (f.userSet() && f.has(SampleFields.PERIOD)) {
            buf.dec(1, 10).ch(' ');
        }
        if (f.has(SampleFields.EVENT)) {
            buf.right(name, rec.eventWidth()).str(": ");
        }
        if (f.has(SampleFields.FLAGS)) {
            buf.str("  ").left(flags == 0 ? "" : BranchFlags.perfName(flags), 21).ch(' ');
        }
        if (f.has(SampleFields.SYNTH)) {
            synth(m, name);
        }
        if (f.has(SampleFields.ADDR)) {
            buf.hex(m.sampleAddr(), 16); // perf_sample__fprintf_addr: no symbol for these events' addresses
        }
        if (f.has(SampleFields.IP)) {
            buf.ch(' ');
            location(m.sampleIp(), m.time(), t.pid(), true); // its sample's IP: its decoder state's
            if (f.has(SampleFields.SRCLINE)) {
                srcline(m.sampleIp(), m.time(), t.pid());
            }
        }
        insn(m.insnLen() > 0 ? m.insnIp() : m.sampleIp(), m.insnTime(), m.cpu(), t.pid());
        buf.endLine();
        return true;
    }

    /** perf_sample__fprintf_synth: the event's own text, padded to 34 columns. */
    private void synth(FlowItem.Mark m, String name) {
        int at = buf.column();
        long[] v = m.values();
        switch (name) {
            case "psb" -> buf.str(" psb offs: ").str(hash(v[0]));
            case "cbr" -> {
                long ratio = v[0];
                int max = rec.maxNonTurboRatio();
                long khz = max > 0 && rec.tscHz() > 0 ? rec.tscHz() / max / 1000 : 0;
                buf.str(" cbr: ").dec(ratio, 2).str(" freq: ").dec((ratio * khz + 500) / 1000, 4).str(" MHz ");
                if (max > 0) {
                    buf.ch('(').dec((5 + 1000 * ratio / max) / 10, 3).str("%) ");
                }
            }
            case "ptwrite" -> buf.str(" IP: ").dec(m.ip() != 0 ? 1 : 0, 0).str(" payload: ").str(hash(v[0]))
                    .ch(' ').str(printable(v[0])).ch(' ');
            case "mwait" -> buf.str(" hints: ").str(hash(v[0])).str(" extensions: ").str(hash(v[1])).ch(' ');
            case "pwre" -> buf.str(" hw: ").dec(v[0], 0).str(" cstate: ").dec(v[1], 0).str(" sub-cstate: ")
                    .dec(v[2], 0).ch(' ');
            case "exstop" -> buf.str(" IP: ").dec(m.ip() != 0 ? 1 : 0, 0).ch(' ');
            case "pwrx" -> buf.str(" deepest cstate: ").dec(v[0], 0).str(" last cstate: ").dec(v[1], 0)
                    .str(" wake reason: ").str(hash(v[2])).ch(' ');
            default -> throw new IllegalStateException(name);
        }
        int len = buf.column() - at;
        if (len < 34) {
            buf.spaces(34 - len);
        }
    }

    /** The events perf synthesizes for --itrace=p and w (power events, ptwrite, psb). */
    private static final java.util.Set<String> PERF_EVENTS = java.util.Set.of("psb", "cbr", "ptwrite", "mwait",
            "pwre", "exstop", "pwrx");

    /** C's {@code %#x}: "0" for zero, else "0x" and hex digits. */
    private static String hash(long v) {
        return v == 0 ? "0" : "0x" + Long.toHexString(v);
    }

    /**
     * A ptwrite payload as text when it is printable ASCII padded with NULs (perf's ptw_is_prt), else "" (the call
     * views and perf script's ptwrite lines).
     */
    public static String printable(long v) {
        StringBuilder sb = new StringBuilder();
        int i = 0;
        for (; i < 8; i++) {
            int c = (int) (v >>> (8 * i) & 0xff);
            if (c == 0) {
                break;
            }
            if (c < 0x20 || c > 0x7e) {
                return "";
            }
            sb.append((char) c);
        }
        for (; i < 8; i++) {
            if ((v >>> (8 * i) & 0xff) != 0) {
                return "";
            }
        }
        return sb.toString();
    }

    /**
     * An instruction trace error as perf_event__fprintf_auxtrace_error prints it, with perf's code and message for
     * the decoder's error.
     */
    void error(ThreadStack t, FlowItem.Loss l) throws IOException {
        int code = perfCode(l.code());
        buf.str(" instruction trace error type 1 time ");
        if (l.time() > 0) {
            buf.dec(l.time() / 1_000_000_000L, 0).ch('.').decZero(l.time() % 1_000_000_000L, 9);
        } else {
            buf.ch('0');
        }
        buf.str(" cpu ").dec(l.cpu(), 0).str(" pid ").dec(t.pid(), 0).str(" tid ").dec(t.tid(), 0).str(" ip ")
                .str(hash(l.ip())).str(" code ").dec(code, 0).str(": ").str(PERF_MESSAGES[code]);
        buf.endLine();
    }

    /** perf's intel_pt error messages, by its code (INTEL_PT_ERR_*). */
    private static final String[] PERF_MESSAGES = {"", "Memory allocation failed", "Internal error", "Bad packet",
        "No more data", "Failed to get instruction", "Trace doesn't match instruction", "Overflow packet",
        "Lost trace data", "Unknown error!", "Never-ending loop"};

    /** perf's code (INTEL_PT_ERR_*) for what the decoder reported ({@link PtError}). */
    static int perfCode(int code) {
        return switch (code) {
            case PtError.INTERNAL -> 2;
            case PtError.BAD_OPC, PtError.BAD_PACKET -> 3;
            case PtError.EOS -> 4;
            case PtError.NOMAP, PtError.BAD_INSN -> 5;
            case PtError.BAD_QUERY, PtError.BAD_CONTEXT, PtError.NOIP, PtError.IP_SUPPRESSED,
                    PtError.RETSTACK_EMPTY, PtError.BAD_RETCOMP, PtError.BAD_STATUS_UPDATE, PtError.NO_ENABLE -> 6;
            case PtError.OVERFLOW -> 7;
            case PtError.NOSYNC -> 8;
            default -> 9;
        };
    }
}

package ptfence.calls;

import ptfence.cli.Json;
import ptfence.flow.Event;

/**
 * The events a recording's views show besides control flow, with their numbers: cbr (core:bus ratio and the
 * frequency it means), psb (once per PSB+, with its offset in the CPU's trace), ptwrite (payload), mwait
 * (hints, ext), pwre (hw, cstate, substate), pwrx (deepest, last, wake), exstop, tsx (speculative, aborted). One
 * per CPU: it remembers whether the flow is inside a PSB+.
 */
public final class EventMarks {
    /** The bus clock a core:bus ratio multiplies (perf's assumption too). */
    private static final long BUS_MHZ = 100;

    private boolean inPsb;
    /** The core:bus ratio last shown (-1: none yet): perf shows cbr when it changes, also inside a PSB+. */
    private long lastCbr = -1;
    private FlowItem.Mark cbrInPsb;
    /** The ratio the trace last gave (-1: none yet), shown or not. */
    private long ratio = -1;
    /** Where the last PSB shown starts (-1: none). */
    private long lastPsb = -1;

    /** A new decoder starts on another stretch of the CPU's trace: its offsets start again. */
    public void restart() {
        lastPsb = -1;
        inPsb = false;
    }

    /** An instruction ran: the PSB+ (if any) is over. */
    public void insn() {
        inPsb = false;
    }

    /**
     * The mark {@code ev} is shown as, or null when it is not one of these (or another status update of a PSB+);
     * {@code psbOffset} is where the PSB the flow last read starts in the CPU's trace.
     */
    public FlowItem.Mark of(Event ev, int cpu, long time, long insns, long psbOffset) {
        if (ev.type == Event.CBR) {
            ratio = ev.ratio;
        }
        if (ev.statusUpdate) {
            if (ev.type == Event.CBR && ev.ratio != lastCbr) {
                lastCbr = ev.ratio;
                cbrInPsb = mark(cpu, time, "cbr", 0, insns, "ratio", ev.ratio);
            }
            if (psbOffset >= 0 ? psbOffset == lastPsb : inPsb) {
                // a PSB+ the decoder reports again (its status updates once more) is one PSB; one at another offset
                // is another, even with no instruction between (a snapshot's PSB+ while tracing is off)
                return null;
            }
            inPsb = true;
            lastPsb = psbOffset;
            return mark(cpu, time, "psb", 0, insns, "offset", psbOffset);
        }
        if (ev.type == Event.CBR) {
            if (ev.ratio == lastCbr) {
                return null;
            }
            lastCbr = ev.ratio;
        }
        return switch (ev.type) {
            case Event.CBR -> mark(cpu, time, "cbr", 0, insns, "ratio", ev.ratio);
            case Event.PTWRITE -> mark(cpu, time, "ptwrite", ev.ipSuppressed ? 0 : ev.ip, insns, "payload",
                    ev.payload);
            case Event.MWAIT -> mark(cpu, time, "mwait", ev.ip, insns, "hints", ev.hints, "ext", ev.ext);
            case Event.PWRE -> mark(cpu, time, "pwre", 0, insns, "hw", ev.hw ? 1 : 0, "cstate", ev.state, "substate",
                    ev.subState);
            case Event.PWRX -> mark(cpu, time, "pwrx", 0, insns, "deepest", ev.deepest, "last", ev.last, "wake",
                    (ev.interrupt ? 1 : 0) | (ev.store ? 2 : 0) | (ev.autonomous ? 4 : 0));
            case Event.EXSTOP -> mark(cpu, time, "exstop", ev.ipSuppressed ? 0 : ev.ip, insns);
            case Event.TSX -> mark(cpu, time, "tsx", ev.ip, insns, "speculative", ev.speculative ? 1 : 0, "aborted",
                    ev.aborted ? 1 : 0);
            default -> null;
        };
    }

    /**
     * perf's cbr 0 when the flow runs before any CBR packet: perf compares the ratio with the one it last showed at
     * each state it returns and starts with none shown, so a trace without CBR shows ratio 0 once; else null.
     */
    public FlowItem.Mark noCbrYet(int cpu, long time, long insns) {
        if (lastCbr != -1) {
            return null;
        }
        lastCbr = 0;
        return mark(cpu, time, "cbr", 0, insns, "ratio", 0);
    }

    /** The trace gives ratio {@code r} now (a PSB+'s CBR, before its state is judged). */
    public void ratio(long r) {
        ratio = r;
    }

    /**
     * True if {@code ev} is a CBR packet outside a PSB+ that gives the ratio the trace gave last: perf's decoder
     * returns a state for a CBR only when the ratio changes, so its time filter does not run there.
     */
    public boolean noState(Event ev) {
        return ev.type == Event.CBR && !ev.statusUpdate && ev.ratio == ratio;
    }

    /** The ratio last shown (-1: none): what {@link #unseen} puts back. */
    public long shown() {
        return lastCbr;
    }

    /**
     * perf's time filter made no sample of the state that changed the ratio: perf's last shown ratio stays
     * {@code before}, and the first state inside a range shows the change ({@link #unseenCbr}).
     */
    public void unseen(long before) {
        lastCbr = before;
        cbrInPsb = null;
    }

    /** The cbr of a ratio the trace gave that perf has not shown yet (a state inside the ranges now); else null. */
    public FlowItem.Mark unseenCbr(int cpu, long time, long insns) {
        if (ratio < 0 || ratio == lastCbr) {
            return null;
        }
        lastCbr = ratio;
        return mark(cpu, time, "cbr", 0, insns, "ratio", ratio);
    }

    /** The ratio the trace last gave (-1: none), shown or not. */
    public long ratio() {
        return ratio;
    }

    /** Where the last PSB shown starts (-1: none). */
    public long lastPsb() {
        return lastPsb;
    }

    /** Whether the flow is inside a PSB+ (no instruction since its status updates). */
    public boolean inPsb() {
        return inPsb;
    }

    /** Whether a PSB+'s cbr waits to be shown after its psb. */
    public boolean cbrWaiting() {
        return cbrInPsb != null;
    }

    /**
     * A PSB segment's guess at its first seam of the ratio shown before its PSB: the last one the trace gave (a PSB+
     * restates it), or 0 (the cbr 0 perf shows at its first state) where none was given.
     */
    public void shownAtSeam() {
        if (lastCbr == -1) {
            lastCbr = ratio >= 0 ? ratio : 0;
        }
    }

    /** True while no cbr was shown: the next instruction shows {@link #noCbrYet}. */
    public boolean noCbrShown() {
        return lastCbr == -1;
    }

    /** The cbr a PSB+'s status update changed (shown after the psb, as perf does), once; else null. */
    public FlowItem.Mark cbrInPsb() {
        FlowItem.Mark m = cbrInPsb;
        cbrInPsb = null;
        return m;
    }

    private static FlowItem.Mark mark(int cpu, long time, String name, long ip, long insns, Object... kv) {
        String[] keys = new String[kv.length / 2];
        long[] values = new long[kv.length / 2];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = (String) kv[2 * i];
            values[i] = ((Number) kv[2 * i + 1]).longValue();
        }
        return new FlowItem.Mark(cpu, time, name, ip, keys, values, insns);
    }

    /** "[cbr ratio=33 freq=3300MHz]", "[ptwrite payload=0x2a ip=401000]". */
    public static StringBuilder text(StringBuilder sb, FlowItem.Mark m) {
        sb.append('[').append(m.name());
        for (int i = 0; i < m.keys().length; i++) {
            sb.append(' ').append(m.keys()[i]).append('=');
            if (m.name().equals("ptwrite") || m.name().equals("psb")) {
                sb.append("0x").append(Long.toHexString(m.values()[i]));
            } else {
                sb.append(m.values()[i]);
            }
        }
        if (m.name().equals("cbr")) {
            sb.append(" freq=").append(m.values()[0] * BUS_MHZ).append("MHz");
        }
        if (m.ip() != 0) {
            sb.append(" ip=").append(Long.toHexString(m.ip()));
        }
        return sb.append(']');
    }

    /** The mark's fields after an object's opening ones: {@code ,"event":"cbr","ratio":33,"mhz":3300}. */
    public static StringBuilder json(StringBuilder sb, FlowItem.Mark m) {
        sb.append(",\"event\":\"").append(m.name()).append('"');
        if (m.ip() != 0) {
            sb.append(",\"ip\":").append(Json.quote("0x" + Long.toHexString(m.ip())));
        }
        for (int i = 0; i < m.keys().length; i++) {
            sb.append(",\"").append(m.keys()[i]).append("\":");
            if (m.name().equals("ptwrite")) {
                sb.append(Json.quote("0x" + Long.toHexString(m.values()[i])));
            } else {
                sb.append(m.values()[i]);
            }
        }
        if (m.name().equals("cbr")) {
            sb.append(",\"mhz\":").append(m.values()[0] * BUS_MHZ);
        }
        return sb;
    }
}

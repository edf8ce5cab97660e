package ptfence.script;

import java.util.ArrayList;
import java.util.List;
import ptfence.perfdata.EventAttr;
import ptfence.perfdata.IntelPtInfo;
import ptfence.perfdata.SampleType;

/**
 * The events perf script knows for an Intel PT recording: the recorded ones (intel_pt, dummy, any other sampled
 * event), then those perf synthesizes from the trace for the --itrace letters, in perf's order (branches,
 * instructions, transactions, ptwrite, cbr, psb, then mwait, pwre, exstop, pwrx when power events were recorded),
 * each with the name perf gives it and the sample fields its samples carry. The name column is as wide as the
 * longest name of them all, and each field of {@link FieldSet} is checked against the first event of each type.
 */
public final class PerfEvents {
    /** perf's PERF_TYPE_SYNTH. */
    public static final int TYPE_SYNTH = 0x80000000;

    /** One event: its attr type, name, the fields its samples carry, and the kind perf synthesizes (or RECORDED). */
    public record Event(int type, String name, long sampleType, Kind kind, long config, boolean dummy) {
        public FieldSet.Type outputType() {
            return outputType(type);
        }

        static FieldSet.Type outputType(int type) {
            return switch (type) {
                case 0 -> FieldSet.Type.HW;
                case 1 -> FieldSet.Type.SW;
                case 2 -> FieldSet.Type.TRACEPOINT;
                case 3 -> FieldSet.Type.HW_CACHE;
                case 4 -> FieldSet.Type.RAW;
                case 5 -> FieldSet.Type.BREAKPOINT;
                case TYPE_SYNTH -> FieldSet.Type.SYNTH;
                default -> FieldSet.Type.OTHER;
            };
        }
    }

    public enum Kind { RECORDED, BRANCHES, INSTRUCTIONS, TRANSACTIONS, PTWRITE, CBR, PSB, MWAIT, PWRE, EXSTOP, PWRX }

    private final List<Event> events = new ArrayList<>();
    /** Each recorded event's attr, by its place in {@link #events}. */
    private final List<EventAttr> recordedAttrs = new ArrayList<>();
    private final int nameWidth;
    /** The intel_pt event's modifiers (":u", ":ku"...), which perf's names of the hardware events made carry. */
    private String modifiers = "";
    /** perf's symbol_conf.use_callchain: --itrace=g turns it on (intel_pt_process_auxtrace_info). */
    private final boolean useCallchain;
    private final boolean lastBranch;
    private final long ptFlags;
    private final long ptReadFormat;
    /** Samples without time: no TSC in the trace, or an event without the TIME sample field (perf's rule). */
    public final boolean timeless;

    /**
     * @param recorded every recorded event's attr and name (EVENT_DESC's name, or null to make perf's)
     * @param pt the intel_pt AUXTRACE_INFO
     */
    /**
     * perf's timeless decoding (intel_pt_timeless_decoding): no TSC in the trace's config, no usable conversion, or
     * an event without time; perf then decodes each queue after the sideband, as of its last state.
     */
    public static boolean timeless(List<EventAttr> attrs, IntelPtInfo pt) {
        if (pt.tscBit() == 0 || !pt.capUserTimeZero()) {
            return true;
        }
        for (EventAttr a : attrs) {
            if ((a.sampleType() & SampleType.TIME) == 0 || a.type() == pt.pmuType() && (a.config() & pt.tscBit()) == 0) {
                return true;
            }
        }
        return false;
    }

    public PerfEvents(List<EventAttr> attrs, List<String> names, IntelPtInfo pt, ItraceOptions itrace) {
        EventAttr ptAttr = null;
        for (int i = 0; i < attrs.size(); i++) {
            EventAttr a = attrs.get(i);
            String name = names.get(i) != null ? names.get(i) : ptfence.perfdata.EventNames.perfName(a);
            boolean dummy = a.type() == 1 && a.config() == 9;
            events.add(new Event(a.type(), name, a.sampleType(), Kind.RECORDED, a.config(), dummy));
            recordedAttrs.add(a);
            if (a.type() == pt.pmuType() && ptAttr == null) {
                ptAttr = a;
            }
        }
        timeless = timeless(attrs, pt) || itrace.timeless;
        useCallchain = itrace.callchain;
        lastBranch = itrace.lastBranch;
        // intel_pt_synth_events copies these of the intel_pt event's attr into the events it makes
        ptFlags = ptAttr == null ? 0 : ptAttr.flags() & 0x1C0070L; // exclude_user/kernel/hv/host/guest, sample_id_all
        ptReadFormat = ptAttr == null ? 0 : ptAttr.readFormat();
        if (ptAttr != null) {
            long mask = SampleType.IP | SampleType.TID | SampleType.TIME | SampleType.ADDR | SampleType.CPU
                    | SampleType.PERIOD | SampleType.ID | SampleType.STREAM_ID | SampleType.IDENTIFIER;
            long st = (ptAttr.sampleType() & mask) | SampleType.IP | SampleType.TID | SampleType.PERIOD;
            st = timeless ? st & ~SampleType.TIME : st | SampleType.TIME;
            if (!pt.perCpuMmaps()) {
                st &= ~SampleType.CPU;
            }
            String mod = ptfence.perfdata.EventNames.modifiers(ptAttr);
            modifiers = mod;
            if (itrace.branches) {
                events.add(new Event(0, "branches" + mod, st | SampleType.ADDR, Kind.BRANCHES, 5, false));
            }
            // the events after branches carry perf's call chain (g) and last branches (l); perf keeps the bits on
            st |= (itrace.callchain ? SampleType.CALLCHAIN : 0) | (itrace.lastBranch ? SampleType.BRANCH_STACK : 0);
            if (itrace.instructions) {
                events.add(new Event(0, "instructions" + mod, st, Kind.INSTRUCTIONS, 1, false));
            }
            st &= ~SampleType.PERIOD;
            if (itrace.transactions) {
                events.add(new Event(0, "transactions", st, Kind.TRANSACTIONS, 1, false));
            }
            st |= SampleType.RAW;
            if (itrace.ptwrites) {
                events.add(new Event(TYPE_SYNTH, "ptwrite", st, Kind.PTWRITE, 0, false));
            }
            if (itrace.power) {
                events.add(new Event(TYPE_SYNTH, "cbr", st, Kind.CBR, 0, false));
                events.add(new Event(TYPE_SYNTH, "psb", st, Kind.PSB, 0, false));
                if ((ptAttr.config() & 0x10) != 0) { // pwr_evt
                    events.add(new Event(TYPE_SYNTH, "mwait", st, Kind.MWAIT, 0, false));
                    events.add(new Event(TYPE_SYNTH, "pwre", st, Kind.PWRE, 0, false));
                    events.add(new Event(TYPE_SYNTH, "exstop", st, Kind.EXSTOP, 0, false));
                    events.add(new Event(TYPE_SYNTH, "pwrx", st, Kind.PWRX, 0, false));
                }
            }
        }
        int w = 0;
        for (Event e : events) {
            w = Math.max(w, e.name().length());
        }
        nameWidth = w;
    }

    public List<Event> events() {
        return events;
    }

    /**
     * The name perf gives event {@code e} as it opens its --per-event-dump file: a synthesized event's attr is read
     * before perf names it, so it is named as its attr says (PERF_TYPE_SYNTH: perf's "unknown attr type"; the hardware
     * ones by their config, transactions as instructions).
     */
    public String openName(Event e) {
        return switch (e.kind()) {
            case RECORDED -> e.name();
            case BRANCHES -> "branches" + modifiers;
            case INSTRUCTIONS, TRANSACTIONS -> "instructions" + modifiers;
            default -> "unknown attr type: " + e.type();
        };
    }

    /** The width of perf script's event-name column: the longest event name. */
    public int nameWidth() {
        return nameWidth;
    }

    /**
     * The perf_event_attr perf 6.1 hands a script as "attr" for a recorded event: the file's attr as perf read it
     * into its struct (128 bytes; its size field as recorded, the rest zero).
     */
    public byte[] recordedAttrBytes(Event e) {
        int i = events.indexOf(e);
        byte[] out = new byte[128];
        if (i >= 0 && i < recordedAttrs.size()) {
            java.nio.ByteBuffer raw = recordedAttrs.get(i).raw();
            raw.get(out, 0, Math.min(out.length, raw.remaining()));
        }
        return out;
    }

    /**
     * The perf_event_attr perf 6.1 hands a script as "attr" for a synthesized event (intel_pt_synth_events; the
     * struct's 128 bytes): its type, config, period, sample type, and what it copies of the intel_pt event's attr;
     * with --itrace=l the events after branches carry PERF_SAMPLE_BRANCH_HW_INDEX.
     */
    public byte[] attrBytes(Event e, long samplePeriod) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(128).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        long config = switch (e.kind()) {
            case BRANCHES -> 4; // PERF_COUNT_HW_BRANCH_INSTRUCTIONS
            case INSTRUCTIONS, TRANSACTIONS -> 1; // PERF_COUNT_HW_INSTRUCTIONS
            case PTWRITE -> 0; // PERF_SYNTH_INTEL_PTWRITE, then MWAIT, PWRE, EXSTOP, PWRX, CBR, PSB
            case MWAIT -> 1;
            case PWRE -> 2;
            case EXSTOP -> 3;
            case PWRX -> 4;
            case CBR -> 5;
            case PSB -> 6;
            default -> e.config();
        };
        b.putInt(0, e.type()).putInt(4, 128).putLong(8, config).putLong(16, samplePeriod)
                .putLong(24, e.sampleType()).putLong(32, ptReadFormat).putLong(40, ptFlags);
        if (lastBranch && e.kind() != Kind.BRANCHES) {
            b.putLong(72, 1L << 17); // PERF_SAMPLE_BRANCH_HW_INDEX
        }
        return b.array();
    }

    /** The synthesized event of {@code kind}, or null when the --itrace letters did not ask for it. */
    public Event of(Kind kind) {
        for (Event e : events) {
            if (e.kind() == kind) {
                return e;
            }
        }
        return null;
    }

    /** Runs perf's field checks against the first (non-dummy) event of each type; a type without events is left. */
    public void check(FieldSet fields, boolean auxtrace) {
        for (FieldSet.Type t : FieldSet.Type.values()) {
            for (Event e : events) {
                if (!e.dummy() && e.outputType() == t) {
                    fields.check(t, e.sampleType(), e.name(), auxtrace);
                    break;
                }
            }
        }
        if (!useCallchain) {
            return;
        }
        // perf script's process_attr, for each synthesized event the first of its attr type: where the events so far
        // carry call chains or branch stacks, that type's lines get IP and SYM (unless -F took them away), so with
        // --itrace=g even -F ip prints symbols on the call-chain lines
        long combined = 0;
        java.util.Set<Integer> types = new java.util.HashSet<>();
        for (Event e : events) {
            combined |= e.sampleType();
            if (types.add(e.type()) && e.kind() != Kind.RECORDED
                    && (combined & (SampleType.CALLCHAIN | SampleType.BRANCH_STACK)) != 0) {
                fields.callchainFields(e.outputType());
            }
        }
    }
}

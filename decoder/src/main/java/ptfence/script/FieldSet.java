package ptfence.script;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import ptfence.cli.BadInputException;

/**
 * perf script's {@code -F}: which fields each kind of event prints. The fields, their defaults per event type, the
 * {@code type:} prefix, the {@code +field}/{@code -field} forms and the order in which several {@code -F} apply are
 * perf's (builtin-script.c, parse_output_fields); so are the checks against what the samples carry
 * ({@link #check}).
 */
public final class FieldSet {
    // Field bits, in perf's order (enum perf_output_field).
    public static final long COMM = 1L;
    public static final long TID = 1L << 1;
    public static final long PID = 1L << 2;
    public static final long TIME = 1L << 3;
    public static final long CPU = 1L << 4;
    public static final long EVNAME = 1L << 5;
    public static final long TRACE = 1L << 6;
    public static final long IP = 1L << 7;
    public static final long SYM = 1L << 8;
    public static final long DSO = 1L << 9;
    public static final long ADDR = 1L << 10;
    public static final long SYMOFFSET = 1L << 11;
    public static final long SRCLINE = 1L << 12;
    public static final long PERIOD = 1L << 13;
    public static final long IREGS = 1L << 14;
    public static final long BRSTACK = 1L << 15;
    public static final long BRSTACKSYM = 1L << 16;
    public static final long DATA_SRC = 1L << 17;
    public static final long WEIGHT = 1L << 18;
    public static final long BPF_OUTPUT = 1L << 19;
    public static final long CALLINDENT = 1L << 20;
    public static final long INSN = 1L << 21;
    public static final long INSNLEN = 1L << 22;
    public static final long BRSTACKINSN = 1L << 23;
    public static final long BRSTACKOFF = 1L << 24;
    public static final long SYNTH = 1L << 25;
    public static final long PHYS_ADDR = 1L << 26;
    public static final long UREGS = 1L << 27;
    public static final long METRIC = 1L << 28;
    public static final long MISC = 1L << 29;
    public static final long SRCCODE = 1L << 30;
    public static final long IPC = 1L << 31;
    public static final long TOD = 1L << 32;
    public static final long DATA_PAGE_SIZE = 1L << 33;
    public static final long CODE_PAGE_SIZE = 1L << 34;
    public static final long INS_LAT = 1L << 35;
    public static final long BRSTACKINSNLEN = 1L << 36;
    public static final long MACHINE_PID = 1L << 37;
    public static final long VCPU = 1L << 38;

    private static final String[] NAMES = {"comm", "tid", "pid", "time", "cpu", "event", "trace", "ip", "sym", "dso",
        "addr", "symoff", "srcline", "period", "iregs", "brstack", "brstacksym", "data_src", "weight", "bpf-output",
        "callindent", "insn", "insnlen", "brstackinsn", "brstackoff", "synth", "phys_addr", "uregs", "metric", "misc",
        "srccode", "ipc", "tod", "data_page_size", "code_page_size", "ins_lat", "brstackinsnlen", "machine_pid",
        "vcpu"};

    /** Event types with fields of their own (perf's output types). */
    public enum Type {
        HW("hardware"), SW("software"), TRACEPOINT("tracepoint"), HW_CACHE("hardware-cache"), RAW("raw"),
        BREAKPOINT("breakpoint"), SYNTH("synth"), OTHER("other");

        final String words;

        Type(String words) {
            this.words = words;
        }
    }

    private static final long BASE = COMM | TID | CPU | TIME | EVNAME | IP | SYM | SYMOFFSET | DSO;

    private final long[] fields = new long[Type.values().length];
    private final long[] invalid = new long[Type.values().length];
    private final boolean[] userSet = new boolean[Type.values().length];
    private final boolean[] wildcardSet = new boolean[Type.values().length];
    private final long[] userSetFields = new long[Type.values().length];
    private final long[] userUnsetFields = new long[Type.values().length];
    /** The {@code flags} field (perf keeps it apart from the others). */
    private boolean flags;
    private final List<String> warnings = new ArrayList<>();

    public FieldSet() {
        fields[Type.HW.ordinal()] = BASE | PERIOD;
        fields[Type.SW.ordinal()] = BASE | PERIOD | BPF_OUTPUT;
        fields[Type.TRACEPOINT.ordinal()] = COMM | TID | CPU | TIME | EVNAME | TRACE;
        fields[Type.HW_CACHE.ordinal()] = BASE | PERIOD;
        fields[Type.RAW.ordinal()] = BASE | PERIOD | ADDR | DATA_SRC | WEIGHT | PHYS_ADDR | DATA_PAGE_SIZE
                | CODE_PAGE_SIZE | INS_LAT;
        fields[Type.BREAKPOINT.ordinal()] = BASE | PERIOD;
        fields[Type.SYNTH.ordinal()] = BASE | SYNTH;
        fields[Type.OTHER.ordinal()] = BASE | PERIOD;
        for (Type t : Type.values()) {
            invalid[t.ordinal()] = t == Type.TRACEPOINT ? 0 : t == Type.SW ? TRACE : TRACE | BPF_OUTPUT;
        }
    }

    /** The fields events of type {@code t} print. */
    public long fields(Type t) {
        return fields[t.ordinal()];
    }

    public boolean has(Type t, long field) {
        return (fields[t.ordinal()] & field) != 0;
    }

    /** The {@code flags} field. */
    public boolean flags() {
        return flags;
    }

    public boolean userSet(Type t) {
        return userSet[t.ordinal()];
    }

    /** Warnings perf prints on stderr for what was asked (an ignored field, an override). */
    public List<String> warnings() {
        return warnings;
    }

    /** Applies one {@code -F} argument, after those before it. */
    public FieldSet parse(String arg) {
        String str = arg;
        Type type = null;
        int colon = str.indexOf(':');
        String list;
        if (colon >= 0) {
            String t = str.substring(0, colon);
            list = str.substring(colon + 1);
            type = switch (t) {
                case "hw" -> Type.HW;
                case "sw" -> Type.SW;
                case "trace" -> Type.TRACEPOINT;
                case "raw" -> Type.RAW;
                case "break" -> Type.BREAKPOINT;
                case "synth" -> Type.SYNTH;
                default -> throw new BadInputException("-F " + arg + ": invalid event type in field string (hw, sw, "
                        + "trace, raw, break, synth)");
            };
            if (userSet[type.ordinal()]) {
                warnings.add("Overriding previous field request for " + type.words + " events.");
            }
            if (list.indexOf('+') < 0 && list.indexOf('-') < 0) {
                fields[type.ordinal()] = 0;
                userSet[type.ordinal()] = true;
                wildcardSet[type.ordinal()] = false;
            }
        } else {
            list = str;
            if (str.isEmpty()) {
                throw new BadInputException("-F '': cannot set fields to 'none' for all event types");
            }
            if (str.indexOf('+') < 0 && str.indexOf('-') < 0) {
                boolean any = false;
                for (boolean b : userSet) {
                    any |= b;
                }
                if (any) {
                    warnings.add("Overriding previous field request for all events.");
                }
                for (Type t : Type.values()) {
                    fields[t.ordinal()] = 0;
                    userSet[t.ordinal()] = true;
                    wildcardSet[t.ordinal()] = true;
                }
            }
        }
        int change = 0; // 0 default, 1 set, 2 add, 3 remove
        for (String tok0 : list.split(",")) {
            if (tok0.isEmpty()) {
                continue; // strtok skips empty tokens
            }
            String tok = tok0;
            if (tok.charAt(0) == '+') {
                if (change == 1) {
                    throw badMix(arg);
                }
                change = 2;
                tok = tok.substring(1);
            } else if (tok.charAt(0) == '-') {
                if (change == 1) {
                    throw badMix(arg);
                }
                change = 3;
                tok = tok.substring(1);
            } else {
                if (change != 1 && change != 0) {
                    throw badMix(arg);
                }
                change = 1;
            }
            int i = indexOf(tok);
            if (i < 0 && tok.equals("flags")) {
                flags = change != 3;
                continue;
            }
            if (i < 0) {
                throw new BadInputException("-F " + arg + ": invalid field requested: '" + tok + "' (fields: "
                        + String.join(",", NAMES) + ",flags)");
            }
            long f = 1L << i;
            if (type == null) {
                for (Type t : Type.values()) {
                    int j = t.ordinal();
                    if ((invalid[j] & f) != 0) {
                        warnings.add("'" + tok + "' not valid for " + t.words + " events. Ignoring.");
                        continue;
                    }
                    if (change == 3) {
                        fields[j] &= ~f;
                        userSetFields[j] &= ~f;
                        userUnsetFields[j] |= f;
                    } else {
                        fields[j] |= f;
                        userSetFields[j] |= f;
                        userUnsetFields[j] &= ~f;
                    }
                    userSet[j] = true;
                    wildcardSet[j] = true;
                }
            } else {
                int j = type.ordinal();
                if ((invalid[j] & f) != 0) {
                    throw new BadInputException("-F " + arg + ": '" + tok + "' not valid for " + type.words
                            + " events");
                }
                if (change == 3) {
                    fields[j] &= ~f;
                } else {
                    fields[j] |= f;
                }
                userSet[j] = true;
                wildcardSet[j] = true;
            }
        }
        return this;
    }

    private static BadInputException badMix(String arg) {
        return new BadInputException("-F " + arg + ": cannot mix +-field with overridden fields");
    }

    private static int indexOf(String name) {
        for (int i = 0; i < NAMES.length; i++) {
            if (NAMES[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    /** The name perf gives field bit {@code f}. */
    static String name(long f) {
        return NAMES[Long.numberOfTrailingZeros(f)];
    }

    /**
     * perf's check of the fields against the first event of each type, given the sample type bits that event's
     * samples carry ({@code SampleType} values), its name for messages, and whether the recording has AUX data
     * (then fields the samples lack but the user asked for are allowed, as perf allows them): a default field the
     * samples lack is dropped; one the user asked for is an error.
     */
    public void check(Type t, long sampleType, String eventName, boolean auxtrace) {
        int j = t.ordinal();
        if (fields[j] == 0) {
            return;
        }
        needAll(FIRST_NEEDS, t, sampleType, eventName, auxtrace);
        if (has(t, SYM) && (sampleType & (ptfence.perfdata.SampleType.IP | ptfence.perfdata.SampleType.ADDR)) == 0) {
            throw new BadInputException("-F: display of symbols requested but neither sample IP nor sample address "
                    + "available");
        }
        if (has(t, SYMOFFSET) && !has(t, SYM)) {
            throw new BadInputException("-F: display of offsets (symoff) requested but symbol (sym) is not selected");
        }
        if (has(t, DSO) && (sampleType & (ptfence.perfdata.SampleType.IP | ptfence.perfdata.SampleType.ADDR)) == 0) {
            throw new BadInputException("-F: display of DSO requested but no address to convert");
        }
        if ((has(t, SRCLINE) || has(t, SRCCODE)) && !has(t, IP)) {
            throw new BadInputException("-F: display of source line number requested but sample IP (ip) is not "
                    + "selected");
        }
        needAll(LAST_NEEDS, t, sampleType, eventName, auxtrace);
    }

    /**
     * One of perf's checks of a field against the samples' type bits: {@code what} names the bits in its message;
     * {@code withAux}: a recording with AUX data lets the field through where the user asked for it.
     */
    private record Need(long field, long sampleBits, String what, boolean withAux) {
    }

    /** perf 6.1's evsel__check_attr, in its order, before and after its symbol and source checks. */
    private static final Need[] FIRST_NEEDS = {
        new Need(IP, ptfence.perfdata.SampleType.IP, "IP", false),
        new Need(ADDR, ptfence.perfdata.SampleType.ADDR, "ADDR", true),
        new Need(DATA_SRC, ptfence.perfdata.SampleType.DATA_SRC, "DATA_SRC", true),
        new Need(WEIGHT, ptfence.perfdata.SampleType.WEIGHT | ptfence.perfdata.SampleType.WEIGHT_STRUCT, "WEIGHT",
                true),
    };
    private static final Need[] LAST_NEEDS = {
        new Need(TID | PID, ptfence.perfdata.SampleType.TID, "TID", false),
        new Need(TIME, ptfence.perfdata.SampleType.TIME, "TIME", false),
        new Need(CPU, ptfence.perfdata.SampleType.CPU, "CPU", true),
        // perf 6.1 lets a period the user asked for through on an AUX recording (its synthesized power and psb
        // samples print period 1: magic-trace's -F ...,event,period with --itrace=bep)
        new Need(PERIOD, ptfence.perfdata.SampleType.PERIOD, "PERIOD", true),
        new Need(IREGS, ptfence.perfdata.SampleType.REGS_INTR, "IREGS", true),
        new Need(UREGS, ptfence.perfdata.SampleType.REGS_USER, "UREGS", false),
        new Need(PHYS_ADDR, ptfence.perfdata.SampleType.PHYS_ADDR, "PHYS_ADDR", true),
        new Need(DATA_PAGE_SIZE, ptfence.perfdata.SampleType.DATA_PAGE_SIZE, "DATA_PAGE_SIZE", false),
        new Need(CODE_PAGE_SIZE, ptfence.perfdata.SampleType.CODE_PAGE_SIZE, "CODE_PAGE_SIZE", false),
        new Need(INS_LAT, ptfence.perfdata.SampleType.WEIGHT_STRUCT, "WEIGHT_STRUCT", false),
    };

    private void needAll(Need[] needs, Type t, long sampleType, String eventName, boolean auxtrace) {
        for (Need n : needs) {
            if (has(t, n.field())) {
                need(t, sampleType, n.sampleBits(), n.what(), n.field(), n.withAux() && auxtrace, eventName);
            }
        }
    }

    private void need(Type t, long sampleType, long bit, String what, long field, boolean allowUserSet,
            String eventName) {
        int j = t.ordinal();
        if ((sampleType & bit) != 0) {
            return;
        }
        if ((userSetFields[j] & field) != 0) {
            if (allowUserSet) {
                return;
            }
            throw new BadInputException("samples for '" + eventName + "' event do not have " + what + " attribute set; "
                    + "cannot print '" + name(Long.lowestOneBit(field)) + "' field");
        }
        fields[j] &= ~field;
    }

    /** Adds IP and SYM (unless the user removed them), as perf does for samples with call chains. */
    public void callchainFields(Type t) {
        int j = t.ordinal();
        if ((userUnsetFields[j] & IP) == 0) {
            fields[j] |= IP;
        }
        if ((userUnsetFields[j] & SYM) == 0) {
            fields[j] |= SYM;
        }
    }

    /** Prints the warnings collected so far on {@code err} (perf's words, after "ptdecode: "). */
    public void warn(PrintStream err) {
        for (String w : warnings) {
            err.println("ptdecode: " + w);
        }
        warnings.clear();
    }
}

package ptfence.script;

import ptfence.cli.BadInputException;

/**
 * What {@code --itrace} asks to synthesize from the trace, with perf's letters, periods and flags
 * (tools/perf/Documentation/itrace.txt): {@code i[period][unit]} instructions, {@code b}/{@code c}/{@code r}
 * branches (all, calls only, returns only), {@code x} transactions, {@code w} ptwrite, {@code p} power and PSB events,
 * {@code o} other (aux-output) events, {@code I} interrupt events, {@code e[+-flags]} errors, {@code d[+-flags]} a
 * debug log, {@code g[n]}/{@code G[n]} call chains, {@code l[n]}/{@code L[n]} last branches, {@code s<n>} skip,
 * {@code q} quicker, {@code A} approximate IPC, {@code Z} timeless, {@code y} cycles, {@code f m M t a} cache events.
 */
public final class ItraceOptions {
    public enum PeriodType { INSTRUCTIONS, TICKS, NANOSECS }

    /** perf's default instruction period: 100000 ns (perf script's own default never sets instructions). */
    static final long DEFAULT_PERIOD = 100_000;

    public boolean instructions;
    public boolean cycles;
    public boolean branches;
    public boolean calls;
    public boolean returns;
    public boolean transactions;
    public boolean ptwrites;
    public boolean power;
    public boolean other;
    public boolean interrupts;
    public boolean errors;
    public boolean log;
    public boolean callchain;
    public boolean addCallchain;
    public boolean lastBranch;
    public boolean addLastBranch;
    public boolean approxIpc;
    public boolean timeless;
    public boolean cacheEvents;
    public int quick;
    public int callchainSize = 16;
    public int lastBranchSize = 64;
    public long initialSkip;
    public long period = 1;
    public PeriodType periodType = PeriodType.INSTRUCTIONS;
    /** {@code e} flags as letter bits ({@code 1 << (c - 'a')}): {@code o} overflow, {@code l} data lost. */
    public int errorPlus;
    public int errorMinus;
    /** The string given (null: perf script's default). */
    public final String spec;
    // what this one string set itself (perf keeps the rest from an earlier --itrace)
    private boolean periodSet;
    private boolean periodTypeSet;
    private boolean callchainSet;
    private boolean lastBranchSet;
    private boolean skipSet;

    private ItraceOptions(String spec) {
        this.spec = spec;
    }

    /**
     * perf script's default when --itrace is not given (or given without a value): calls as branch samples, errors,
     * transactions, ptwrite, power and PSB events, other and interrupt events; no instructions.
     */
    public static ItraceOptions scriptDefault() {
        ItraceOptions o = new ItraceOptions(null);
        o.branches = true;
        o.calls = true;
        o.transactions = true;
        o.ptwrites = true;
        o.power = true;
        o.other = true;
        o.interrupts = true;
        o.errors = true;
        o.cacheEvents = true;
        o.periodSet = true; // perf's itrace_synth_opts__set_default sets these, the letters above add to others
        o.periodTypeSet = true;
        o.callchainSet = true;
        o.lastBranchSet = true;
        o.skipSet = true;
        return o;
    }

    /**
     * --itrace given several times, as perf parses each into the same options: the letters add up (so do q and the
     * error flags); a size, period or skip one string sets replaces the earlier one; with instructions (or cycles)
     * among the letters, a string that sets no period puts perf's default period back.
     */
    public static ItraceOptions parseAll(java.util.List<String> specs) {
        ItraceOptions acc = null;
        for (String s : specs) {
            ItraceOptions o = parse(s);
            acc = acc == null ? o : o.after(acc);
        }
        return acc == null ? scriptDefault() : acc;
    }

    private ItraceOptions after(ItraceOptions e) {
        instructions |= e.instructions;
        cycles |= e.cycles;
        branches |= e.branches;
        calls |= e.calls;
        returns |= e.returns;
        transactions |= e.transactions;
        ptwrites |= e.ptwrites;
        power |= e.power;
        other |= e.other;
        interrupts |= e.interrupts;
        errors |= e.errors;
        log |= e.log;
        callchain |= e.callchain;
        addCallchain |= e.addCallchain;
        lastBranch |= e.lastBranch;
        addLastBranch |= e.addLastBranch;
        approxIpc |= e.approxIpc;
        timeless |= e.timeless;
        cacheEvents |= e.cacheEvents;
        quick += e.quick;
        errorPlus |= e.errorPlus;
        errorMinus |= e.errorMinus;
        if (!callchainSet) {
            callchainSize = e.callchainSize;
        }
        if (!lastBranchSet) {
            lastBranchSize = e.lastBranchSize;
        }
        if (!skipSet) {
            initialSkip = e.initialSkip;
        }
        if (instructions || cycles) {
            if (!periodTypeSet) {
                periodType = PeriodType.NANOSECS;
            }
            if (!periodSet) {
                period = DEFAULT_PERIOD;
            }
        } else {
            period = e.period;
            periodType = e.periodType;
        }
        return this;
    }

    /** Parses {@code spec} as perf does; a string perf refuses is refused with perf's words (exit 2). */
    public static ItraceOptions parse(String spec) {
        if (spec == null) {
            return scriptDefault();
        }
        ItraceOptions o = new ItraceOptions(spec);
        boolean periodSet = false;
        boolean periodTypeSet = false;
        int p = 0;
        int n = spec.length();
        try {
            while (p < n) {
                char c = spec.charAt(p++);
                switch (c) {
                    case 'i', 'y' -> {
                        if (c == 'y') {
                            o.cycles = true;
                        } else {
                            o.instructions = true;
                        }
                        p = skipSeparators(spec, p);
                        if (p < n && isDigit(spec.charAt(p))) {
                            int end = digitsEnd(spec, p);
                            o.period = Long.parseUnsignedLong(spec.substring(p, end));
                            periodSet = true;
                            o.periodSet = true;
                            p = skipSeparators(spec, end);
                            if (p >= n) {
                                break; // a number alone: the default unit
                            }
                            char u = spec.charAt(p++);
                            switch (u) {
                                case 'i' -> o.periodType = PeriodType.INSTRUCTIONS;
                                case 't' -> o.periodType = PeriodType.TICKS;
                                case 'm', 'u', 'n' -> {
                                    if (p >= n || spec.charAt(p++) != 's') {
                                        throw bad(spec);
                                    }
                                    o.period *= u == 'm' ? 1_000_000 : u == 'u' ? 1_000 : 1;
                                    o.periodType = PeriodType.NANOSECS;
                                }
                                default -> throw bad(spec);
                            }
                            periodTypeSet = true;
                            o.periodTypeSet = true;
                        }
                    }
                    case 'b' -> o.branches = true;
                    case 'x' -> o.transactions = true;
                    case 'w' -> o.ptwrites = true;
                    case 'p' -> o.power = true;
                    case 'o' -> o.other = true;
                    case 'I' -> o.interrupts = true;
                    case 'e' -> {
                        o.errors = true;
                        int[] f = new int[2];
                        p = flags(spec, p, f);
                        o.errorPlus |= f[0];
                        o.errorMinus |= f[1];
                    }
                    case 'd' -> {
                        o.log = true;
                        p = flags(spec, p, new int[2]);
                    }
                    case 'f', 'm', 'M', 't', 'a' -> o.cacheEvents = true;
                    case 'c' -> {
                        o.branches = true;
                        o.calls = true;
                    }
                    case 'r' -> {
                        o.branches = true;
                        o.returns = true;
                    }
                    case 'g', 'G' -> {
                        if (c == 'g') {
                            o.callchain = true;
                        } else {
                            o.addCallchain = true;
                        }
                        int[] size = sizeAt(spec, p, 16);
                        o.callchainSize = size[0];
                        o.callchainSet = true;
                        p = size[1];
                    }
                    case 'l', 'L' -> {
                        if (c == 'l') {
                            o.lastBranch = true;
                        } else {
                            o.addLastBranch = true;
                        }
                        int[] size = sizeAt(spec, p, 64);
                        o.lastBranchSize = size[0];
                        o.lastBranchSet = true;
                        p = size[1];
                    }
                    case 's' -> {
                        int end = digitsEnd(spec, p);
                        if (end == p) {
                            throw bad(spec);
                        }
                        o.initialSkip = Long.parseLong(spec.substring(p, end));
                        o.skipSet = true;
                        p = end;
                    }
                    case 'q' -> o.quick++;
                    case 'A' -> o.approxIpc = true;
                    case 'Z' -> o.timeless = true;
                    case ' ', ',' -> { }
                    default -> throw bad(spec);
                }
            }
        } catch (NumberFormatException e) {
            throw bad(spec);
        }
        if (o.instructions || o.cycles) {
            if (!periodTypeSet) {
                o.periodType = PeriodType.NANOSECS;
            }
            if (!periodSet) {
                o.period = DEFAULT_PERIOD;
            }
        }
        return o;
    }

    /** The size that may follow g or l at {@code p} (1..1024, perf's limit) and where parsing goes on: {size, p}. */
    private static int[] sizeAt(String spec, int p, int none) {
        p = skipSeparators(spec, p);
        if (p < spec.length() && isDigit(spec.charAt(p))) {
            int end = digitsEnd(spec, p);
            long v = Long.parseLong(spec.substring(p, end));
            if (v == 0 || v > 1024) {
                throw bad(spec);
            }
            return new int[] {(int) v, end};
        }
        return new int[] {none, p};
    }

    private static BadInputException bad(String spec) {
        return new BadInputException("--itrace=" + spec + ": bad instruction tracing options (perf's letters: i b c r "
                + "x w p o I e d g G l L s q A Z y, periods as i100ns, i1us, i10i, i1000t; see perf-script(1))");
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static int digitsEnd(String s, int p) {
        while (p < s.length() && isDigit(s.charAt(p))) {
            p++;
        }
        return p;
    }

    private static int skipSeparators(String s, int p) {
        while (p < s.length() && (s.charAt(p) == ' ' || s.charAt(p) == ',')) {
            p++;
        }
        return p;
    }

    /** {@code +x-y} flags after e or d: [plus, minus] letter bits; returns where parsing stopped. */
    private static int flags(String s, int p, int[] out) {
        while (p < s.length()) {
            char c = s.charAt(p);
            if (c == ' ') {
                p++;
            } else if (c == '+' || c == '-') {
                p++;
                while (p < s.length() && s.charAt(p) == ' ') {
                    p++;
                }
                if (p >= s.length() || s.charAt(p) < 'a' || s.charAt(p) > 'z') {
                    throw bad(s);
                }
                out[c == '+' ? 0 : 1] |= 1 << (s.charAt(p) - 'a');
                p++;
            } else {
                break;
            }
        }
        return p;
    }

    /** Whether any branch sample (b, c or r) is wanted. */
    public boolean anyBranches() {
        return branches;
    }

    /** The branch flags a sample must have one of to be kept (c: calls, r: returns); 0: every branch. */
    public int branchFilter() {
        int f = 0;
        if (calls) {
            f |= ptfence.calls.BranchFlags.CALL | ptfence.calls.BranchFlags.ASYNC
                    | ptfence.calls.BranchFlags.TRACE_END;
        }
        if (returns) {
            f |= ptfence.calls.BranchFlags.RETURN | ptfence.calls.BranchFlags.TRACE_BEGIN;
        }
        return f;
    }

    /** Error reports perf would leave out: {@code e-o} (overflow), {@code e-l} (data lost). */
    public boolean suppressesOverflow() {
        return (errorMinus & (1 << ('o' - 'a'))) != 0;
    }

    public boolean suppressesLost() {
        return (errorMinus & (1 << ('l' - 'a'))) != 0;
    }
}

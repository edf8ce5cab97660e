package ptfence.calls;

/**
 * Which of perf script's fields ({@code -F}) a line of the call views shows, with the switches that change how they
 * are printed. The bits are perf's own {@code PERF_OUTPUT_*} values (builtin-script.c), so a parsed {@code -F} set
 * carries over bit for bit ({@link #FLAGS}, perf's separate flags switch, sits above them); {@link #branches}, {@link #callTrace} and
 * {@link #callRetTrace} are perf 6.1's defaults for {@code --itrace=b}, {@code --call-trace} and
 * {@code --call-ret-trace}, and {@link #with}/{@link #without} apply {@code -F +f,-f}.
 *
 * @param bits     the fields shown (the constants below)
 * @param userSet  fields were given with {@code -F} (perf then shows a branch's target only with {@code addr})
 * @param nanosecs times with nine decimals ({@code --ns}; the call traces' default), else six
 * @param dsoPad   file names padded (or cut) to this width; 0 leaves them as they are ({@code --call-trace}: 50)
 */
public record SampleFields(long bits, boolean userSet, boolean nanosecs, int dsoPad) {
    public static final long COMM = 1;
    public static final long TID = 1 << 1;
    public static final long PID = 1 << 2;
    public static final long TIME = 1 << 3;
    public static final long CPU = 1 << 4;
    public static final long EVENT = 1 << 5;
    public static final long IP = 1 << 7;
    public static final long SYM = 1 << 8;
    public static final long DSO = 1 << 9;
    public static final long ADDR = 1 << 10;
    public static final long SYMOFF = 1 << 11;
    public static final long SRCLINE = 1 << 12;
    public static final long PERIOD = 1 << 13;
    public static final long CALLINDENT = 1 << 20;
    public static final long MISC = 1 << 29;
    public static final long INSN = 1 << 21;
    public static final long INSNLEN = 1 << 22;
    public static final long SYNTH = 1 << 25;
    public static final long IPC = 1L << 31;
    /** Not one of perf's output fields but its own option ({@code -F +flags} sets it): the branch kind column. */
    public static final long FLAGS = 1L << 62;

    /**
     * perf's defaults for a hardware-type sample (the synthesized branches): comm tid cpu time period event ip sym
     * symoff dso; with synth, which only the synthesized events' lines (psb, cbr, ...) look at: their own text.
     */
    private static final long HARDWARE = COMM | TID | CPU | TIME | EVENT | IP | SYM | SYMOFF | DSO | PERIOD | SYNTH;

    /** {@code perf script --itrace=b}: every branch with perf's default fields (its target follows "=>"). */
    public static SampleFields branches() {
        return new SampleFields(HARDWARE, false, false, 0);
    }

    /** {@code perf script --call-trace}: {@code -F -ip,-addr,-event,-period,+callindent}, nanoseconds, files padded to 50. */
    public static SampleFields callTrace() {
        return new SampleFields((HARDWARE | CALLINDENT) & ~(IP | ADDR | EVENT | PERIOD), true, true, 50);
    }

    /** {@code perf script --call-ret-trace}: as {@link #callTrace} with the flags, files not padded. */
    public static SampleFields callRetTrace() {
        return new SampleFields((HARDWARE | CALLINDENT | FLAGS) & ~(IP | ADDR | EVENT | PERIOD), true, true, 0);
    }

    public boolean has(long field) {
        return (bits & field) != 0;
    }

    /** {@code -F +field}: shown from now on (and the fields count as user-given). */
    public SampleFields with(long field) {
        return new SampleFields(bits | field, true, nanosecs, dsoPad);
    }

    /** {@code -F -field}. */
    public SampleFields without(long field) {
        return new SampleFields(bits & ~field, true, nanosecs, dsoPad);
    }

    /** Exactly {@code fields} ({@code -F a,b,c}). */
    public SampleFields only(long fields) {
        return new SampleFields(fields, true, nanosecs, dsoPad);
    }

    public SampleFields nanosecs(boolean on) {
        return new SampleFields(bits, userSet, on, dsoPad);
    }

    /**
     * What a recording can show: no {@code cpu} when its samples carry none (a per-thread recording), no
     * {@code time} without timing, as perf leaves out fields its samples lack unless {@code -F} asked for them.
     */
    public SampleFields forRecording(boolean perCpu, boolean timed) {
        long b = bits;
        if (!perCpu) {
            b &= ~CPU;
        }
        if (!timed) {
            b &= ~TIME;
        }
        return new SampleFields(b, userSet, nanosecs, dsoPad);
    }
}

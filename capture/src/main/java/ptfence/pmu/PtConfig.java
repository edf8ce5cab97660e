package ptfence.pmu;

import java.util.LinkedHashMap;
import java.util.Map;
import ptfence.cli.BadInputException;

/**
 * The intel_pt config word from perf's term names, with perf's defaults ({@code tsc,mtc,mtc_period=<near 3>,
 * psb_period=<near 3>,pt,branch}, each only where the PMU supports it) and the driver's own checks against
 * {@code caps/*}, so a bad combination fails here with a message naming the option instead of EINVAL from the kernel.
 */
public final class PtConfig {
    /** Option name (as ptrec spells it) to format term. */
    private static final Map<String, String> TERMS = Map.ofEntries(Map.entry("tsc", "tsc"), Map.entry("mtc", "mtc"),
            Map.entry("mtc-period", "mtc_period"), Map.entry("cyc", "cyc"), Map.entry("cyc-thresh", "cyc_thresh"),
            Map.entry("psb-period", "psb_period"), Map.entry("noretcomp", "noretcomp"), Map.entry("ptw", "ptw"),
            Map.entry("fup-on-ptw", "fup_on_ptw"), Map.entry("pwr-evt", "pwr_evt"), Map.entry("event", "event"),
            Map.entry("branch", "branch"));

    private final IntelPtPmu pmu;
    private final Map<String, Long> values = new LinkedHashMap<>();

    private PtConfig(IntelPtPmu pmu) {
        this.pmu = pmu;
    }

    /** perf's default terms for this PMU (intel_pt_default_config). */
    public static PtConfig defaults(IntelPtPmu pmu) {
        PtConfig c = new PtConfig(pmu);
        if (pmu.hasTerm("tsc")) c.values.put("tsc", 1L);
        if (pmu.cap("mtc") != 0 && pmu.cap("mtc_periods") != 0 && pmu.hasTerm("mtc")) {
            c.values.put("mtc", 1L);
            c.values.put("mtc_period", (long) nearestBit(pmu.cap("mtc_periods"), 3));
        }
        if (pmu.cap("psb_cyc") != 0 && pmu.cap("psb_periods") != 0 && pmu.hasTerm("psb_period")) {
            c.values.put("psb_period", (long) nearestBit(pmu.cap("psb_periods"), 3));
        }
        if (pmu.hasTerm("pt") && pmu.hasTerm("branch")) {
            c.values.put("pt", 1L);
            c.values.put("branch", 1L);
        }
        return c;
    }

    /**
     * Applies the user's options over the defaults: {@code option} is ptrec's name ({@code mtc-period}), the value
     * 0/1 for switches. Validates at once.
     */
    public PtConfig set(String option, long value) {
        String term = TERMS.get(option);
        if (term == null) {
            throw new BadInputException("--" + option + ": not an intel_pt option");
        }
        FormatTerm t = pmu.format().get(term);
        if (t == null) {
            throw new BadInputException("--" + option + ": this intel_pt PMU has no '" + term + "' term");
        }
        if (value < 0 || value > t.maxValue()) {
            throw new BadInputException("--" + option + "=" + value + ": out of range 0.." + t.maxValue());
        }
        values.put(term, value);
        if (term.equals("mtc_period") && value >= 0) values.put("mtc", 1L);
        if (term.equals("cyc_thresh")) values.put("cyc", 1L);
        if (term.equals("fup_on_ptw") && value != 0) values.put("ptw", 1L);
        return this;
    }

    public long value(String term) {
        return values.getOrDefault(term, 0L);
    }

    /** Checks the combination against caps/* the way the driver's pt_event_valid() does; returns the config word. */
    public long config() {
        requireCap("cyc", "psb_cyc", "cyc");
        requireCap("mtc", "mtc", "mtc");
        requireCap("ptw", "ptwrite", "ptw");
        requireCap("pwr_evt", "power_event_trace", "pwr-evt");
        requireCap("event", "event_trace", "event");
        if (value("cyc") != 0 && values.containsKey("cyc_thresh")) {
            requireBit("cyc_thresh", "cycle_thresholds", "cyc-thresh");
        }
        if (value("mtc") != 0 && values.containsKey("mtc_period")) {
            requireBit("mtc_period", "mtc_periods", "mtc-period");
        }
        if (values.containsKey("psb_period")) {
            if (pmu.cap("psb_cyc") == 0 && value("psb_period") != 0) {
                throw new BadInputException("--psb-period: this CPU cannot change the PSB period (caps/psb_cyc = 0)");
            }
            if (pmu.cap("psb_cyc") != 0) requireBit("psb_period", "psb_periods", "psb-period");
        }
        if (value("fup_on_ptw") != 0 && value("ptw") == 0) {
            throw new BadInputException("--fup-on-ptw needs --ptw");
        }
        if (value("branch") == 0 && values.containsKey("branch") && !pmu.hasTerm("pt")) {
            throw new BadInputException("--no-branch: this PMU cannot disable branch tracing (no 'pt' pass-through term)");
        }
        if (value("branch") == 0 && pmu.hasTerm("pt")) {
            values.put("pt", 1L);
        }
        long config = 0;
        for (Map.Entry<String, Long> e : values.entrySet()) {
            config |= pmu.term(e.getKey()).encode(e.getValue());
        }
        return config;
    }

    /** The terms as perf prints them, e.g. {@code tsc=1,mtc=1,mtc_period=3,psb_period=3,pt=1,branch=1}. */
    public String describe() {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, Long> e : values.entrySet()) {
            if (sb.length() > 0) sb.append(',');
            sb.append(e.getKey()).append('=').append(e.getValue());
        }
        return sb.toString();
    }

    private void requireCap(String term, String cap, String option) {
        if (value(term) != 0 && pmu.cap(cap) == 0) {
            throw new BadInputException("--" + option + ": not supported by this CPU (caps/" + cap + " = 0)");
        }
    }

    private void requireBit(String term, String cap, String option) {
        long v = value(term);
        long allowed = pmu.cap(cap);
        if (v >= 64 || (allowed & (1L << v)) == 0) {
            throw new BadInputException("--" + option + "=" + v + ": not supported by this CPU (caps/" + cap
                    + " = 0x" + Long.toHexString(allowed) + " allows " + bits(allowed) + ")");
        }
    }

    private static String bits(long mask) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 64; i++) {
            if ((mask & (1L << i)) != 0) sb.append(sb.length() == 0 ? "" : ",").append(i);
        }
        return sb.length() == 0 ? "none" : sb.toString();
    }

    /** perf's intel_pt_pick_bit: the largest supported value not above {@code target}, else the smallest one. */
    static int nearestBit(long mask, int target) {
        int pick = -1;
        for (int pos = 0; pos < 64; pos++) {
            if ((mask & (1L << pos)) == 0) continue;
            if (pos <= target || pick < 0) pick = pos;
            if (pos >= target) break;
        }
        return Math.max(pick, 0);
    }
}

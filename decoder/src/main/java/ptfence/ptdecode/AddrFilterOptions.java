package ptfence.ptdecode;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.ISetter;
import picocli.CommandLine.Model.OptionSpec;
import ptfence.flow.AddrFilter;
import ptfence.image.Numbers;

/**
 * ptxed's --filter:addr&lt;n&gt;_cfg/_a/_b for the four address ranges (n = 0..3), added to a command's model by
 * {@link #addTo} (twelve options of one pattern; only range 0's are listed in the help).
 */
final class AddrFilterOptions {
    private static final String[] PARTS = {"cfg", "a", "b"};
    private static final String[] LABELS = {"CFG", "BASE", "LIMIT"};
    private static final String[] HELP = {"IA32_RTIT_CTL.ADDRn_CFG of address range n (0-3; --filter:addr1_cfg ... "
            + "likewise): 1 FilterEn, 2 TraceStop (for SKL014).", "IA32_RTIT_ADDRn_A: range n's base.",
        "IA32_RTIT_ADDRn_B: range n's limit."};

    /** The values as given, [range][cfg, a, b]. */
    private final String[][] given = new String[AddrFilter.RANGES][PARTS.length];

    /** Adds the options to {@code spec}, storing into {@code target}. */
    static void addTo(CommandSpec spec, AddrFilterOptions target) {
        for (int n = 0; n < AddrFilter.RANGES; n++) {
            for (int k = 0; k < PARTS.length; k++) {
                int range = n;
                int part = k;
                ISetter setter = new ISetter() {
                    @Override
                    public <T> T set(T value) {
                        target.given[range][part] = (String) value;
                        return null;
                    }
                };
                spec.addOption(OptionSpec.builder("--filter:addr" + n + "_" + PARTS[k]).type(String.class)
                        .paramLabel(LABELS[k]).description(HELP[k]).hidden(n > 0).setter(setter).build());
            }
        }
    }

    void applyTo(AddrFilter filter) {
        for (int n = 0; n < AddrFilter.RANGES; n++) {
            String[] v = given[n];
            String p = "--filter:addr" + n + "_";
            filter.set(n, v[0] == null ? 0 : (int) Numbers.parse(v[0], p + "cfg"),
                    v[1] == null ? 0 : Numbers.parse(v[1], p + "a"), v[2] == null ? 0 : Numbers.parse(v[2], p + "b"));
        }
    }
}

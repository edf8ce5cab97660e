package ptfence.ptdecode;

import picocli.CommandLine.Option;
import ptfence.flow.AddrFilter;
import ptfence.image.Numbers;

/** ptxed's --filter:addr<n>_cfg/_a/_b for the four address ranges (n = 0..3). */
final class AddrFilterOptions {
    private final String[] cfg = new String[AddrFilter.RANGES];
    private final String[] a = new String[AddrFilter.RANGES];
    private final String[] b = new String[AddrFilter.RANGES];

    @Option(names = "--filter:addr0_cfg", paramLabel = "CFG", description = "IA32_RTIT_CTL.ADDRn_CFG of address "
            + "range n (0-3; --filter:addr1_cfg ... likewise): 1 FilterEn, 2 TraceStop (for SKL014).")
    void cfg0(String v) {
        cfg[0] = v;
    }

    @Option(names = "--filter:addr0_a", paramLabel = "BASE", description = "IA32_RTIT_ADDRn_A: range n's base.")
    void a0(String v) {
        a[0] = v;
    }

    @Option(names = "--filter:addr0_b", paramLabel = "LIMIT", description = "IA32_RTIT_ADDRn_B: range n's limit.")
    void b0(String v) {
        b[0] = v;
    }

    @Option(names = "--filter:addr1_cfg", hidden = true)
    void cfg1(String v) {
        cfg[1] = v;
    }

    @Option(names = "--filter:addr1_a", hidden = true)
    void a1(String v) {
        a[1] = v;
    }

    @Option(names = "--filter:addr1_b", hidden = true)
    void b1(String v) {
        b[1] = v;
    }

    @Option(names = "--filter:addr2_cfg", hidden = true)
    void cfg2(String v) {
        cfg[2] = v;
    }

    @Option(names = "--filter:addr2_a", hidden = true)
    void a2(String v) {
        a[2] = v;
    }

    @Option(names = "--filter:addr2_b", hidden = true)
    void b2(String v) {
        b[2] = v;
    }

    @Option(names = "--filter:addr3_cfg", hidden = true)
    void cfg3(String v) {
        cfg[3] = v;
    }

    @Option(names = "--filter:addr3_a", hidden = true)
    void a3(String v) {
        a[3] = v;
    }

    @Option(names = "--filter:addr3_b", hidden = true)
    void b3(String v) {
        b[3] = v;
    }

    void applyTo(AddrFilter filter) {
        for (int n = 0; n < AddrFilter.RANGES; n++) {
            String p = "--filter:addr" + n;
            filter.set(n, cfg[n] == null ? 0 : (int) Numbers.parse(cfg[n], p + "_cfg"),
                    a[n] == null ? 0 : Numbers.parse(a[n], p + "_a"), b[n] == null ? 0 : Numbers.parse(b[n], p + "_b"));
        }
    }
}

package ptfence.flow;

import ptfence.cli.BadInputException;

/**
 * What the flow decoders need to know besides trace and image: the CPU (for errata workarounds), timing
 * parameters, and event options. Mutable while options are parsed; treat as fixed once decoding starts.
 */
public final class FlowConfig {
    public int cpuFamily;
    public int cpuModel;
    public int cpuStepping;
    public boolean cpuKnown;

    public boolean bdm70;
    public boolean bdm64;
    public boolean skd007;
    public boolean skd010;
    public boolean skd022;
    public boolean skl014;
    public boolean skl168;
    public boolean skz84;
    public boolean apl11;
    public boolean apl12;

    /** Compressed returns are not used by the traced program (perf's noretcomp). */
    public boolean noRetComp;
    public boolean iflagsEvents;
    public boolean tickEvents;
    public boolean keepTcalOnOvf;
    public boolean endOnCall;
    public boolean endOnJump;
    /** After an error, continue at the next usable event instead of the next PSB. */
    public boolean resyncOnError;

    public int mtcFreq;
    public int nomFreq;
    public int cpuid15Eax;
    public int cpuid15Ebx;

    /** Address filter 0 (ptxed --filter:addr0_*), used by erratum SKL014. */
    public int addr0Cfg;
    public long addr0A;
    public long addr0B;

    /**
     * Sets the CPU from "F/M[/S]" and enables the errata libipt knows for it. Returns false if the CPU is
     * not one with known errata (ptxed's "unknown cpu"); the decode still runs, without workarounds.
     */
    public boolean setCpu(String spec) {
        String[] parts = spec.split("/");
        if (parts.length < 2 || parts.length > 3) {
            throw new BadInputException("--cpu " + spec + ": expected family/model[/stepping]");
        }
        try {
            cpuFamily = Integer.decode(parts[0]);
            cpuModel = Integer.decode(parts[1]);
            cpuStepping = parts.length == 3 ? Integer.decode(parts[2]) : 0;
        } catch (NumberFormatException e) {
            throw new BadInputException("--cpu " + spec + ": expected family/model[/stepping]");
        }
        cpuKnown = true;
        return applyErrata();
    }

    private boolean applyErrata() {
        if (cpuFamily == 6) {
            switch (cpuModel) {
                case 0x3d, 0x47, 0x4f, 0x56 -> { bdm70 = true; bdm64 = true; }
                case 0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6 -> {
                    bdm70 = true; skd007 = true; skd022 = true; skd010 = true; skl014 = true; skl168 = true;
                }
                case 0x55, 0x6a, 0x6c -> { bdm70 = true; skl014 = true; skd022 = true; skz84 = true; }
                case 0x8f, 0xcf, 0xad, 0xae -> { bdm70 = true; skd022 = true; skz84 = true; }
                case 0x66, 0x7d, 0x7e, 0x8c, 0x8d, 0xa7, 0xa8 -> { bdm70 = true; skl014 = true; skd022 = true; }
                case 0x97, 0x9a, 0xba, 0xb7, 0xbf, 0xc5, 0xc6, 0xb5, 0xaa, 0xac, 0xbd, 0xcc, 0xd5 -> {
                    bdm70 = true; skd022 = true; apl11 = true;
                }
                case 0x5c, 0x5f -> { apl12 = true; apl11 = true; }
                case 0x7a, 0x86, 0x96, 0x9c, 0xb6, 0xaf, 0xdd -> apl11 = true;
                default -> {
                    return false;
                }
            }
            return true;
        }
        if (cpuFamily == 0x12 && (cpuModel == 1 || cpuModel == 3)) {
            bdm70 = true; skd022 = true; apl11 = true;
            return true;
        }
        if (cpuFamily == 0x13 && cpuModel == 1) {
            bdm70 = true; skd022 = true; skz84 = true;
            return true;
        }
        return false;
    }
}

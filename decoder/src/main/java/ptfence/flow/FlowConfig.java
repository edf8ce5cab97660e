package ptfence.flow;

import ptfence.packet.Errata;

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
    /**
     * After an error, continue at the next packet that gives a full IP (perf's recovery; recordings' default),
     * forgetting the compressed-IP state, instead of the next PSB. Wins over {@link #resyncOnError}.
     */
    public boolean resyncAtIp;

    /**
     * perf's itrace {@code q} count: 1 decodes from IP packets alone (FUP, TIP, TIP.PGE, TIP.PGD: no code read, TNT
     * ignored), 2 from PSB+ alone (the FUP in each); 0 walks the code.
     */
    public int hop;
    /** Keep perf's clock too ({@link ptfence.timing.PerfClock}): {@link FlowDecoder#time} is then perf's. */
    public boolean perfClock;

    public int mtcFreq;
    public int nomFreq;
    public int cpuid15Eax;
    public int cpuid15Ebx;

    /** The address filters in effect when recording (ptxed --filter:addr<n>_*), used by erratum SKL014. */
    public final AddrFilter addrFilter = new AddrFilter();
    /** The decision-point memo the counting and coverage paths use: the process's, shared by all threads. */
    public ptfence.insn.TntPaths.Memo pathMemo = ptfence.insn.TntPaths.PROCESS;

    /**
     * Sets the CPU from "F/M[/S]" and enables the errata libipt knows for it (the table lives in
     * {@link Errata}). Returns false if the CPU is not one with known errata (ptxed's "unknown cpu"); the
     * decode still runs, without workarounds.
     */
    public boolean setCpu(String spec) {
        Errata.Cpu cpu = Errata.Cpu.parse(spec);
        cpuFamily = cpu.family();
        cpuModel = cpu.model();
        cpuStepping = cpu.stepping();
        cpuKnown = true;
        Errata e;
        try {
            e = Errata.of(cpu);
        } catch (Errata.UnknownCpuException unknown) {
            return false;
        }
        errata = e;
        bdm70 = e.bdm70();
        bdm64 = e.bdm64();
        skd007 = e.skd007();
        skd010 = e.skd010();
        skd022 = e.skd022();
        skl014 = e.skl014();
        skl168 = e.skl168();
        skz84 = e.skz84();
        apl11 = e.apl11();
        apl12 = e.apl12();
        return true;
    }

    /** The errata as the packet layer takes them (NONE until {@link #setCpu} found the CPU). */
    public Errata errata = Errata.NONE;

    /**
     * True if the timing packets MTC and CYC can be passed over without computing time whenever no time is
     * printed (CursorInput#skipTiming): no tick events, and an MTC frequency the hardware can have (0..15), for
     * which those packets never fail (Timing#mtcSkipped).
     */
    public boolean timingSkippable() {
        return !tickEvents && mtcFreq >= 0 && mtcFreq <= 15;
    }
}

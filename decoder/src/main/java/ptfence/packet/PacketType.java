package ptfence.packet;

/**
 * Every Intel PT packet type the decoder knows. {@link #code()} is the int that {@link PacketCursor#type()}
 * returns (the {@code PacketCursor} constants of the same name); {@link #ptdumpName()} is the opcode
 * column ptdump prints.
 */
public enum PacketType {
    PAD("pad"),
    PSB("psb"),
    PSBEND("psbend"),
    TNT_8("tnt.8"),
    TNT_64("tnt.64"),
    TIP("tip"),
    TIP_PGE("tip.pge"),
    TIP_PGD("tip.pgd"),
    FUP("fup"),
    PIP("pip"),
    MODE_EXEC("mode.exec"),
    MODE_TSX("mode.tsx"),
    TSC("tsc"),
    MTC("mtc"),
    CYC("cyc"),
    TMA("tma"),
    CBR("cbr"),
    VMCS("vmcs"),
    OVF("ovf"),
    MNT("mnt"),
    STOP("stop"),
    PTW("ptw"),
    EXSTOP("exstop"),
    MWAIT("mwait"),
    PWRE("pwre"),
    PWRX("pwrx"),
    CFE("cfe"),
    EVD("evd"),
    TRIG("trig"),
    BBP("bbp"),
    BIP("bip"),
    BEP("bep"),
    /** A packet the CPU is known to corrupt (erratum SKZ84: TMA with reserved bits); skipped, not decoded. */
    INVALID("<invalid>");

    private static final PacketType[] BY_CODE = values();

    private final String ptdumpName;

    PacketType(String ptdumpName) {
        this.ptdumpName = ptdumpName;
    }

    public int code() {
        return ordinal();
    }

    public String ptdumpName() {
        return ptdumpName;
    }

    /** Lower-case name used in JSON output: the ptdump name. */
    public String jsonName() {
        return ptdumpName;
    }

    public static PacketType ofCode(int code) {
        return BY_CODE[code];
    }

    /** TIP, TIP.PGE, TIP.PGD and FUP: the packets with an IP payload. */
    public boolean hasIp() {
        return this == TIP || this == TIP_PGE || this == TIP_PGD || this == FUP;
    }

    /** Packets ptdump counts as timing packets (hidden by --no-timing). */
    public boolean isTiming() {
        return this == TSC || this == MTC || this == CYC || this == TMA || this == CBR;
    }
}

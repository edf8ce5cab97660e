package ptfence.insn;

/** Coarse instruction classes: what a PT decoder must know to follow control flow. Kept as bytes in caches. */
public final class InsnClass {
    private InsnClass() {}

    /** Not a branch: execution falls through. */
    public static final byte OTHER = 0;
    /** Jcc, JrCXZ, LOOPcc: one TNT bit. */
    public static final byte COND_JUMP = 1;
    /** Near jump with a displacement: no packet. */
    public static final byte JUMP = 2;
    /** Near jump through a register or memory: TIP. */
    public static final byte JUMP_INDIRECT = 3;
    /** Near call with a displacement: no packet; pushes the return address. */
    public static final byte CALL = 4;
    /** Near call through a register or memory: TIP. */
    public static final byte CALL_INDIRECT = 5;
    /** Near return: TNT bit (compressed) or TIP. */
    public static final byte RETURN = 6;
    /** INT n, INT3, INTO, INT1, SYSCALL, SYSENTER, VMCALL, far CALL. */
    public static final byte FAR_CALL = 7;
    /** Far JMP. */
    public static final byte FAR_JUMP = 8;
    /** IRET, SYSRET, SYSEXIT, far RET, VMLAUNCH/VMRESUME, UIRET, ERETS/ERETU. */
    public static final byte FAR_RETURN = 9;
    /** PTWRITE. */
    public static final byte PTWRITE = 10;

    public static boolean isBranch(int cls) {
        return cls != OTHER && cls != PTWRITE;
    }

    public static String name(int cls) {
        return switch (cls) {
            case OTHER -> "other";
            case COND_JUMP -> "cond_jump";
            case JUMP -> "jump";
            case JUMP_INDIRECT -> "jump_indirect";
            case CALL -> "call";
            case CALL_INDIRECT -> "call_indirect";
            case RETURN -> "return";
            case FAR_CALL -> "far_call";
            case FAR_JUMP -> "far_jump";
            case FAR_RETURN -> "far_return";
            case PTWRITE -> "ptwrite";
            default -> "?";
        };
    }
}

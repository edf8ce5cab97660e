package ptfence.insn;

/**
 * Finer instruction identities that trace events bind to (a PIP binds to MOV CR3, a VMCS to VMPTRLD,
 * an iret event to IRET, ...). Kept as bytes in caches.
 */
public final class InsnOp {
    private InsnOp() {}

    public static final byte NONE = 0;
    public static final byte MOV_CR3 = 1;
    public static final byte VMPTRLD = 2;
    public static final byte VMLAUNCH = 3;
    public static final byte VMRESUME = 4;
    public static final byte VMCALL = 5;
    public static final byte SYSCALL = 6;
    public static final byte SYSENTER = 7;
    public static final byte SYSRET = 8;
    public static final byte SYSEXIT = 9;
    public static final byte IRET = 10;
    public static final byte INT = 11;
    public static final byte INT3 = 12;
    public static final byte INTO = 13;
    public static final byte INT1 = 14;
    public static final byte UIRET = 15;
    public static final byte ERETS = 16;
    public static final byte ERETU = 17;
    public static final byte RET_FAR = 18;
    public static final byte CALL_FAR = 19;
    public static final byte JMP_FAR = 20;
}

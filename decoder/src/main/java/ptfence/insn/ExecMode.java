package ptfence.insn;

/** Execution modes as MODE.Exec reports them (values as libipt's pt_exec_mode). */
public final class ExecMode {
    private ExecMode() {}

    public static final int UNKNOWN = 0;
    public static final int BITS16 = 1;
    public static final int BITS32 = 2;
    public static final int BITS64 = 3;

    public static String name(int mode) {
        return switch (mode) {
            case BITS16 -> "16-bit";
            case BITS32 -> "32-bit";
            case BITS64 -> "64-bit";
            default -> "unknown";
        };
    }
}

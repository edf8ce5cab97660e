package ptfence.flow;

/**
 * Decode error codes (negative ints on the hot path, no exceptions) with the same meanings and
 * messages as libipt's, so error lines read like ptxed's.
 */
public final class PtError {
    private PtError() {}

    public static final int INTERNAL = -1;
    public static final int NOSYNC = -3;
    public static final int BAD_OPC = -4;
    public static final int BAD_PACKET = -5;
    public static final int BAD_CONTEXT = -6;
    public static final int EOS = -7;
    public static final int BAD_QUERY = -8;
    public static final int BAD_CONFIG = -10;
    public static final int NOIP = -11;
    public static final int IP_SUPPRESSED = -12;
    public static final int NOMAP = -13;
    public static final int BAD_INSN = -14;
    public static final int NO_TIME = -15;
    public static final int RETSTACK_EMPTY = -20;
    public static final int BAD_RETCOMP = -21;
    public static final int BAD_STATUS_UPDATE = -22;
    public static final int NO_ENABLE = -23;
    public static final int EVENT_IGNORED = -24;
    public static final int OVERFLOW = -25;
    public static final int BAD_CPU = -27;

    public static String message(int code) {
        return switch (code) {
            case 0 -> "OK";
            case INTERNAL -> "internal error";
            case NOSYNC -> "decoder out of sync";
            case BAD_OPC -> "unknown opcode";
            case BAD_PACKET -> "unknown packet";
            case BAD_CONTEXT -> "unexpected packet context";
            case EOS -> "reached end of trace stream";
            case BAD_QUERY -> "trace stream does not match query";
            case BAD_CONFIG -> "bad configuration";
            case NOIP -> "no ip";
            case IP_SUPPRESSED -> "ip has been suppressed";
            case NOMAP -> "no memory mapped at this address";
            case BAD_INSN -> "unknown instruction";
            case NO_TIME -> "no timing information";
            case RETSTACK_EMPTY -> "compressed return without call";
            case BAD_RETCOMP -> "bad compressed return";
            case BAD_STATUS_UPDATE -> "bad status update";
            case NO_ENABLE -> "expected tracing enabled event";
            case EVENT_IGNORED -> "event ignored";
            case OVERFLOW -> "overflow";
            case BAD_CPU -> "unknown cpu";
            default -> "error " + code;
        };
    }
}

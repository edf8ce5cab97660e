package ptfence.calls;

/**
 * What a branch was, as bits with the values of perf's {@code PERF_IP_FLAG_*}, so the names and the call-stack rules
 * read as perf script's {@code flags} field and thread stack do.
 */
public final class BranchFlags {
    private BranchFlags() {
    }

    public static final int BRANCH = 1;
    public static final int CALL = 1 << 1;
    public static final int RETURN = 1 << 2;
    public static final int CONDITIONAL = 1 << 3;
    public static final int SYSCALLRET = 1 << 4;
    public static final int ASYNC = 1 << 5;
    public static final int INTERRUPT = 1 << 6;
    public static final int TX_ABORT = 1 << 7;
    public static final int TRACE_BEGIN = 1 << 8;
    public static final int TRACE_END = 1 << 9;
    public static final int IN_TX = 1 << 10;
    public static final int VMENTRY = 1 << 11;
    public static final int VMEXIT = 1 << 12;

    private static final int TRACE = TRACE_BEGIN | TRACE_END;

    /** perf's name of a flag combination without the trace begin/end bits ("hw int", "jcc"), or null. */
    private static String base(int flags) {
        return switch (flags & ~IN_TX) {
            case BRANCH | CALL -> "call";
            case BRANCH | RETURN -> "return";
            case BRANCH | CONDITIONAL -> "jcc";
            case BRANCH -> "jmp";
            case BRANCH | CALL | INTERRUPT -> "int";
            case BRANCH | RETURN | INTERRUPT -> "iret";
            case BRANCH | CALL | SYSCALLRET -> "syscall";
            case BRANCH | RETURN | SYSCALLRET -> "sysret";
            case BRANCH | ASYNC -> "async";
            case BRANCH | CALL | ASYNC | INTERRUPT -> "hw int";
            case BRANCH | TX_ABORT -> "tx abrt";
            case BRANCH | TRACE_BEGIN -> "tr strt";
            case BRANCH | TRACE_END -> "tr end";
            case BRANCH | CALL | VMENTRY -> "vmentry";
            case BRANCH | CALL | VMEXIT -> "vmexit";
            default -> null;
        };
    }

    /**
     * The flags as perf 6.1's {@code perf_sample__sprintf_flags} writes them: the name padded to 15 and "(x)" inside a
     * transaction right-aligned in 6 ("call", "tr end  async", "tr strt jmp"); a combination without a name as one
     * letter per flag ({@code bcrosyiABExghDt}, "?" beyond).
     */
    public static String perfName(int flags) {
        String tx = (flags & IN_TX) != 0 ? "   (x)" : "      ";
        String n = base(flags);
        if (n != null) {
            return pad(n, 15) + tx;
        }
        if ((flags & TRACE_BEGIN) != 0 && (n = base(flags & ~TRACE_BEGIN)) != null) {
            return "tr strt " + pad(n, 7) + tx;
        }
        if ((flags & TRACE_END) != 0 && (n = base(flags & ~TRACE_END)) != null) {
            return "tr end  " + pad(n, 7) + tx;
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 32; i++) {
            if ((flags >>> i & 1) != 0) {
                sb.append(i < CHARS.length() ? CHARS.charAt(i) : '?');
            }
        }
        return sb.toString();
    }

    /** perf's PERF_IP_FLAG_CHARS: one letter per flag bit, in bit order. */
    private static final String CHARS = "bcrosyiABExghDt";

    /**
     * One word for the kind of transfer, the {@code class} of recording JSON Lines: call, return, jcc, jmp, int,
     * iret, syscall, sysret, interrupt (asynchronous), async, tx_abort, vmentry, vmexit, or none (only a trace
     * begin/end).
     */
    public static String className(int flags) {
        String n = base(flags & ~IN_TX); // "tr strt" / "tr end" alone: a start or end of tracing, no transfer
        if (n == null) {
            n = base(flags & ~(IN_TX | TRACE));
        }
        return n == null ? "none" : switch (n) {
            case "hw int" -> "interrupt";
            case "tx abrt" -> "tx_abort";
            case "tr strt", "tr end" -> "none";
            default -> n;
        };
    }

    private static String pad(String s, int w) {
        return s.length() >= w ? s : s + " ".repeat(w - s.length());
    }
}

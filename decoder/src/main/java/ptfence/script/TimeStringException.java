package ptfence.script;

import ptfence.cli.BadInputException;

/**
 * A --time string perf script refuses: perf's cmd_script returns -EINVAL for it, so perf exits 234 (the status's low
 * byte), not its usual 255; the perf entry gives that status for this failure.
 */
public final class TimeStringException extends BadInputException {
    private static final long serialVersionUID = 1L;

    /** perf's exit status for it: -EINVAL & 0xff. */
    public static final int PERF_STATUS = 234;

    public TimeStringException(String message) {
        super(message);
    }
}

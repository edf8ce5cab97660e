package ptfence.cli;

/**
 * A write to the command's output failed (a full disk, a closed descriptor, an -o file that cannot grow): thrown
 * through the printers at the first failed write, as {@link ReaderGone} is, so a decode stops there instead of
 * running on for minutes into an output that takes nothing. Its message is the one line the user gets, with
 * {@link Tool#EXIT_BAD_INPUT}. Not a {@link BadInputException}: code that reads past damaged input catches those and
 * goes on, and must not go on past this.
 */
public final class OutputFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    OutputFailed(String message, Throwable cause) {
        super(message, cause);
    }

    /** The OutputFailed in {@code t}'s causes (a worker's failure arrives wrapped), or null. */
    static OutputFailed in(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof OutputFailed f) {
                return f;
            }
        }
        return null;
    }
}

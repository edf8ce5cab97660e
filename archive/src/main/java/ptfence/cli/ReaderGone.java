package ptfence.cli;

/**
 * Standard output's reader went away ({@code ptdecode ... | head}): the command stops at once and exits 0 without
 * a word, as perf and ptxed do. Thrown through the printers (a PrintWriter passes unchecked exceptions on) so every
 * decode loop unwinds from wherever it was writing.
 */
public final class ReaderGone extends RuntimeException {
    public ReaderGone() {
        super("the reader of standard output went away", null, false, false);
    }

    /** True if {@code t} or one of its causes is a ReaderGone (a worker's failure arrives wrapped). */
    public static boolean in(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof ReaderGone) {
                return true;
            }
        }
        return false;
    }
}

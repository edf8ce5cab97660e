package ptfence.cli;

/**
 * A command that takes its commonest command lines without picocli ({@link Tool#main}): the lines clients run in
 * loops over many recordings ({@code ptdecode x.perf}, perf script's {@code --itrace=... -F ...}). picocli's first
 * model in a process reads every option's annotation through generated proxy classes and method handles, a third of
 * such a run's time (docs/install.md, start-up); a line outside the few forms a command takes here goes to picocli,
 * which stays the one parser of every other line, of help and of errors.
 */
public interface QuickLine {
    /**
     * If {@code args} is a line this command takes quickly, sets exactly the fields picocli would set for it (its
     * defaults included) and returns true; else changes nothing and returns false. A test per command holds the two
     * parsers to the same result.
     */
    boolean takeQuickly(String... args);

    /** What runs a line {@link #takeQuickly} took: the command itself, or the subcommand the line names. */
    default java.util.concurrent.Callable<?> taken() {
        return (java.util.concurrent.Callable<?>) this;
    }
}

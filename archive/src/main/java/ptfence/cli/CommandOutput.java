package ptfence.cli;

import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collection;

/**
 * Where a command's text goes: standard output ({@link Stdout}: a closed pipe ends the command quietly), or with
 * {@code -o FILE} an {@link OutputFile} that replaces FILE only when the command succeeds. The first write error (a
 * full disk) ends the command there ({@link OutputFailed}) instead of leaving a short file behind.
 */
public final class CommandOutput implements Closeable {
    private final OutputFile file;
    private final PrintWriter writer;
    /** The first write error, which the PrintWriter swallows: its reason goes into the one-line message. */
    private volatile IOException failure;

    /** The bytes' way out (perf script's lines are written as bytes), its errors remembered as the writer's. */
    private final OutputStream stream;

    private CommandOutput(OutputFile file, OutputStream stream) {
        this.file = file;
        OutputStream remembering = new MappedErrors(stream, this::remember);
        this.stream = remembering;
        this.writer = new PrintWriter(new OutputStreamWriter(remembering, StandardCharsets.UTF_8), false);
    }

    /** The first write error is remembered and ends the command at once ({@link OutputFailed}). */
    private IOException remember(IOException e) {
        if (failure == null) {
            failure = e;
        }
        throw new OutputFailed(failureLine(), e);
    }

    /** The one line a failed write comes to: what failed, where, and that an -o file was left as it was. */
    private String failureLine() {
        IOException e = failure;
        if (file == null) {
            return e != null && e.getMessage() != null && e.getMessage().startsWith("standard output")
                    ? e.getMessage()
                    : "standard output: writing failed" + (e == null ? "" : " (" + e.getMessage() + ")");
        }
        return e instanceof java.nio.file.FileSystemException f
                ? f.getFile() + ": " + f.getReason()
                : file.target() + ": writing failed" + (e == null ? "" : " (" + e.getMessage() + ")")
                        + "; the file was left as it was";
    }

    /**
     * {@code target} (checked against every one of {@code inputs} by inode before anything is opened for writing),
     * or {@code stdout} when target is null.
     */
    public static CommandOutput open(Path target, OutputStream stdout, Collection<Path> inputs) throws IOException {
        if (target == null) {
            return new CommandOutput(null, new java.io.BufferedOutputStream(Stdout.of(stdout), 1 << 16));
        }
        OutputFile f = OutputFile.create(target, inputs);
        return new CommandOutput(f, f.stream());
    }

    public PrintWriter writer() {
        return writer;
    }

    /**
     * The same destination for bytes (lines built as bytes need no encoder); what the writer holds is flushed first.
     * A write error here is thrown, not swallowed.
     */
    public OutputStream stream() {
        writer.flush();
        return stream;
    }

    /** Flushes; with -o, puts the file in place (after which close leaves it). */
    public void commit() throws IOException {
        writer.flush();
        if (writer.checkError()) { // a failure the PrintWriter swallowed before this writer's stream saw it
            throw new BadInputException(failureLine());
        }
        if (file != null) {
            file.commit();
        }
    }

    /**
     * The end of a command with exit status {@code status}: only a success puts an {@code -o} file in place; any
     * other status (a {@code --strict} decode with errors included) leaves an existing file as it was, as a failure
     * does. Returns {@code status}.
     */
    public int finish(int status) throws IOException {
        if (status == Tool.EXIT_OK) {
            commit();
        } else {
            writer.flush();
        }
        return status;
    }

    /** Without a commit: standard output is flushed as far as it got; an -o file is left as it was. */
    @Override
    public void close() {
        if (file == null) {
            try {
                writer.flush();
            } catch (ReaderGone | OutputFailed e) {
                // closing after a failure: the failure is what gets reported
            }
        } else {
            file.close();
        }
    }
}

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
 * {@code -o FILE} an {@link OutputFile} that replaces FILE only when the command succeeds. A write error the
 * PrintWriter swallowed (a full disk) fails the commit instead of leaving a short file behind.
 */
public final class CommandOutput implements Closeable {
    private final OutputFile file;
    private final PrintWriter writer;
    private final OutputStream stream;

    private CommandOutput(OutputFile file, OutputStream stream) {
        this.file = file;
        this.stream = stream;
        this.writer = new PrintWriter(new OutputStreamWriter(stream, StandardCharsets.UTF_8), false);
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
        if (file == null) {
            if (writer.checkError()) { // a redirect to a full disk, say: the PrintWriter swallowed the error
                throw new BadInputException("standard output: writing failed (disk full?)");
            }
            return;
        }
        if (writer.checkError()) {
            throw new BadInputException(file.target() + ": writing failed (disk full?); the file was left as it was");
        }
        file.commit();
    }

    /** Without a commit: standard output is flushed as far as it got; an -o file is left as it was. */
    @Override
    public void close() {
        if (file == null) {
            try {
                writer.flush();
            } catch (ReaderGone e) {
                // closing after a failure: the failure is what gets reported
            }
        } else {
            file.close();
        }
    }
}

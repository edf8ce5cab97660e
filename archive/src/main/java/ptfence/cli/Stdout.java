package ptfence.cli;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * The process's standard output for commands that print a lot: a write into a pipe whose reader has gone (EPIPE;
 * the JVM ignores SIGPIPE) throws {@link ReaderGone} instead of the IOException a PrintWriter or PrintStream would
 * swallow while the decode ran on for minutes. Other write errors (a full disk) stay IOExceptions.
 */
public final class Stdout extends OutputStream {
    private final OutputStream out;

    private Stdout(OutputStream out) {
        this.out = out;
    }

    public static OutputStream stream() {
        return new Stdout(new FileOutputStream(FileDescriptor.out));
    }

    /** {@code out} with the same translation (tests give a pipe of their own). */
    public static OutputStream of(OutputStream out) {
        return out instanceof Stdout ? out : new Stdout(out);
    }

    private static IOException translate(IOException e) {
        String m = e.getMessage();
        if (m != null && (m.contains("Broken pipe") || m.contains("Pipe closed") || m.contains("Stream closed"))) {
            throw new ReaderGone();
        }
        return e;
    }

    @Override
    public void write(int b) throws IOException {
        try {
            out.write(b);
        } catch (IOException e) {
            throw translate(e);
        }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        try {
            out.write(b, off, len);
        } catch (IOException e) {
            throw translate(e);
        }
    }

    @Override
    public void flush() throws IOException {
        try {
            out.flush();
        } catch (IOException e) {
            throw translate(e);
        }
    }

    @Override
    public void close() throws IOException {
        out.close();
    }
}

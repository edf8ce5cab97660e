package ptfence.cli;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.function.UnaryOperator;

/**
 * An output stream whose write and flush errors pass through one function: {@link OutputFile} names the file the
 * user gave in them, {@link CommandOutput} remembers the first and stops the command (a PrintWriter would swallow it).
 */
final class MappedErrors extends FilterOutputStream {
    private final UnaryOperator<IOException> map;

    MappedErrors(OutputStream out, UnaryOperator<IOException> map) {
        super(out);
        this.map = map;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        try {
            out.write(b, off, len);
        } catch (IOException e) {
            throw map.apply(e);
        }
    }

    @Override
    public void write(int b) throws IOException {
        try {
            out.write(b);
        } catch (IOException e) {
            throw map.apply(e);
        }
    }

    @Override
    public void flush() throws IOException {
        try {
            out.flush();
        } catch (IOException e) {
            throw map.apply(e);
        }
    }
}

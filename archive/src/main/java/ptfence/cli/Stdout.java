package ptfence.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Standard output for commands that print a lot: when its reader has gone (EPIPE into a pipe; the JVM ignores
 * SIGPIPE) a write throws {@link ReaderGone} instead of the error a PrintStream or PrintWriter would swallow while
 * the decode ran on for minutes. Other write errors (a full disk) become IOExceptions that say so.
 */
public final class Stdout extends OutputStream {
    private final OutputStream out;

    private Stdout(OutputStream out) {
        this.out = out;
    }

    /** {@code System.out} as it is now (a test may have redirected it). */
    public static OutputStream stream() {
        return new Stdout(System.out);
    }

    /** {@code out} with the same translation (tests give a stream of their own). */
    public static OutputStream of(OutputStream out) {
        return out instanceof Stdout ? out : new Stdout(out);
    }

    /** A PrintStream only flags its errors: ask after each chunk (printers write in chunks of kilobytes). */
    private void check() throws IOException {
        if (out instanceof PrintStream ps && ps.checkError()) {
            String fd1 = ps == System.out ? fd1() : "?";
            if (fd1.startsWith("pipe:")) {
                throw new ReaderGone();
            }
            if (fd1.isEmpty()) {
                throw new IOException("standard output is closed");
            }
            throw new IOException("standard output: write failed" + (fd1.equals("?") ? "" : " (" + fd1 + ")"));
        }
    }

    /**
     * What descriptor 1 is ("pipe:[..]", a path), "" if it is closed — or was closed when the JVM started and
     * then reused for a file the JVM opened for reading — and "?" if that cannot be told.
     */
    private static String fd1() {
        try {
            String target = Files.readSymbolicLink(Path.of("/proc/self/fd/1")).toString();
            for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo/1"))) {
                if (line.startsWith("flags:") && (Integer.parseInt(line.substring(6).trim(), 8) & 3) == 0) {
                    return ""; // O_RDONLY: not the standard output the command was given
                }
            }
            return target;
        } catch (java.nio.file.NoSuchFileException e) {
            return Files.isDirectory(Path.of("/proc/self/fd")) ? "" : "?";
        } catch (IOException | UnsupportedOperationException | SecurityException | NumberFormatException e) {
            return "?";
        }
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
        check();
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        try {
            out.write(b, off, len);
        } catch (IOException e) {
            throw translate(e);
        }
        check();
    }

    @Override
    public void flush() throws IOException {
        try {
            out.flush();
        } catch (IOException e) {
            throw translate(e);
        }
        check();
    }

    @Override
    public void close() throws IOException {
        out.flush();
    }
}

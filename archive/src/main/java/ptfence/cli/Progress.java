package ptfence.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Progress of a long job on stderr: a line rewritten in place twice a second while stderr is a terminal, a line a
 * second otherwise (when asked for with {@code --progress}), and a last line when the job is done. Off by default
 * unless stderr is a terminal, so scripts and pipes see only the command's own output.
 */
public final class Progress implements AutoCloseable {
    /** Reports nothing. */
    public static final Progress NONE = new Progress(null, "", false);

    private final PrintWriter err;
    private final String label;
    private final boolean terminal;
    private final AtomicLong count = new AtomicLong();
    private volatile long total;
    private volatile String phase = "";
    private volatile java.util.function.LongSupplier source;
    private volatile boolean finished;
    private Thread ticker;
    private boolean shown;

    private Progress(PrintWriter err, String label, boolean terminal) {
        this.err = err;
        this.label = label;
        this.terminal = terminal;
    }

    /** Whether file descriptor 2 is a terminal (what "when stderr is a terminal" means; System.console() asks stdout). */
    public static boolean stderrIsTerminal() {
        try {
            String target = Files.readSymbolicLink(Path.of("/proc/self/fd/2")).toString();
            return target.startsWith("/dev/pts/") || target.startsWith("/dev/tty") || target.equals("/dev/console");
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return false;
        }
    }

    /** The --progress choice: the flag when given, else whether stderr is a terminal. */
    public static boolean wanted(Boolean flag) {
        return flag != null ? flag : stderrIsTerminal();
    }

    /** Starts reporting under this label when enabled; else {@link #NONE}. */
    public static Progress start(PrintWriter err, String label, boolean enabled) {
        if (!enabled || err == null) {
            return NONE;
        }
        Progress p = new Progress(err, label, stderrIsTerminal());
        p.ticker = new Thread(p::tick, label + "-progress");
        p.ticker.setDaemon(true);
        p.ticker.start();
        return p;
    }

    /** A new phase of the job, of this many steps (0 when unknown). */
    public void phase(String what, long steps) {
        phase = what;
        total = steps;
        count.set(0);
    }

    /** Steps done are read from {@code steps} (a decoder's position in its trace) rather than counted. */
    public void follow(java.util.function.LongSupplier steps) {
        source = steps;
    }

    /** Steps done. */
    public void add(long steps) {
        count.addAndGet(steps);
    }

    /** The job completed: the last line shows the final count. */
    public void done() {
        finished = true;
    }

    @Override
    public void close() {
        if (err == null) {
            return;
        }
        ticker.interrupt();
        try {
            ticker.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (err) {
            if (finished) {
                err.print((terminal ? "\r\033[K" : "") + line() + "\n");
            } else if (terminal && shown) {
                err.print("\r\033[K");
            }
            err.flush();
        }
    }

    private void tick() {
        long period = terminal ? 500 : 1000;
        while (true) {
            try {
                Thread.sleep(period);
            } catch (InterruptedException e) {
                return;
            }
            synchronized (err) {
                err.print(terminal ? "\r\033[K" + line() : line() + "\n");
                err.flush();
                shown = true;
            }
        }
    }

    private String line() {
        java.util.function.LongSupplier s = source;
        long n = s != null ? s.getAsLong() : count.get();
        long t = total;
        String of = t > 0 ? String.format(java.util.Locale.ROOT, "%d/%d (%.0f%%)", n, t, 100.0 * n / t) : Long.toString(n);
        return label + ": " + phase + " " + of;
    }
}

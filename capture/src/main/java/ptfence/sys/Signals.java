package ptfence.sys;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import sun.misc.Signal;

/**
 * Signal handlers that take effect even when the signal was ignored at exec. A non-interactive shell starts
 * background jobs with SIGINT ignored, and HotSpot then refuses to install a handler for it (it keeps an inherited
 * SIG_IGN of INT, TERM and HUP), so {@code ptrec ... & kill -INT $!} would never stop. perf record installs its
 * handlers regardless; so does this.
 */
public final class Signals {
    private static final long SIG_DFL = 0;

    private Signals() {}

    /** Runs {@code handler} on the JVM's signal thread whenever signal {@code name} ("INT", "TERM", ...) arrives. */
    public static void handle(String name, Runnable handler) {
        Signal sig = new Signal(name);
        // Back to the default first, only if ignored: the JVM checks for SIG_IGN when asked to install a handler.
        if (ignored(sig.getNumber())) Native.check(Native.LIBC.signal(sig.getNumber(), SIG_DFL), "signal(SIG" + name + ")");
        Signal.handle(sig, s -> handler.run());
    }

    /** Whether the process ignores signal {@code number} (the kernel's SigIgn mask). */
    public static boolean ignored(int number) {
        return (mask("SigIgn") & (1L << (number - 1))) != 0;
    }

    /** A signal mask line of /proc/self/status (SigIgn, SigCgt, SigBlk), as a bit mask. */
    private static long mask(String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith(field + ":")) return Long.parseUnsignedLong(line.substring(field.length() + 1).trim(), 16);
            }
        } catch (IOException | NumberFormatException e) {
            // no /proc: nothing to repair, as far as we can tell
        }
        return 0;
    }
}

package ptfence.sys;

import java.io.IOException;

/** A failed bpf() call: names the command, what it was about, and the errno (plus the verifier log for loads). */
public final class BpfException extends IOException {
    private final int errno;
    private final String verifierLog;

    public BpfException(String call, int errno, String verifierLog) {
        super(call + ": " + Errno.name(errno) + " (" + Errno.describe(errno) + ")"
                + (verifierLog == null || verifierLog.isBlank() ? "" : "\nverifier log:\n" + tail(verifierLog)));
        this.errno = errno;
        this.verifierLog = verifierLog == null ? "" : verifierLog;
    }

    public int errno() { return errno; }

    /** The verifier's log for a failed BPF_PROG_LOAD; empty otherwise. */
    public String verifierLog() { return verifierLog; }

    /** The verifier's last lines say why; the head of a long log is noise. */
    private static String tail(String log) {
        String[] lines = log.strip().split("\n");
        int from = Math.max(0, lines.length - 25);
        return String.join("\n", java.util.Arrays.copyOfRange(lines, from, lines.length));
    }
}

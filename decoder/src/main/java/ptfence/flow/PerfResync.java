package ptfence.flow;

/**
 * Where perf's Intel PT decoder shows a trace begin after it lost the flow (an error, an overflow): it scans for the
 * next IP and returns a trace begin there, before the instruction at that IP, or before the walk failure there if the
 * code at that IP is missing; when its scan found the IP (the flow's {@code noCode} report) the begin is already
 * returned. No trace begin of its own follows a trace enable (which is one), an asynchronous branch (its target is
 * where the flow goes on) or a PSB its scan returned (it walks on from the PSB+'s FUP). The rule for the sample
 * views' and the call views' sinks alike.
 */
public final class PerfResync {
    private boolean resuming;

    /** The flow was lost (an error or overflow): a trace begin comes where it resumes. */
    public void lost() {
        resuming = true;
    }

    /** perf is in step again with no trace begin to show for the loss: an enable, an interrupt, a scanned PSB. */
    public void inStep() {
        resuming = false;
    }

    /** Whether a trace begin is still to come (the flow lost and not yet resumed). */
    public boolean resuming() {
        return resuming;
    }

    /** The flow resumes at an instruction (or found the IP and no code there): true, once, to show the trace begin. */
    public boolean beginHere() {
        boolean b = resuming;
        resuming = false;
        return b;
    }

    /** An error of {@code code}: true if perf shows the trace begin at the error's IP first (no code where it resumed). */
    public boolean beginBeforeError(int code) {
        return resuming && code == PtError.NOMAP;
    }
}

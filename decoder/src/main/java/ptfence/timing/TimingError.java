package ptfence.timing;

/** Why a timing update failed; texts are libipt's error strings so ptdump diagnostics match. */
public enum TimingError {
    BAD_PACKET("unknown packet"),
    BAD_CONTEXT("unexpected packet context"),
    INTERNAL("internal error"),
    BAD_CONFIG("bad configuration"),
    NO_TIME("no timing information");

    private final String text;

    TimingError(String text) {
        this.text = text;
    }

    public String text() {
        return text;
    }
}

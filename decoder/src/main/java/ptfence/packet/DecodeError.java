package ptfence.packet;

/** Why a packet could not be decoded; the texts are libipt's, so ptdump-style diagnostics match. */
public enum DecodeError {
    /** The opcode (or extended opcode) is not an Intel PT packet. */
    BAD_OPCODE("unknown opcode"),
    /** A known opcode whose payload is malformed (reserved bits, bad IP compression, short PSB, ...). */
    BAD_PACKET("unknown packet"),
    /** The packet runs past the end of the trace: the trace is truncated. */
    TRUNCATED("reached end of trace stream"),
    /** No PSB was found to synchronize on. */
    NO_SYNC("decoder out of sync");

    private final String text;

    DecodeError(String text) {
        this.text = text;
    }

    /** libipt's error string for this error (what ptdump prints after the colon). */
    public String text() {
        return text;
    }
}

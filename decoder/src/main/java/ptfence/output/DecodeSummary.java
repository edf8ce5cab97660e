package ptfence.output;

import ptfence.packet.DecodeError;

/** Counts packets and decode errors of one dump, so the command can report damage and set its exit code. */
public final class DecodeSummary {
    long packets;
    private int errors;
    private DecodeError firstError;
    private long firstErrorOffset = -1;
    private boolean truncated;
    private long truncatedAt = -1;

    void record(DecodeError e, long offset) {
        if (e == DecodeError.TRUNCATED) {
            truncated = true;
            truncatedAt = offset;
        }
        if (errors++ == 0) {
            firstError = e;
            firstErrorOffset = offset;
        }
    }

    /** Packets decoded (printed or not). */
    public long packets() {
        return packets;
    }

    /** Decode errors, including a truncated last packet. */
    public int errors() {
        return errors;
    }

    public boolean clean() {
        return errors == 0;
    }

    /** One line describing the damage, or null if the trace decoded cleanly. */
    public String describe(String traceName) {
        if (errors == 0) {
            return null;
        }
        StringBuilder s = new StringBuilder(traceName).append(": ");
        if (truncated && errors == 1) {
            s.append("trace truncated: packet at offset 0x").append(Long.toHexString(truncatedAt))
                    .append(" runs past the end");
            return s.toString();
        }
        s.append(errors).append(errors == 1 ? " decode error" : " decode errors").append(", first at offset 0x")
                .append(Long.toHexString(firstErrorOffset)).append(": ").append(firstError.text());
        if (truncated) {
            s.append("; last packet at 0x").append(Long.toHexString(truncatedAt)).append(" truncated");
        }
        return s.toString();
    }
}

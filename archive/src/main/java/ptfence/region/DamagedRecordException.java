package ptfence.region;

import ptfence.cli.BadInputException;

/**
 * A stored record whose checksum does not match its bytes: its metadata (source text, line info, ...) was altered
 * after it was written, so no reader may show it. Verify counts it as damage (exit 1); a decode stops on it in one
 * line.
 */
public final class DamagedRecordException extends BadInputException {
    private static final long serialVersionUID = 1L;

    public DamagedRecordException(String message) {
        super(message);
    }
}

package ptfence.store;

import ptfence.cli.BadInputException;

/**
 * The disk under the archive is full (or the quota is reached). The write transaction that hit it was
 * aborted, so everything committed before is intact; free space and retry.
 */
public final class ArchiveFullException extends BadInputException {
    private static final long serialVersionUID = 1L;

    public ArchiveFullException(String message, Throwable cause) {
        super(message, cause);
    }
}

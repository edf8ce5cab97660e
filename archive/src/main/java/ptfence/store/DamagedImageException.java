package ptfence.store;

import ptfence.cli.BadInputException;

/**
 * The bytes stored under a key do not hash to that key (or the image is missing although a region
 * names it). The decoder must never be handed such bytes, so reads throw this instead.
 */
public final class DamagedImageException extends BadInputException {
    private static final long serialVersionUID = 1L;
    private final transient ContentKey key;

    public DamagedImageException(ContentKey key, String message) {
        super(message);
        this.key = key;
    }

    /** The key whose image is damaged or missing. */
    public ContentKey key() {
        return key;
    }
}

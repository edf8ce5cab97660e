package ptfence.cli;

/**
 * Input the user can fix: a corrupt trace, a truncated file, a missing image, a damaged archive.
 * The message is the whole story in one line and says where (file, offset, address); the tools print
 * it without a stack trace and exit with {@link Tool#EXIT_BAD_INPUT}.
 */
public class BadInputException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public BadInputException(String message) {
        super(message);
    }

    public BadInputException(String message, Throwable cause) {
        super(message, cause);
    }
}

package ptfence.perfdata;

import ptfence.cli.BadInputException;

/**
 * A structure inside a perf.data is damaged. Thrown by the structure parsers, which do not know where they sit;
 * {@link PerfDataFile} re-throws it as a {@link BadInputException} naming the file and the offset.
 */
public final class BadPerfData extends BadInputException {
    private static final long serialVersionUID = 1L;

    public BadPerfData(String message) {
        super(message);
    }
}

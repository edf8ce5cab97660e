package ptfence.image;

import java.nio.file.Path;
import ptfence.cli.BadInputException;

/** ptxed's {@code FILE[:from[-to]]} (used by --pt and --raw); {@code to} is -1 for "to the end". */
public record FileRange(Path file, long from, long to) {

    public static FileRange parse(String spec, String option) {
        int colon = spec.lastIndexOf(':');
        if (colon <= 0 || !looksNumeric(spec.substring(colon + 1))) {
            return new FileRange(Path.of(spec), 0, -1);
        }
        String range = spec.substring(colon + 1);
        Path file = Path.of(spec.substring(0, colon));
        int dash = range.indexOf('-');
        if (dash < 0) {
            return new FileRange(file, Numbers.parse(range, option + " " + spec), -1);
        }
        long from = dash == 0 ? 0 : Numbers.parse(range.substring(0, dash), option + " " + spec);
        long to = Numbers.parse(range.substring(dash + 1), option + " " + spec);
        if (to < from) {
            throw new BadInputException(option + " " + spec + ": range end before its start");
        }
        return new FileRange(file, from, to);
    }

    private static boolean looksNumeric(String s) {
        return !s.isEmpty() && s.matches("(0[xX][0-9a-fA-F]+|[0-9]+)?(-(0[xX][0-9a-fA-F]+|[0-9]+))?");
    }
}

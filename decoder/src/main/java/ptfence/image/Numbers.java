package ptfence.image;

import ptfence.cli.BadInputException;

/** Numbers as ptxed accepts them: 0x-prefixed hex or decimal, full 64-bit range. */
public final class Numbers {
    private Numbers() {}

    public static long parse(String s, String what) {
        try {
            String t = s.trim();
            if (t.startsWith("0x") || t.startsWith("0X")) {
                return Long.parseUnsignedLong(t.substring(2), 16);
            }
            return Long.parseUnsignedLong(t);
        } catch (NumberFormatException e) {
            throw new BadInputException(what + ": not a number: '" + s + "'");
        }
    }
}

package ptfence.output;

/**
 * Fixed-width columns for the text printers, appended by hand: a flow prints millions of lines, and
 * {@code String.format} per line made the text formats several times slower than JSON Lines.
 */
public final class Columns {
    private Columns() {
    }

    /** Sixteen hex digits, zero-filled ({@code %016x}). */
    public static StringBuilder hex16(StringBuilder sb, long v) {
        return right(sb, Long.toHexString(v), 16, '0');
    }

    /** {@code s}, then spaces up to {@code width} ({@code %-Ns}); a longer {@code s} is kept whole. */
    public static StringBuilder left(StringBuilder sb, String s, int width) {
        sb.append(s);
        for (int i = s.length(); i < width; i++) {
            sb.append(' ');
        }
        return sb;
    }

    /** {@code fill} up to {@code width}, then {@code s} ({@code %Ns} with spaces, {@code %0Nd} with zeros). */
    public static StringBuilder right(StringBuilder sb, String s, int width, char fill) {
        for (int i = s.length(); i < width; i++) {
            sb.append(fill);
        }
        return sb.append(s);
    }

    /** Nanoseconds as seconds with nine decimals ({@code %d.%09d}); for times at or after 0. */
    public static StringBuilder seconds(StringBuilder sb, long ns) {
        sb.append(ns / 1_000_000_000L).append('.');
        return right(sb, Long.toString(ns % 1_000_000_000L), 9, '0');
    }
}

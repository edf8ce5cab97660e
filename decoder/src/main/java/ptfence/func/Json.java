package ptfence.func;

/**
 * Builds one JSON object for the views' output (JSON Lines, the Perfetto trace): keys in insertion order,
 * addresses as "0x…" strings, strings escaped per RFC 8259. Small enough that a library would not pay for itself.
 */
final class Json {
    private final StringBuilder sb;
    private boolean first = true;

    Json() {
        this(new StringBuilder(64));
    }

    private Json(StringBuilder sb) {
        this.sb = sb;
        sb.append('{');
    }

    Json field(String name, String value) {
        key(name);
        if (value == null) sb.append("null");
        else string(sb, value);
        return this;
    }

    Json field(String name, long value) {
        key(name);
        sb.append(value);
        return this;
    }

    Json field(String name, double value) {
        key(name);
        sb.append(number(value));
        return this;
    }

    Json address(String name, long address) {
        return field(name, hex(address));
    }

    /** A field whose value is already JSON (an array or object). */
    Json raw(String name, String json) {
        key(name);
        sb.append(json);
        return this;
    }

    private void key(String name) {
        if (!first) sb.append(',');
        first = false;
        string(sb, name);
        sb.append(':');
    }

    @Override
    public String toString() {
        return sb + "}";
    }

    static String hex(long address) {
        return "0x" + Long.toHexString(address);
    }

    /** A finite double as JSON (no exponent for the magnitudes written here; NaN/infinite → 0). */
    static String number(double v) {
        if (!Double.isFinite(v)) return "0";
        if (v == Math.rint(v) && Math.abs(v) < 1e15) return Long.toString((long) v);
        return java.math.BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        sb.append('"');
    }
}

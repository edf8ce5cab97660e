package ptfence.cli;

/**
 * Builds one JSON object for the commands' one-object-per-line output: keys in insertion order, strings escaped per
 * RFC 8259, addresses as "0x…" strings (64-bit kernel addresses do not fit a JSON number exactly). Small enough
 * that a library would not pay for itself.
 */
public final class Json {
    private final StringBuilder sb = new StringBuilder("{");

    public Json field(String name, String value) {
        key(name);
        if (value == null) {
            sb.append("null");
        } else {
            string(value);
        }
        return this;
    }

    public Json field(String name, long value) {
        key(name);
        sb.append(value);
        return this;
    }

    public Json field(String name, boolean value) {
        key(name);
        sb.append(value);
        return this;
    }

    /** A finite number; integral values are written without a fraction. */
    public Json field(String name, double value) {
        key(name);
        sb.append(number(value));
        return this;
    }

    /** An address as a "0x…" string. */
    public Json address(String name, long address) {
        return field(name, hex(address));
    }

    /** A field whose value is already JSON (an array or object). */
    public Json raw(String name, String json) {
        key(name);
        sb.append(json);
        return this;
    }

    private void key(String name) {
        if (sb.length() > 1) {
            sb.append(',');
        }
        string(name);
        sb.append(':');
    }

    /** {@code s} as a JSON string literal, quotes included. */
    public static String quote(String s) {
        Json j = new Json();
        int from = j.sb.length();
        j.string(s);
        return j.sb.substring(from);
    }

    private void string(String s) {
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
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }

    @Override
    public String toString() {
        return sb + "}";
    }

    /** "0x" and the address in lowercase hex, unsigned. */
    public static String hex(long address) {
        return "0x" + Long.toHexString(address);
    }

    /** A double as JSON: integral values without fraction or exponent, NaN and infinities as 0. */
    public static String number(double v) {
        if (!Double.isFinite(v)) {
            return "0";
        }
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return Long.toString((long) v);
        }
        return java.math.BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
    }
}

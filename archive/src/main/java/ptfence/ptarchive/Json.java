package ptfence.ptarchive;

/** A minimal JSON object writer for the CLI's one-object-per-line output (no library needed for this). */
final class Json {
    private final StringBuilder sb = new StringBuilder("{");

    Json field(String name, String value) {
        key(name);
        if (value == null) {
            sb.append("null");
        } else {
            string(value);
        }
        return this;
    }

    Json field(String name, long value) {
        key(name);
        sb.append(value);
        return this;
    }

    Json field(String name, boolean value) {
        key(name);
        sb.append(value);
        return this;
    }

    /** A field whose value is already JSON (an array or object). */
    Json raw(String name, String json) {
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
}

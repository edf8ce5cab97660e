package ptfence.func;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict RFC 8259 reader for the tests: objects become LinkedHashMap, arrays List, numbers Double (or Long when
 * integral and written without fraction or exponent), strings String. Anything malformed throws, so a test that
 * reads the views' output also checks it is JSON.
 */
final class JsonReader {
    private final String s;
    private int p;

    private JsonReader(String s) {
        this.s = s;
    }

    static Object parse(String text) {
        JsonReader r = new JsonReader(text);
        r.ws();
        Object v = r.value();
        r.ws();
        if (r.p != text.length()) throw r.error("trailing characters");
        return v;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(String text) {
        return (Map<String, Object>) parse(text);
    }

    private Object value() {
        if (p >= s.length()) throw error("value expected");
        char c = s.charAt(p);
        return switch (c) {
            case '{' -> obj();
            case '[' -> arr();
            case '"' -> str();
            case 't' -> lit("true", Boolean.TRUE);
            case 'f' -> lit("false", Boolean.FALSE);
            case 'n' -> lit("null", null);
            default -> num();
        };
    }

    private Map<String, Object> obj() {
        Map<String, Object> m = new LinkedHashMap<>();
        p++;
        ws();
        if (peek() == '}') {
            p++;
            return m;
        }
        while (true) {
            ws();
            if (peek() != '"') throw error("key expected");
            String k = str();
            if (m.containsKey(k)) throw error("duplicate key " + k);
            ws();
            expect(':');
            ws();
            m.put(k, value());
            ws();
            if (peek() == ',') {
                p++;
            } else {
                expect('}');
                return m;
            }
        }
    }

    private List<Object> arr() {
        List<Object> l = new ArrayList<>();
        p++;
        ws();
        if (peek() == ']') {
            p++;
            return l;
        }
        while (true) {
            ws();
            l.add(value());
            ws();
            if (peek() == ',') {
                p++;
            } else {
                expect(']');
                return l;
            }
        }
    }

    private String str() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            if (p >= s.length()) throw error("unterminated string");
            char c = s.charAt(p++);
            if (c == '"') return b.toString();
            if (c < 0x20) throw error("control character in string");
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = s.charAt(p++);
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    b.append((char) Integer.parseInt(s.substring(p, p + 4), 16));
                    p += 4;
                }
                default -> throw error("bad escape \\" + e);
            }
        }
    }

    private Object num() {
        int start = p;
        if (peek() == '-') p++;
        if (peek() == '0') {
            p++;
        } else {
            if (!Character.isDigit(peek())) throw error("number expected");
            while (Character.isDigit(peek())) p++;
        }
        boolean integral = true;
        if (peek() == '.') {
            integral = false;
            p++;
            if (!Character.isDigit(peek())) throw error("digit expected after '.'");
            while (Character.isDigit(peek())) p++;
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            p++;
            if (peek() == '+' || peek() == '-') p++;
            if (!Character.isDigit(peek())) throw error("exponent digits expected");
            while (Character.isDigit(peek())) p++;
        }
        String t = s.substring(start, p);
        return integral ? (Object) Long.parseLong(t) : (Object) Double.parseDouble(t);
    }

    private Object lit(String word, Object v) {
        if (!s.startsWith(word, p)) throw error("bad literal");
        p += word.length();
        return v;
    }

    private char peek() {
        return p < s.length() ? s.charAt(p) : '\0';
    }

    private void expect(char c) {
        if (peek() != c) throw error("'" + c + "' expected");
        p++;
    }

    private void ws() {
        while (p < s.length() && " \t\r\n".indexOf(s.charAt(p)) >= 0) p++;
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("JSON: " + what + " at offset " + p + ": "
                + s.substring(Math.max(0, p - 20), Math.min(s.length(), p + 20)));
    }
}

package ptfence.calls;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;

/**
 * One output line being built, as UTF-8 bytes (the views' text is ASCII but for names), with perf's printf
 * conversions written out by hand: no String per field, and whole lines go out in large chunks. Widths count bytes,
 * as C's printf does. The bytes go straight to the command's output stream where there is one ({@link #bytesTo}),
 * else they are decoded once more for a Writer (tests, callers without a stream).
 */
final class LineBuffer {
    private final Writer out;
    /** The output's bytes, below {@link #out} (flushed before each write here), or null. */
    private OutputStream raw;
    private byte[] c = new byte[1 << 16];
    private int n;
    /** Where the current line started. */
    private int lineStart;

    LineBuffer(Writer out) {
        this.out = out;
    }

    /** Writes to {@code stream}, the bytes under the writer given at construction (skips an encoder per line). */
    void bytesTo(OutputStream stream) {
        this.raw = stream;
    }

    /** Bytes written on the current line so far. */
    int column() {
        return n - lineStart;
    }

    private void room(int more) {
        if (n + more > c.length) {
            c = java.util.Arrays.copyOf(c, Math.max(c.length * 2, n + more));
        }
    }

    LineBuffer ch(char x) {
        room(1);
        c[n++] = (byte) x;
        return this;
    }

    /** Text as UTF-8 (perf writes names as it read them). */
    LineBuffer str(String s) {
        int l = s.length();
        room(l);
        for (int i = 0; i < l; i++) {
            char x = s.charAt(i);
            if (x >= 0x80) {
                return utf8(s.substring(i)); // rare: the rest through the encoder
            }
            c[n++] = (byte) x;
        }
        return this;
    }

    LineBuffer chars(StringBuilder s) {
        int l = s.length();
        room(l);
        for (int i = 0; i < l; i++) {
            char x = s.charAt(i);
            if (x >= 0x80) {
                return utf8(s.substring(i));
            }
            c[n++] = (byte) x;
        }
        return this;
    }

    private LineBuffer utf8(String s) {
        return bytes(s.getBytes(StandardCharsets.UTF_8));
    }

    /** The length of {@code s} in UTF-8 (what printf's widths count). */
    static int byteLength(String s) {
        int l = s.length();
        for (int i = 0; i < l; i++) {
            if (s.charAt(i) >= 0x80) {
                return i + s.substring(i).getBytes(StandardCharsets.UTF_8).length;
            }
        }
        return l;
    }

    LineBuffer spaces(int k) {
        if (k > 0) {
            room(k);
            java.util.Arrays.fill(c, n, n + k, (byte) ' ');
            n += k;
        }
        return this;
    }

    LineBuffer bytes(byte[] s) {
        return bytes(s, 0, s.length);
    }

    LineBuffer bytes(byte[] s, int from, int len) {
        room(len);
        System.arraycopy(s, from, c, n, len);
        n += len;
        return this;
    }

    /** The bytes of the current line from {@code column} on. */
    byte[] lineFrom(int column) {
        return java.util.Arrays.copyOfRange(c, lineStart + column, n);
    }

    /** {@code %-Ns}: {@code s} then spaces to {@code width}. */
    LineBuffer left(String s, int width) {
        int at = n;
        str(s);
        return spaces(width - (n - at));
    }

    /** {@code %Ns}: spaces to {@code width}, then {@code s}. */
    LineBuffer right(String s, int width) {
        return spaces(width - byteLength(s)).str(s);
    }

    /** {@code %Nd} (width may be 0). */
    LineBuffer dec(long v, int width) {
        int len = decLength(v);
        spaces(width - len);
        room(len);
        int end = n + len;
        long x = v;
        boolean neg = x < 0;
        if (neg) {
            c[n] = '-';
        }
        int i = end;
        do {
            long q = x / 10;
            c[--i] = (byte) ('0' + Math.abs((int) (x - q * 10)));
            x = q;
        } while (x != 0);
        n = end;
        return this;
    }

    /** {@code %-Nd}. */
    LineBuffer decLeft(long v, int width) {
        int at = column();
        dec(v, 0);
        return spaces(width - (column() - at));
    }

    /** {@code %0Nd}. */
    LineBuffer decZero(long v, int width) {
        int len = decLength(v);
        for (int i = len; i < width; i++) {
            ch('0');
        }
        return dec(v, 0);
    }

    static int decLength(long v) {
        if (v == Long.MIN_VALUE) {
            return 20;
        }
        int len = v < 0 ? 2 : 1;
        for (long x = Math.abs(v); x >= 10; x /= 10) {
            len++;
        }
        return len;
    }

    /** {@code %Nlx}: lower-case hex, unsigned, right-aligned in {@code width} (0: as long as it is). */
    LineBuffer hex(long v, int width) {
        int len = v == 0 ? 1 : (67 - Long.numberOfLeadingZeros(v)) / 4;
        spaces(width - len);
        room(len);
        for (int i = len - 1; i >= 0; i--) {
            c[n + i] = HEX[(int) (v & 0xf)];
            v >>>= 4;
        }
        n += len;
        return this;
    }

    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    /** Ends the line; writes out when enough has gathered (always whole lines: no UTF-8 sequence is split). */
    void endLine() throws IOException {
        ch('\n');
        lineStart = n;
        if (n >= 1 << 15) {
            flush();
        }
    }

    void flush() throws IOException {
        if (raw != null) {
            out.flush(); // what the writer holds comes first
            raw.write(c, 0, n);
        } else {
            out.write(new String(c, 0, n, StandardCharsets.UTF_8));
        }
        n = 0;
        lineStart = 0;
    }
}

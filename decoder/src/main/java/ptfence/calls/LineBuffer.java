package ptfence.calls;

import java.io.IOException;
import java.io.Writer;

/**
 * One output line being built, as characters (the views' text is ASCII but for names), with perf's printf
 * conversions written out by hand: no String per field, and whole lines go to the writer in large chunks.
 */
final class LineBuffer {
    private final Writer out;
    private char[] c = new char[512];
    private int n;
    /** Where the current line started. */
    private int lineStart;

    LineBuffer(Writer out) {
        this.out = out;
    }

    /** Characters written on the current line so far. */
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
        c[n++] = x;
        return this;
    }

    LineBuffer str(String s) {
        int l = s.length();
        room(l);
        s.getChars(0, l, c, n);
        n += l;
        return this;
    }

    LineBuffer chars(StringBuilder s) {
        int l = s.length();
        room(l);
        s.getChars(0, l, c, n);
        n += l;
        return this;
    }

    LineBuffer spaces(int k) {
        if (k > 0) {
            room(k);
            if (k <= SPACES.length) {
                System.arraycopy(SPACES, 0, c, n, k);
            } else {
                java.util.Arrays.fill(c, n, n + k, ' ');
            }
            n += k;
        }
        return this;
    }

    private static final char[] SPACES = " ".repeat(256).toCharArray();

    LineBuffer chars(char[] s) {
        room(s.length);
        System.arraycopy(s, 0, c, n, s.length);
        n += s.length;
        return this;
    }

    /** The characters of the current line from {@code column} on. */
    char[] lineFrom(int column) {
        return java.util.Arrays.copyOfRange(c, lineStart + column, n);
    }

    /** {@code %-Ns}: {@code s} then spaces to {@code width}. */
    LineBuffer left(String s, int width) {
        return str(s).spaces(width - s.length());
    }

    /** {@code %Ns}: spaces to {@code width}, then {@code s}. */
    LineBuffer right(String s, int width) {
        return spaces(width - s.length()).str(s);
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
            c[--i] = (char) ('0' + Math.abs((int) (x - q * 10)));
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

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    /** Ends the line; writes out when enough has gathered. */
    void endLine() throws IOException {
        ch('\n');
        lineStart = n;
        if (n >= 1 << 15) {
            flush();
        }
    }

    void flush() throws IOException {
        out.write(c, 0, n);
        n = 0;
        lineStart = 0;
    }
}

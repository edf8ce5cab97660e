package ptfence.output;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;

/**
 * Buffered ASCII output for the packet printers: numbers are formatted straight into a byte buffer
 * (no String.format, no per-line allocation), flushed in large blocks.
 */
public final class TextSink implements AutoCloseable {
    private static final byte[] HEX = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private final OutputStream out;
    private final byte[] buf;
    private int len;

    public TextSink(OutputStream out) {
        this(out, 1 << 16);
    }

    public TextSink(OutputStream out, int capacity) {
        this.out = out;
        this.buf = new byte[capacity];
    }

    private void room(int n) {
        if (len + n > buf.length) {
            drain();
        }
    }

    private void drain() {
        try {
            out.write(buf, 0, len);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        len = 0;
    }

    public TextSink ch(char c) {
        room(1);
        buf[len++] = (byte) c;
        return this;
    }

    public TextSink spaces(int n) {
        room(n);
        for (int k = 0; k < n; k++) {
            buf[len++] = ' ';
        }
        return this;
    }

    /** ASCII text (characters above 0x7f are written as '?'). */
    public TextSink str(CharSequence s) {
        int n = s.length();
        if (n > buf.length / 2) {
            for (int k = 0; k < n; k++) {
                ch(s.charAt(k));
            }
            return this;
        }
        room(n);
        for (int k = 0; k < n; k++) {
            char c = s.charAt(k);
            buf[len++] = (byte) (c < 0x80 ? c : '?');
        }
        return this;
    }

    public TextSink bytes(byte[] b, int off, int n) {
        if (n > buf.length) {
            drain();
            try {
                out.write(b, off, n);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return this;
        }
        room(n);
        System.arraycopy(b, off, buf, len, n);
        len += n;
        return this;
    }

    public TextSink field(Field f) {
        return bytes(f.b, 0, f.len);
    }

    /** {@code v} as exactly 16 lower-case hex digits. */
    public TextSink hex16(long v) {
        room(16);
        for (int k = 15; k >= 0; k--) {
            buf[len + k] = HEX[(int) (v & 0xf)];
            v >>>= 4;
        }
        len += 16;
        return this;
    }

    /** {@code v} (unsigned) in lower-case hex without leading zeros. */
    public TextSink hex(long v) {
        int digits = v == 0 ? 1 : (67 - Long.numberOfLeadingZeros(v)) / 4;
        room(digits);
        for (int k = digits - 1; k >= 0; k--) {
            buf[len + k] = HEX[(int) (v & 0xf)];
            v >>>= 4;
        }
        len += digits;
        return this;
    }

    /** {@code v} (unsigned) in decimal. */
    public TextSink dec(long v) {
        if (v >= 0 && v < 10) {
            return ch((char) ('0' + v));
        }
        return str(Long.toUnsignedString(v));
    }

    public TextSink nl() {
        room(1);
        buf[len++] = '\n';
        return this;
    }

    public void flush() {
        drain();
        try {
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        flush();
    }

    /**
     * A fixed-capacity text field that silently truncates, like the C {@code snprintf} into a char array
     * that ptdump uses for its columns.
     */
    public static final class Field {
        final byte[] b;
        int len;
        private final int cap;

        /** A field holding at most {@code cap} characters. */
        public Field(int cap) {
            this.cap = cap;
            this.b = new byte[cap];
        }

        public Field clear() {
            len = 0;
            return this;
        }

        public int length() {
            return len;
        }

        public boolean isEmpty() {
            return len == 0;
        }

        public Field ch(char c) {
            if (len < cap) {
                b[len++] = (byte) c;
            }
            return this;
        }

        public Field str(String s) {
            for (int k = 0; k < s.length(); k++) {
                ch(s.charAt(k));
            }
            return this;
        }

        public Field hex(long v) {
            int digits = v == 0 ? 1 : (67 - Long.numberOfLeadingZeros(v)) / 4;
            return hexDigits(v, digits);
        }

        /** Zero-padded to at least {@code width} digits. */
        public Field hex(long v, int width) {
            int digits = v == 0 ? 1 : (67 - Long.numberOfLeadingZeros(v)) / 4;
            return hexDigits(v, Math.max(width, digits));
        }

        private Field hexDigits(long v, int digits) {
            for (int k = digits - 1; k >= 0; k--) {
                ch(k >= 16 ? '0' : (char) HEX[(int) ((v >>> (4 * k)) & 0xf)]);
            }
            return this;
        }

        public Field dec(long v) {
            return str(Long.toUnsignedString(v));
        }

        @Override
        public String toString() {
            return new String(b, 0, len, java.nio.charset.StandardCharsets.US_ASCII);
        }
    }
}

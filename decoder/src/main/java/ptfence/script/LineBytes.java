package ptfence.script;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A growable run of ASCII bytes that perf script's printf formats are written into by hand (%16lx, %10lu, %-5d,
 * %*s ...): lines are built as bytes, never as formatted strings, and handed on as ranges of one array.
 */
public final class LineBytes {
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    /** Eight bytes at once, first byte the most significant: eight hex digits are one store. */
    private static final long BLANKS = 0x2020202020202020L;
    private static final byte[] SPACES = new byte[64];

    static {
        Arrays.fill(SPACES, (byte) ' ');
    }

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    byte[] b;
    int len;
    private final byte[] digits = new byte[20];

    public LineBytes(int capacity) {
        b = new byte[Math.max(16, capacity)];
    }

    public int length() {
        return len;
    }

    public byte[] array() {
        return b;
    }

    public void clear() {
        len = 0;
    }

    void room(int n) {
        if (len + n > b.length) {
            b = Arrays.copyOf(b, Math.max(b.length * 2, len + n));
        }
    }

    public LineBytes ch(char c) {
        room(1);
        b[len++] = (byte) c;
        return this;
    }

    public LineBytes spaces(int n) {
        if (n <= 0) {
            return this;
        }
        room(n);
        if (n <= SPACES.length) {
            // a column's few blanks: a copy is cheaper than fill's loop set-up (a tenth of the instruction view)
            System.arraycopy(SPACES, 0, b, len, n);
        } else {
            Arrays.fill(b, len, len + n, (byte) ' ');
        }
        len += n;
        return this;
    }

    public LineBytes bytes(byte[] src) {
        return bytes(src, 0, src.length);
    }

    public LineBytes bytes(byte[] src, int off, int n) {
        room(n);
        System.arraycopy(src, off, b, len, n);
        len += n;
        return this;
    }

    /** Text as bytes (UTF-8: perf writes names as it reads them). */
    public LineBytes str(String s) {
        int n = s.length();
        room(n);
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x80) {
                // rare: the rest through the encoder
                return bytes(s.substring(i).getBytes(StandardCharsets.UTF_8));
            }
            b[len++] = (byte) c;
        }
        return this;
    }

    /** {@code %*s}: right-aligned in {@code width} bytes, as C's printf counts (a longer text is kept whole). */
    public LineBytes right(String s, int width) {
        spaces(width - utf8Length(s));
        return str(s);
    }

    /** {@code %-*s} (width in bytes). */
    public LineBytes left(String s, int width) {
        int at = len;
        str(s);
        return spaces(width - (len - at));
    }

    /** The length of {@code s} in UTF-8. */
    private static int utf8Length(String s) {
        int n = s.length();
        for (int i = 0; i < n; i++) {
            if (s.charAt(i) >= 0x80) {
                return i + s.substring(i).getBytes(StandardCharsets.UTF_8).length;
            }
        }
        return n;
    }

    /** {@code %*s} of bytes. */
    public LineBytes right(byte[] s, int width) {
        spaces(width - s.length);
        return bytes(s);
    }

    /** {@code %lx}. */
    public LineBytes hex(long v) {
        int n = hexDigits(v);
        room(16);
        // all sixteen digits, then the significant ones moved to the front (a branch line has several addresses: a
        // digit at a time was the line's top cost)
        putHex16(v);
        if (n < 16) {
            System.arraycopy(b, len + 16 - n, b, len, n);
        }
        len += n;
        return this;
    }

    /** {@code %*lx} (space-padded to {@code width}). */
    public LineBytes hex(long v, int width) {
        int n = hexDigits(v);
        if (width != 16) {
            spaces(width - n);
            return hex(v);
        }
        // perf's usual %16lx: sixteen digits written, the leading zeros' bytes turned to blanks
        room(16);
        long hi = hex8((int) (v >>> 32));
        long lo = hex8((int) v);
        int pad = 16 - n; // 0..15 leading zeros, which become blanks
        if (pad >= 8) {
            hi = BLANKS;
            long keep = -1L >>> (8 * (pad - 8));
            lo = lo & keep | BLANKS & ~keep;
        } else {
            long keep = -1L >>> (8 * pad);
            hi = hi & keep | BLANKS & ~keep;
        }
        LONGS.set(b, len, hi);
        LONGS.set(b, len + 8, lo);
        len += 16;
        return this;
    }

    private static int hexDigits(long v) {
        return v == 0 ? 1 : (67 - Long.numberOfLeadingZeros(v)) / 4;
    }

    /** {@code v}'s sixteen hex digits (leading zeros too) at {@code len}, which does not move. */
    private void putHex16(long v) {
        LONGS.set(b, len, hex8((int) (v >>> 32)));
        LONGS.set(b, len + 8, hex8((int) v));
    }

    /** Eight lower-case hex digits of {@code x}, first digit in the top byte (each nibble spread to a byte). */
    private static long hex8(int x) {
        long v = x & 0xffffffffL;
        v = (v & 0xffff0000L) << 16 | v & 0xffffL;
        v = (v & 0x0000ff000000ff00L) << 8 | v & 0x000000ff000000ffL;
        v = (v & 0x00f000f000f000f0L) << 4 | v & 0x000f000f000f000fL;
        // 1 in each byte whose nibble is 10 or more: those go to 'a'.. rather than '0'..
        long letters = (v + 0x0606060606060606L) >>> 4 & 0x0101010101010101L;
        return v + 0x3030303030303030L + letters * ('a' - '0' - 10);
    }

    /** {@code %0*lx}. */
    public LineBytes hexZero(long v, int width) {
        int n = v == 0 ? 1 : (67 - Long.numberOfLeadingZeros(v)) / 4;
        room(Math.max(0, width - n));
        for (int i = n; i < width; i++) {
            b[len++] = '0';
        }
        return hex(v);
    }

    /** {@code %#lx}: "0x" and the digits, or "0" for zero (C's alternate form). */
    public LineBytes hexAlt(long v) {
        if (v == 0) {
            return ch('0');
        }
        ch('0').ch('x');
        return hex(v);
    }

    private int unsignedDigits(long v) {
        int n = 0;
        if (v == 0) {
            digits[n++] = '0';
        }
        if (v < 0) {
            // above Long.MAX_VALUE: one unsigned division, then signed ones (cheaper)
            long q = Long.divideUnsigned(v, 10);
            digits[n++] = (byte) ('0' + (v - q * 10));
            v = q;
        }
        while (v != 0) {
            long q = v / 10;
            digits[n++] = (byte) ('0' + (v - q * 10));
            v = q;
        }
        return n;
    }

    /** {@code %lu}. */
    public LineBytes dec(long v) {
        if (v >= 0 && v < 10) {
            room(1);
            b[len++] = (byte) ('0' + v);
            return this;
        }
        int n = unsignedDigits(v);
        room(n);
        for (int i = n - 1; i >= 0; i--) {
            b[len++] = digits[i];
        }
        return this;
    }

    /** {@code %*lu}. */
    public LineBytes dec(long v, int width) {
        if (v >= 0 && v < 10) {
            // a sample's period is mostly 1: no digit loop
            spaces(width - 1);
            return dec(v);
        }
        int n = unsignedDigits(v);
        spaces(width - n);
        room(n);
        for (int i = n - 1; i >= 0; i--) {
            b[len++] = digits[i];
        }
        return this;
    }

    /** {@code %d} (signed). */
    public LineBytes sdec(long v) {
        if (v < 0) {
            ch('-');
            return dec(-v);
        }
        return dec(v);
    }

    /** {@code %*d} (signed, space-padded right-aligned). */
    public LineBytes sdec(long v, int width) {
        int n = unsignedDigits(v < 0 ? -v : v) + (v < 0 ? 1 : 0);
        spaces(width - n);
        return sdec(v);
    }

    /** {@code %-*d}. */
    public LineBytes sdecLeft(long v, int width) {
        int n = unsignedDigits(v < 0 ? -v : v) + (v < 0 ? 1 : 0);
        sdec(v);
        return spaces(width - n);
    }

    /** {@code %0*d} for a non-negative value; C's {@code %03d} of a negative number puts the sign first. */
    public LineBytes decZero(long v, int width) {
        if (v < 0) {
            ch('-');
            return decZero(-v, width - 1);
        }
        int n = unsignedDigits(v);
        for (int i = n; i < width; i++) {
            ch('0');
        }
        return dec(v);
    }

    public LineBytes nl() {
        return ch('\n');
    }

    @Override
    public String toString() {
        return new String(b, 0, len, StandardCharsets.UTF_8);
    }
}

package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** A growable little-endian byte builder for the writer's structures. */
final class Out {
    private byte[] buf;
    private int len;

    Out(int initial) {
        buf = new byte[Math.max(16, initial)];
    }

    Out() {
        this(256);
    }

    private ByteBuffer at(int n) {
        if (len + n > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
        }
        ByteBuffer b = ByteBuffer.wrap(buf, len, n).order(ByteOrder.LITTLE_ENDIAN);
        len += n;
        return b;
    }

    int length() {
        return len;
    }

    Out u8(int v) {
        at(1).put((byte) v);
        return this;
    }

    Out u16(int v) {
        at(2).putShort((short) v);
        return this;
    }

    Out u32(int v) {
        at(4).putInt(v);
        return this;
    }

    Out u64(long v) {
        at(8).putLong(v);
        return this;
    }

    Out u32At(int offset, int v) {
        ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN).putInt(offset, v);
        return this;
    }

    Out u16At(int offset, int v) {
        ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN).putShort(offset, (short) v);
        return this;
    }

    Out bytes(ByteBuffer b) {
        ByteBuffer src = b.duplicate();
        at(src.remaining()).put(src);
        return this;
    }

    Out bytes(byte[] b) {
        at(b.length).put(b);
        return this;
    }

    Out zeros(int n) {
        at(n);
        return this;
    }

    /** Zero bytes up to the next multiple of {@code align}. */
    Out pad(int align) {
        int r = len % align;
        if (r != 0) {
            zeros(align - r);
        }
        return this;
    }

    /** A string, its NUL and padding in a field of exactly n bytes (truncated to n-1). */
    Out fixedString(String s, int n) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        int k = Math.min(b.length, n - 1);
        at(k).put(b, 0, k);
        zeros(n - k);
        return this;
    }

    /** A string with its NUL, zero-padded to a multiple of {@code align}. */
    Out paddedString(String s, int align) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        int n = (b.length + 1 + align - 1) / align * align;
        return fixedString(s, n);
    }

    /** perf's header string (do_write_string): u32 length, then the string padded to 64 bytes. */
    Out perfString(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        int n = (b.length + 1 + 63) / 64 * 64;
        u32(n);
        return fixedString(s, n);
    }

    byte[] toArray() {
        return Arrays.copyOf(buf, len);
    }

    ByteBuffer toBuffer() {
        return ByteBuffer.wrap(buf, 0, len).slice().order(ByteOrder.LITTLE_ENDIAN);
    }
}

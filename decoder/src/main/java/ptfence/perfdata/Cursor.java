package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/** Bounds-checked reads over one structure; every size taken from the file is checked before it is used. */
final class Cursor {
    private final ByteBuffer buf;
    private int pos;

    Cursor(ByteBuffer buf) {
        this.buf = buf;
        this.pos = buf.position();
    }

    int position() {
        return pos;
    }

    int remaining() {
        return buf.limit() - pos;
    }

    ByteOrder order() {
        return buf.order();
    }

    void need(long n, String what) {
        if (n < 0 || n > remaining()) {
            throw new BadPerfData(what + " needs " + n + " bytes at +" + pos + " but " + remaining() + " remain");
        }
    }

    int u8() {
        need(1, "u8");
        return buf.get(pos++) & 0xff;
    }

    int u16() {
        need(2, "u16");
        int v = buf.getShort(pos) & 0xffff;
        pos += 2;
        return v;
    }

    int u32() {
        need(4, "u32");
        int v = buf.getInt(pos);
        pos += 4;
        return v;
    }

    long u64() {
        need(8, "u64");
        long v = buf.getLong(pos);
        pos += 8;
        return v;
    }

    /** The u32 at {@code rel} bytes ahead, without moving. */
    int peekU32(int rel) {
        need(rel + 4L, "u32");
        return buf.getInt(pos + rel);
    }

    void skip(long n) {
        need(n, "skip");
        pos += (int) n;
    }

    /** A count read from the file, checked against what each element needs at least. */
    int count(long n, int minElementSize, String what) {
        if (n < 0 || n > Integer.MAX_VALUE || n * Math.max(1, minElementSize) > remaining()) {
            throw new BadPerfData(what + " count " + Long.toUnsignedString(n) + " at +" + pos + " exceeds the "
                    + remaining() + " bytes left");
        }
        return (int) n;
    }

    /** A read-only, content-comparable copy-free slice of the next n bytes. */
    ByteBuffer bytes(long n, String what) {
        need(n, what);
        ByteBuffer s = buf.duplicate().position(pos).limit(pos + (int) n).slice().order(buf.order());
        pos += (int) n;
        return s.asReadOnlyBuffer().order(buf.order());
    }

    /** A NUL-terminated string stored in a field of n bytes. */
    String cstring(long n, String what) {
        need(n, what);
        int end = pos;
        int limit = pos + (int) n;
        while (end < limit && buf.get(end) != 0) {
            end++;
        }
        byte[] b = new byte[end - pos];
        buf.duplicate().position(pos).get(b);
        pos = limit;
        return new String(b, StandardCharsets.UTF_8);
    }

    /** perf's header string: u32 len, then len bytes holding a NUL-terminated string. */
    String perfString(String what) {
        long len = Integer.toUnsignedLong(u32());
        return cstring(len, what);
    }

    /** The rest of the buffer as a string up to the first NUL. */
    String restString(String what) {
        return cstring(remaining(), what);
    }
}

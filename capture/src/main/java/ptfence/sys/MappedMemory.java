package ptfence.sys;

import com.kenai.jffi.MemoryIO;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A shared mapping of kernel memory, seen as little-endian bytes. Ring protocols read the producer's head with
 * {@link #getLongAcquire} and publish the consumer's tail with {@link #putLongRelease}; plain reads are for bytes
 * the kernel has already published. Closing unmaps; any access afterwards throws {@link IllegalStateException}.
 */
public final class MappedMemory implements AutoCloseable {
    private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    private final long address;
    private final long length;
    private final Mmap.Protection protection;
    private final String what;
    private ByteBuffer buffer;

    MappedMemory(long address, long length, Mmap.Protection protection, String what) {
        this.address = address;
        this.length = length;
        this.protection = protection;
        this.what = what;
        this.buffer = MemoryIO.getInstance().newDirectByteBuffer(address, (int) length).order(ByteOrder.LITTLE_ENDIAN);
    }

    public long length() {
        return length;
    }

    public Mmap.Protection protection() {
        return protection;
    }

    /** What this maps, as given to {@link Mmap#map}. */
    public String what() {
        return what;
    }

    private ByteBuffer live() {
        ByteBuffer b = buffer;
        if (b == null) {
            throw new IllegalStateException("mapping " + what + " is closed");
        }
        return b;
    }

    /** A little-endian view of {@code [offset, offset+len)}; invalid after {@link #close}. */
    public ByteBuffer slice(int offset, int len) {
        return live().slice(offset, len).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Reads a u64 the kernel publishes (a ring head) with acquire ordering. {@code offset} must be 8-aligned. */
    public long getLongAcquire(int offset) {
        return (long) LONGS.getAcquire(live(), offset);
    }

    /** Publishes a u64 to the kernel (a ring tail) with release ordering. {@code offset} must be 8-aligned. */
    public void putLongRelease(int offset, long value) {
        LONGS.setRelease(live(), offset, value);
    }

    /** Reads a u32 with acquire ordering (BPF ring buffer record headers). {@code offset} must be 4-aligned. */
    public int getIntAcquire(int offset) {
        return (int) INTS.getAcquire(live(), offset);
    }

    public long getLong(int offset) {
        return live().getLong(offset);
    }

    public int getInt(int offset) {
        return live().getInt(offset);
    }

    public short getShort(int offset) {
        return live().getShort(offset);
    }

    public byte getByte(int offset) {
        return live().get(offset);
    }

    public void putLong(int offset, long value) {
        live().putLong(offset, value);
    }

    public void putInt(int offset, int value) {
        live().putInt(offset, value);
    }

    /** Copies {@code len} bytes starting at {@code offset} into {@code dst[dstOffset..]}. */
    public void get(int offset, byte[] dst, int dstOffset, int len) {
        live().get(offset, dst, dstOffset, len);
    }

    /** Copies {@code len} bytes starting at {@code offset} into {@code dst} at its position, advancing it. */
    public void get(int offset, ByteBuffer dst, int len) {
        dst.put(dst.position(), live(), offset, len);
        dst.position(dst.position() + len);
    }

    public boolean isOpen() {
        return buffer != null;
    }

    @Override
    public void close() {
        if (buffer != null) {
            buffer = null;
            Mmap.unmap(address, length, what);
        }
    }

    @Override
    public String toString() {
        return "MappedMemory[" + what + ", " + length + " bytes, " + protection + (buffer == null ? ", closed]" : "]");
    }
}

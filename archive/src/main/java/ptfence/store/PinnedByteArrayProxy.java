package ptfence.store;

import java.util.Arrays;
import java.util.Comparator;
import jnr.ffi.Pointer;
import jnr.ffi.provider.MemoryManager;
import org.lmdbjava.BufferProxy;
import org.lmdbjava.DbiFlags;

/**
 * byte[] keys and values for lmdbjava, with native memory that stays alive for the whole LMDB call. lmdbjava's own
 * {@code ByteArrayProxy} copies each key or value into freshly allocated native memory and keeps no reference to
 * it, so jnr's cleaner may free it while {@code mdb_put} or {@code mdb_get} still reads it (lmdbjava issue 252):
 * the JVM then dies with SIGSEGV in memmove, as it did here twice (a put into a new archive, a reader during gc).
 * Here every thread owns a small ring of native buffers it reuses; a call passes at most two (key and value), so a
 * buffer is reused only after the call that used it has returned.
 */
final class PinnedByteArrayProxy extends BufferProxy<byte[]> {
    static final PinnedByteArrayProxy PROXY = new PinnedByteArrayProxy();
    private static final MemoryManager MEMORY = jnr.ffi.Runtime.getSystemRuntime().getMemoryManager();
    private static final int SLOTS = 4;
    private static final int SMALL = 4096;
    /** Buffers larger than this are not kept for small data afterwards. */
    private static final int KEEP = 1 << 20;

    private static final class Ring {
        final Pointer[] buffers = new Pointer[SLOTS];
        final long[] capacity = new long[SLOTS];
        int next;
    }

    private final ThreadLocal<Ring> rings = ThreadLocal.withInitial(Ring::new);

    private PinnedByteArrayProxy() {}

    @Override
    protected byte[] allocate() {
        return new byte[0];
    }

    @Override
    protected Comparator<byte[]> getComparator(DbiFlags... flags) {
        return Arrays::compareUnsigned;
    }

    @Override
    protected void deallocate(byte[] buffer) {
        // heap arrays: nothing to free
    }

    @Override
    protected byte[] getBytes(byte[] buffer) {
        return buffer;
    }

    @Override
    protected void in(byte[] buffer, Pointer val, long valAddress) {
        Ring ring = rings.get();
        int slot = ring.next;
        ring.next = (slot + 1) % SLOTS;
        int length = buffer.length;
        if (ring.buffers[slot] == null || ring.capacity[slot] < length
                || ring.capacity[slot] > KEEP && length <= KEEP) {
            long size = Math.max(length, SMALL);
            ring.buffers[slot] = MEMORY.allocateDirect((int) size);
            ring.capacity[slot] = size;
        }
        Pointer native_ = ring.buffers[slot];
        native_.put(0, buffer, 0, length);
        val.putLong(STRUCT_FIELD_OFFSET_SIZE, length);
        val.putAddress(STRUCT_FIELD_OFFSET_DATA, native_.address());
    }

    @Override
    protected void in(byte[] buffer, int size, Pointer val, long valAddress) {
        throw new UnsupportedOperationException("MDB_RESERVE is not used with byte[] values");
    }

    @Override
    protected byte[] out(byte[] buffer, Pointer val, long valAddress) {
        long address = val.getAddress(STRUCT_FIELD_OFFSET_DATA);
        int length = (int) val.getLong(STRUCT_FIELD_OFFSET_SIZE);
        byte[] copy = new byte[length];
        MEMORY.newPointer(address, length).get(0, copy, 0, length);
        return copy;
    }
}

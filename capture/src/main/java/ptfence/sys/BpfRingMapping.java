package ptfence.sys;

import com.kenai.jffi.MemoryIO;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.SaveError;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The two mappings of a BPF ring buffer map: the writable consumer page and the read-only producer area (producer
 * page + data mapped twice). Exposed as ByteBuffers; unmapped on close.
 */
public final class BpfRingMapping implements AutoCloseable {
    private static final int PROT_READ = 1, PROT_WRITE = 2, MAP_SHARED = 1, PAGE = 4096;

    private static final long NR_MMAP = 9, NR_MUNMAP = 11;

    /** Through syscall(2) with every argument a long: jnr's mixed int/long mmap binding passed garbage here. */
    public interface LibC {
        @SaveError long syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
    }

    private static long mmap(long len, int prot, int fd, long offset) {
        return Holder.LIBC.syscall(NR_MMAP, 0, len, prot, MAP_SHARED, fd, offset);
    }

    private static void munmap(long addr, long len) {
        Holder.LIBC.syscall(NR_MUNMAP, addr, len, 0, 0, 0, 0);
    }

    private static final class Holder {
        static final LibC LIBC = LibraryLoader.create(LibC.class).load("c");
    }

    private final long consumerAddr, producerAddr, producerLen;
    private final ByteBuffer consumer, producer;
    private boolean closed;

    private BpfRingMapping(long consumerAddr, long producerAddr, long producerLen) {
        this.consumerAddr = consumerAddr;
        this.producerAddr = producerAddr;
        this.producerLen = producerLen;
        MemoryIO io = MemoryIO.getInstance();
        this.consumer = io.newDirectByteBuffer(consumerAddr, PAGE).order(ByteOrder.LITTLE_ENDIAN);
        this.producer = io.newDirectByteBuffer(producerAddr, (int) producerLen).asReadOnlyBuffer()
                .order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Maps ring buffer {@code map} of {@code size} data bytes (its max_entries). */
    public static BpfRingMapping map(BpfFd map, int size) throws BpfException {
        LibC libc = Holder.LIBC;
        Runtime rt = Runtime.getRuntime(libc);
        long c = mmap(PAGE, PROT_READ | PROT_WRITE, map.fd(), 0);
        if (c == -1) throw new BpfException("mmap(" + map + ", consumer page)", rt.getLastError(), null);
        long len = PAGE + 2L * size;
        if (len > Integer.MAX_VALUE) throw new IllegalArgumentException("ring of " + size + " bytes is too large");
        long p = mmap(len, PROT_READ, map.fd(), PAGE);
        if (p == -1) {
            int errno = rt.getLastError();
            munmap(c, PAGE);
            throw new BpfException("mmap(" + map + ", producer area of " + len + " bytes)", errno, null);
        }
        return new BpfRingMapping(c, p, len);
    }

    public ByteBuffer consumerPage() { return consumer; }

    public ByteBuffer producerArea() { return producer; }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        munmap(producerAddr, producerLen);
        munmap(consumerAddr, PAGE);
    }
}

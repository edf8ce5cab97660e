package ptfence.sys;

/**
 * mmap/munmap of kernel-shared memory (perf rings and AUX areas, BPF ring buffers). The result is a
 * {@link MappedMemory}: typed, bounds-checked access with the acquire/release ordering the ring protocols need.
 */
public final class Mmap {
    /** How the mapping may be accessed; for a perf AUX area READ_ONLY selects the kernel's overwrite (snapshot) mode. */
    public enum Protection {
        READ_ONLY(1), READ_WRITE(3);

        final int bits;

        Protection(int bits) {
            this.bits = bits;
        }
    }

    private static final int MAP_SHARED = 0x01;
    private static final int SC_PAGESIZE = 30;
    private static final long NR_MMAP = 9, NR_MUNMAP = 11;

    /** The machine's page size, read once from sysconf. */
    public static final int PAGE_SIZE = (int) Native.LIBC.sysconf(SC_PAGESIZE);

    /** Largest single mapping: views index with int. */
    public static final long MAX_LENGTH = 1L << 30;

    private Mmap() {}

    /**
     * Maps {@code length} bytes of {@code fd} at {@code offset} shared.
     *
     * @param what the subject for error messages, e.g. {@code "perf ring, cpu 1"}
     * @throws SyscallException naming {@code mmap(what)} and the errno
     */
    public static MappedMemory map(int fd, long offset, long length, Protection protection, String what) {
        if (length <= 0 || length > MAX_LENGTH) {
            throw new IllegalArgumentException("mmap(" + what + "): length " + length + " outside 1.." + MAX_LENGTH);
        }
        if (offset % PAGE_SIZE != 0) {
            throw new IllegalArgumentException("mmap(" + what + "): offset " + offset + " not page aligned");
        }
        long addr = Native.LIBC.syscall(NR_MMAP, 0, length, protection.bits, MAP_SHARED, fd, offset);
        if (addr == -1L) {
            throw new SyscallException("mmap(" + what + ")", Native.errno());
        }
        return new MappedMemory(addr, length, protection, what);
    }

    static void unmap(long addr, long length, String what) {
        Native.check(Native.LIBC.syscall(NR_MUNMAP, addr, length, 0, 0, 0, 0), "munmap(" + what + ")");
    }
}

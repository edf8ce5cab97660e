package ptfence.sys;

import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;

/** Loads libc once and turns a failed call into a {@link SyscallException}. */
final class Native {
    static final LibC LIBC = LibraryLoader.create(LibC.class).load("c");
    private static final Runtime RUNTIME = Runtime.getRuntime(LIBC);

    private Native() {}

    static int errno() {
        return RUNTIME.getLastError();
    }

    /** Throws when {@code result} is negative; returns it otherwise. */
    static long check(long result, String call) {
        if (result < 0) {
            throw new SyscallException(call, errno());
        }
        return result;
    }

    static int check(int result, String call) {
        if (result < 0) {
            throw new SyscallException(call, errno());
        }
        return result;
    }
}

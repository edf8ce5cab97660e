package ptfence.sys;

import java.nio.ByteBuffer;
import jnr.ffi.annotations.In;
import jnr.ffi.annotations.Out;

/**
 * The libc entry points behind the facades. Public only because jnr-ffi implements it from another class loader:
 * code outside {@code ptfence.sys} uses the typed facades, never this.
 */
public interface LibC {
    long syscall(long number, @In byte[] attr, int pid, int cpu, int groupFd, long flags);

    /** mmap(2)/munmap(2) through syscall(2) with every argument a long: jnr's mixed int/long mmap binding
     * passed garbage (EINVAL). */
    long syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6);

    int ioctl(int fd, long request, long arg);

    int ioctl(int fd, long request, @In byte[] arg);

    int ioctl(int fd, long request, @Out long[] arg);

    int close(int fd);

    int epoll_create1(int flags);

    int epoll_ctl(int epfd, int op, int fd, @In byte[] event);

    int epoll_wait(int epfd, ByteBuffer events, int maxEvents, int timeoutMs);

    int eventfd(int initval, int flags);

    long read(int fd, @Out byte[] buf, long count);

    long write(int fd, @In byte[] buf, long count);

    long sysconf(int name);

    /** prctl(2) with a buffer argument (PR_SET_NAME / PR_GET_NAME); copied both ways. */
    int prctl(int option, byte[] arg2, long arg3, long arg4, long arg5);

    /** signal(2) with a handler address (only SIG_DFL, 0, is passed); returns the previous one, -1 on error. */
    long signal(int signum, long handler);

    /** clock_gettime(2); {@code ts} receives tv_sec and tv_nsec. */
    int clock_gettime(int clockId, @Out long[] ts);
}

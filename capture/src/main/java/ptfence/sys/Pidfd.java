package ptfence.sys;

/**
 * pidfd_open(2) and pidfd_getfd(2) (Linux 5.6): a copy of another process's file descriptor in this one (root, or
 * ptrace access to it), so the object behind it (a perf event) can be looked at through our own descriptor table.
 */
public final class Pidfd {
    private static final long NR_PIDFD_OPEN = 434, NR_PIDFD_GETFD = 438, NR_CLOSE = 3;

    private Pidfd() {}

    /** Our copy of {@code pid}'s descriptor {@code fd} (close it with {@link #close}); a failure names pid and fd. */
    public static int copy(int pid, int fd) {
        long pidfd = Native.LIBC.syscall(NR_PIDFD_OPEN, pid, 0, 0, 0, 0, 0);
        if (pidfd < 0) throw new SyscallException("pidfd_open(" + pid + ")", Native.errno());
        try {
            long ours = Native.LIBC.syscall(NR_PIDFD_GETFD, pidfd, fd, 0, 0, 0, 0);
            if (ours < 0) throw new SyscallException("pidfd_getfd(pid " + pid + ", fd " + fd + ")", Native.errno());
            return (int) ours;
        } finally {
            Native.LIBC.close((int) pidfd);
        }
    }

    public static void close(int fd) {
        Native.LIBC.syscall(NR_CLOSE, fd, 0, 0, 0, 0, 0);
    }
}

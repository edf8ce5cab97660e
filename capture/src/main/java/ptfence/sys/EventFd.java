package ptfence.sys;

/** An eventfd: lets another thread (a signal handler) wake an {@link Epoll} wait. */
public final class EventFd implements AutoCloseable {
    private static final int CLOEXEC = 0x80000, NONBLOCK = 0x800;
    private final int fd;
    private boolean closed;

    private EventFd(int fd) {
        this.fd = fd;
    }

    public static EventFd create() {
        return new EventFd(Native.check(Native.LIBC.eventfd(0, CLOEXEC | NONBLOCK), "eventfd"));
    }

    public int fd() {
        return fd;
    }

    /** Adds one to the counter, making the fd readable. */
    public void signal() {
        byte[] one = {1, 0, 0, 0, 0, 0, 0, 0};
        Native.check(Native.LIBC.write(fd, one, 8), "write(eventfd)");
    }

    /** Resets the counter; returns what it was (0 when nothing was signalled). */
    public long drain() {
        byte[] v = new byte[8];
        long n = Native.LIBC.read(fd, v, 8);
        if (n < 0) {
            int err = Native.errno();
            if (err == SyscallException.EAGAIN) {
                return 0;
            }
            throw new SyscallException("read(eventfd)", err);
        }
        return java.nio.ByteBuffer.wrap(v).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Native.check(Native.LIBC.close(fd), "close(eventfd)");
        }
    }
}

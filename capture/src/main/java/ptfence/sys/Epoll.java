package ptfence.sys;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * An epoll instance: register file descriptors with a caller-chosen token, wait for readiness. {@link #wait} fills an
 * int array with the tokens of the ready descriptors, so the caller's loop allocates nothing.
 */
public final class Epoll implements AutoCloseable {
    public static final int IN = 0x1, ERR = 0x8, HUP = 0x10;
    private static final int CTL_ADD = 1, CTL_DEL = 2;
    private static final int EVENT_SIZE = 12; // struct epoll_event is packed on x86-64
    private static final int CLOEXEC = 0x80000;

    private final int fd;
    private final ByteBuffer events;
    private final int capacity;
    private boolean closed;

    private Epoll(int fd, int capacity) {
        this.fd = fd;
        this.capacity = capacity;
        this.events = ByteBuffer.allocateDirect(capacity * EVENT_SIZE).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** @param capacity how many ready descriptors one {@link #wait} reports at most */
    public static Epoll create(int capacity) {
        return new Epoll(Native.check(Native.LIBC.epoll_create1(CLOEXEC), "epoll_create1"), capacity);
    }

    /** Watches {@code fd} for readability; {@code token} comes back from {@link #wait}. */
    public void add(int watched, int token, String what) {
        byte[] ev = new byte[EVENT_SIZE];
        ByteBuffer b = ByteBuffer.wrap(ev).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, IN);
        b.putLong(4, token & 0xffffffffL);
        Native.check(Native.LIBC.epoll_ctl(fd, CTL_ADD, watched, ev), "epoll_ctl(ADD, " + what + ")");
    }

    public void remove(int watched, String what) {
        Native.check(Native.LIBC.epoll_ctl(fd, CTL_DEL, watched, new byte[EVENT_SIZE]), "epoll_ctl(DEL, " + what + ")");
    }

    /**
     * Waits up to {@code timeoutMs} (-1 forever) and writes the ready tokens into {@code tokens}.
     *
     * @return how many tokens were written; 0 on timeout or when a signal interrupted the wait
     */
    public int wait(int[] tokens, int timeoutMs) {
        int max = Math.min(capacity, tokens.length);
        int n = Native.LIBC.epoll_wait(fd, events, max, timeoutMs);
        if (n < 0) {
            int err = Native.errno();
            if (err == SyscallException.EINTR) {
                return 0;
            }
            throw new SyscallException("epoll_wait", err);
        }
        for (int i = 0; i < n; i++) {
            tokens[i] = (int) events.getLong(i * EVENT_SIZE + 4);
        }
        return n;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Native.check(Native.LIBC.close(fd), "close(epoll)");
        }
    }
}

package ptfence.sys;

/** An fd returned by bpf(): a program, map, link, BTF object or stats handle. Closing it drops our reference. */
public final class BpfFd implements AutoCloseable {
    private final int fd;
    private final String what;
    private volatile boolean closed;

    BpfFd(int fd, String what) {
        this.fd = fd;
        this.what = what;
    }

    /** The descriptor number, for instructions that embed a map fd and for ioctls that take one. */
    public int fd() {
        if (closed) throw new IllegalStateException(what + " fd " + fd + " is closed");
        return fd;
    }

    public boolean isClosed() { return closed; }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        Bpf.get().closeFd(fd);
    }

    @Override
    public String toString() { return what + " fd " + fd + (closed ? " (closed)" : ""); }
}

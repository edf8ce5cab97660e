package ptfence.sys;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import ptfence.perfdata.EventAttr;

/**
 * One perf event file descriptor: opened with {@code perf_event_open(2)}, driven with its ioctls, mapped with
 * {@link #mapRing} / {@link #mapAux}. Every failure names the call and the event's label.
 */
public final class PerfEvent implements AutoCloseable {
    private static final long NR_PERF_EVENT_OPEN = 298;
    private static final long FLAG_FD_CLOEXEC = 8;
    private static final long IOC_ENABLE = 0x2400, IOC_DISABLE = 0x2401, IOC_SET_OUTPUT = 0x2405,
            IOC_SET_FILTER = 0x40082406L, IOC_ID = 0x80082407L, IOC_PAUSE_OUTPUT = 0x40042409L,
            IOC_SET_BPF = 0x40042408L;

    private final String label;
    private final int cpu;
    private final int pid;
    private int fd;

    private PerfEvent(int fd, String label, int pid, int cpu) {
        this.fd = fd;
        this.label = label;
        this.pid = pid;
        this.cpu = cpu;
    }

    /**
     * Opens an event.
     *
     * @param name the event's name for messages, e.g. {@code intel_pt} or {@code sideband}
     * @param pid -1 for every task on {@code cpu}, else a task (with {@code cpu} -1 for any CPU)
     */
    public static PerfEvent open(EventAttr attr, String name, int pid, int cpu) {
        String label = name + (cpu >= 0 ? ", cpu " + cpu : "") + (pid >= 0 ? ", pid " + pid : "");
        ByteBuffer raw = attr.raw();
        byte[] bytes = new byte[raw.remaining()];
        raw.get(bytes);
        long fd = Native.LIBC.syscall(NR_PERF_EVENT_OPEN, bytes, pid, cpu, -1, FLAG_FD_CLOEXEC);
        if (fd < 0) {
            throw new SyscallException("perf_event_open(" + label + ")", Native.errno());
        }
        return new PerfEvent((int) fd, label, pid, cpu);
    }

    public String label() {
        return label;
    }

    public int cpu() {
        return cpu;
    }

    public int pid() {
        return pid;
    }

    /** The file descriptor, for {@link Epoll} registration and {@link Mmap}; not a pointer. */
    public int fd() {
        if (fd < 0) {
            throw new IllegalStateException("perf event " + label + " is closed");
        }
        return fd;
    }

    public void enable() {
        Native.check(Native.LIBC.ioctl(fd(), IOC_ENABLE, 0), "ioctl(PERF_EVENT_IOC_ENABLE, " + label + ")");
    }

    public void disable() {
        Native.check(Native.LIBC.ioctl(fd(), IOC_DISABLE, 0), "ioctl(PERF_EVENT_IOC_DISABLE, " + label + ")");
    }

    /** Sends this event's records into {@code target}'s ring (same CPU). */
    public void setOutput(PerfEvent target) {
        Native.check(Native.LIBC.ioctl(fd(), IOC_SET_OUTPUT, target.fd()),
                "ioctl(PERF_EVENT_IOC_SET_OUTPUT, " + label + " -> " + target.label + ")");
    }

    /** Address filters in the kernel's syntax, e.g. {@code filter 0x401000/0x100@/bin/x}. */
    public void setFilter(String filter) {
        byte[] s = (filter + "\0").getBytes(StandardCharsets.UTF_8);
        Native.check(Native.LIBC.ioctl(fd(), IOC_SET_FILTER, s),
                "ioctl(PERF_EVENT_IOC_SET_FILTER, " + label + ", \"" + filter + "\")");
    }

    /** PERF_EVENT_IOC_SET_BPF: runs {@code prog} at each overflow of this event (until the event is closed). */
    public void setBpf(BpfFd prog) {
        Native.check(Native.LIBC.ioctl(fd(), IOC_SET_BPF, prog.fd()), "ioctl(PERF_EVENT_IOC_SET_BPF, " + label + ")");
    }

    public void pauseOutput(boolean pause) {
        Native.check(Native.LIBC.ioctl(fd(), IOC_PAUSE_OUTPUT, pause ? 1 : 0),
                "ioctl(PERF_EVENT_IOC_PAUSE_OUTPUT, " + label + ")");
    }

    /** The kernel's id for this event: what SAMPLE_IDENTIFIER carries in its records. */
    public long id() {
        long[] out = new long[1];
        Native.check(Native.LIBC.ioctl(fd(), IOC_ID, out), "ioctl(PERF_EVENT_IOC_ID, " + label + ")");
        return out[0];
    }

    /** Maps the user page and a data ring of {@code dataPages} (a power of two) pages. */
    public MappedMemory mapRing(int dataPages) {
        if (Integer.bitCount(dataPages) != 1) {
            throw new IllegalArgumentException("ring of " + dataPages + " pages: must be a power of two");
        }
        return Mmap.map(fd(), 0, (long) (1 + dataPages) * Mmap.PAGE_SIZE, Mmap.Protection.READ_WRITE,
                "perf ring, " + label);
    }

    /**
     * Maps the AUX area after its offset and size were written into the user page. READ_ONLY selects the kernel's
     * overwrite (snapshot) mode.
     */
    public MappedMemory mapAux(long auxOffset, long auxSize, Mmap.Protection protection) {
        return Mmap.map(fd(), auxOffset, auxSize, protection, "perf AUX area, " + label);
    }

    @Override
    public void close() {
        if (fd >= 0) {
            int f = fd;
            fd = -1;
            Native.check(Native.LIBC.close(f), "close(perf event " + label + ")");
        }
    }

    @Override
    public String toString() {
        return "PerfEvent[" + label + (fd < 0 ? ", closed]" : ", fd " + fd + "]");
    }
}

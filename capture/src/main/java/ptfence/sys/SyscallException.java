package ptfence.sys;

/**
 * A kernel call failed. The message names the call with its subject and the errno, plus a hint when the cause is
 * usually one the user can fix, e.g. {@code perf_event_open(intel_pt, cpu 3): EACCES — run as root or set
 * kernel.perf_event_paranoid}.
 */
public final class SyscallException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public static final int EPERM = 1, ENOENT = 2, ESRCH = 3, EINTR = 4, EAGAIN = 11, ENOMEM = 12, EACCES = 13,
            EBUSY = 16, ENODEV = 19, EINVAL = 22, EMFILE = 24, EOPNOTSUPP = 95;

    private final String call;
    private final int errno;

    public SyscallException(String call, int errno) {
        super(call + ": " + name(errno) + hint(call, errno));
        this.call = call;
        this.errno = errno;
    }

    /** The call and its subject, e.g. {@code perf_event_open(intel_pt, cpu 3)}. */
    public String call() {
        return call;
    }

    public int errno() {
        return errno;
    }

    public String errnoName() {
        return name(errno);
    }

    public static String name(int errno) {
        return Errno.name(errno);
    }

    private static String hint(String call, int errno) {
        boolean perf = call.startsWith("perf_event_open");
        if ((errno == EACCES || errno == EPERM) && perf) {
            return " — run as root or set kernel.perf_event_paranoid";
        }
        if ((errno == EACCES || errno == EPERM) && call.startsWith("bpf")) {
            return " — needs CAP_BPF/CAP_SYS_ADMIN (run as root)";
        }
        if (errno == ENOMEM && call.startsWith("mmap")) {
            return " — ring too large for the locked-memory limit (kernel.perf_event_mlock_kb / ulimit -l)";
        }
        if (errno == EMFILE) {
            return " — too many open files (ulimit -n)";
        }
        return "";
    }
}

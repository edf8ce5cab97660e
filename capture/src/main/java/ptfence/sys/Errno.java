package ptfence.sys;

/** errno numbers as the names people search for (EPERM, ENOENT, ...). */
final class Errno {
    private Errno() {}

    static String name(int errno) {
        jnr.constants.platform.Errno e = jnr.constants.platform.Errno.valueOf(errno);
        if (e != null && e.defined()) return e.name();
        return errno == 524 ? "ENOTSUPP" : "errno " + errno;
    }

    static String describe(int errno) {
        jnr.constants.platform.Errno e = jnr.constants.platform.Errno.valueOf(errno);
        return e != null && e.defined() ? e.description() : "unknown error";
    }
}

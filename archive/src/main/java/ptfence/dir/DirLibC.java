package ptfence.dir;

/**
 * The three libc calls behind {@link DirHandle}. Public only because jnr-ffi implements it from another class loader:
 * code outside {@code ptfence.dir} uses {@link DirHandle}, never this.
 */
public interface DirLibC {
    int open(String path, int flags, int mode);

    int openat(int dirfd, String path, int flags, int mode);

    int mkdirat(int dirfd, String path, int mode);

    int close(int fd);
}

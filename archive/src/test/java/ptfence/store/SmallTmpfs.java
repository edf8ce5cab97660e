package ptfence.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;

/** Test helper: a small tmpfs to fill (a full disk in milliseconds). Needs root; skips the test with a reason else. */
public final class SmallTmpfs {
    private SmallTmpfs() {}

    /** Mounts a tmpfs of {@code size} (mount's form: 3m, 96k) at a new directory {@code parent/small}. */
    public static Path mount(Path parent, String size) throws IOException, InterruptedException {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "needs root to mount a small tmpfs");
        Path mount = Files.createDirectory(parent.resolve("small"));
        Process m = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mount.toString())
                .inheritIO().start();
        Assumptions.assumeTrue(m.waitFor() == 0, "mount -t tmpfs not permitted here");
        return mount;
    }

    public static void unmount(Path mount) throws IOException, InterruptedException {
        new ProcessBuilder("umount", mount.toString()).inheritIO().start().waitFor();
    }
}

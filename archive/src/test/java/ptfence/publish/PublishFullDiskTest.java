package ptfence.publish;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Tool;
import ptfence.ptarchive.PtarchiveCommand;
import ptfence.store.ContentKey;
import ptfence.store.SmallTmpfs;

/**
 * {@code ptarchive publish} onto a full file system: one line naming the path and "no space left on device", exit 2
 * (an environment the user fixes, not an internal error), and no half object or temporary file: every object there
 * is whole. Eight writers race to the full disk, so which one fails first and where the others are then differs from
 * round to round: the test runs rounds. Needs root to mount a small tmpfs.
 */
class PublishFullDiskTest {
    @TempDir
    Path tmp;

    private static final int ROUNDS = 20;

    @Test
    void aFullFileSystemIsOneLineExitTwoAndLeavesNoHalfObject() throws Exception {
        HostArchive a = new HostArchive(Files.createDirectories(tmp.resolve("a")).resolve("archive"), "boot-a")
                .record("rec", 3, 40, 8000, 0);
        for (int round = 0; round < ROUNDS; round++) {
            oneRound(a, Files.createDirectories(tmp.resolve("round" + round)));
        }
    }

    private static void oneRound(HostArchive a, Path dir) throws Exception {
        Path mount = SmallTmpfs.mount(dir, "96k");
        try {
            Path tree = mount.resolve("tree");
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int exit = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                    "--archive", a.dir.toString(), "publish", tree.toString());
            String e = err.toString();
            assertEquals(2, exit, e);
            assertEquals(1, e.strip().lines().count(), e);
            assertTrue(e.startsWith("ptarchive: publish tree " + tree + ": writing " + tree)
                    && e.strip().endsWith("no space left on device"), e);
            int whole = 0;
            try (Stream<Path> s = Files.walk(tree)) {
                for (Path p : s.filter(Files::isRegularFile).toList()) {
                    String name = p.getFileName().toString();
                    assertTrue(!name.endsWith(PublishTree.TEMP_SUFFIX), "a temporary file left: " + p);
                    if (name.equals(PublishTree.OBJECT_FILE)) {
                        ContentKey k = ContentKey.parse(p.getParent().getFileName().toString());
                        assertArrayEquals(a.expectedObject(k), Files.readAllBytes(p), "a half object: " + p);
                        whole++;
                    }
                }
            }
            System.out.println("full tmpfs: " + whole + " whole objects before ENOSPC; " + e.strip());
            assertTrue(whole < a.images.size(), "the file system filled before the end");
        } finally {
            SmallTmpfs.unmount(mount);
        }
    }
}

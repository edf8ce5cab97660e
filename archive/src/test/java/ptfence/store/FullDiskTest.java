package ptfence.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A full disk is a clear error and loses nothing committed. Needs root to mount a small tmpfs. */
class FullDiskTest {
    @TempDir
    Path tmp;

    @Test
    void fullDiskIsAClearErrorAndCommittedImagesSurvive() throws Exception {
        Path mount = SmallTmpfs.mount(tmp, "3m");
        try {
            Path dir = mount.resolve("archive");
            List<ContentKey> committed = new ArrayList<>();
            Random rnd = new Random(2);
            try (Archive a = Archive.open(dir)) {
                ArchiveFullException full = assertThrows(ArchiveFullException.class, () -> {
                    for (int i = 0; i < 100; i++) {
                        List<byte[]> batch = new ArrayList<>();
                        for (int j = 0; j < 10; j++) {
                            byte[] img = new byte[20_000];
                            rnd.nextBytes(img);
                            batch.add(img);
                        }
                        committed.addAll(a.putAll(batch));
                    }
                });
                assertTrue(full.getMessage().contains("no space left") && full.getMessage().contains(dir.toString()),
                        full.getMessage());
                assertTrue(committed.size() >= 50, "some batches fit before the disk filled: " + committed.size());
                for (ContentKey k : committed) {
                    assertTrue(a.get(k).isPresent(), "committed image lost after ENOSPC");
                }
            }
            try (Archive a = Archive.open(dir)) {
                List<String> problems = new ArrayList<>();
                a.read(s -> Verifier.images(s, problems::add));
                assertEquals(List.of(), problems);
                assertEquals((long) committed.size(), (long) a.read(s -> s.count(Table.IMAGES)));
            }
        } finally {
            SmallTmpfs.unmount(mount);
        }
    }
}

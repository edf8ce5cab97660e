package ptfence.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Test helper: damages an archive's data.mdb the way a bad disk would, in a chosen image's bytes. */
public final class DataFile {
    private DataFile() {}

    /** Flips bits of the byte at {@code offset} inside the stored copy of {@code image}; returns the file offset. */
    public static int flip(Path archiveDir, byte[] image, int offset, int mask) throws IOException {
        Path data = archiveDir.resolve("data.mdb");
        byte[] file = Files.readAllBytes(data);
        int at = indexOf(file, image);
        if (at < 0) {
            throw new AssertionError("image not stored verbatim in " + data);
        }
        file[at + offset] ^= (byte) mask;
        Files.write(data, file);
        return at + offset;
    }

    /** First index of needle in hay, or -1. */
    public static int indexOf(byte[] hay, byte[] needle) {
        return indexOf(hay, needle, 0);
    }

    /** First index of needle in hay at or after {@code from}, or -1. */
    public static int indexOf(byte[] hay, byte[] needle, int from) {
        outer:
        for (int i = from; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}

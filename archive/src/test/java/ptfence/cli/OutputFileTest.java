package ptfence.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OutputFileTest {
    @TempDir
    Path dir;

    @Test
    void anUncommittedOutputLeavesTheOldFileAndNoTemporary() throws Exception {
        Path out = dir.resolve("k");
        Files.writeString(out, "earlier result");
        try (OutputFile f = OutputFile.create(out, List.of())) {
            f.stream().write("half".getBytes(StandardCharsets.UTF_8));
            f.stream().flush();
        }
        assertEquals("earlier result", Files.readString(out));
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(List.of(out), s.toList());
        }
    }

    @Test
    void aCommittedOutputReplacesTheFileWithItsPermissions() throws Exception {
        Path out = dir.resolve("k");
        Files.writeString(out, "earlier result");
        Files.setPosixFilePermissions(out, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r-----"));
        try (OutputFile f = OutputFile.create(out, List.of())) {
            f.stream().write(new byte[] {1, 2, 3});
            f.commit();
            assertTrue(f.committed());
        }
        assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(out));
        assertEquals("rw-r-----", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(out)));
    }

    @Test
    void anInputIsRefusedByInodeWhateverThePath() throws Exception {
        Path in = dir.resolve("rec.data");
        Files.writeString(in, "recording");
        Path link = dir.resolve("alias");
        Files.createLink(link, in);
        BadInputException e = assertThrows(BadInputException.class,
                () -> OutputFile.create(link, List.of(dir.resolve("./rec.data"))));
        assertTrue(e.getMessage().contains("is also an input"), e.getMessage());
        assertEquals("recording", Files.readString(in));
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(2, s.count());
        }
    }

    @Test
    void aDirectoryOrAMissingParentIsBadInput() {
        assertThrows(BadInputException.class, () -> OutputFile.create(dir, List.of()));
        assertThrows(BadInputException.class, () -> OutputFile.create(dir.resolve("no/such/x"), List.of()));
        assertFalse(Files.exists(dir.resolve("no")));
    }
}

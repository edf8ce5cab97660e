package ptfence.record;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** perf's perf.data -> perf.data.old on the real file system, and the way back when a start fails. */
class PreviousOutputTest {
    @TempDir
    Path dir;

    private List<String> names() throws Exception {
        try (var s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** perf.data ("previous") and perf.data.old ("older"), as two earlier recordings leave them. */
    private Path twoEarlierRecordings() throws Exception {
        Files.writeString(dir.resolve("perf.data.old"), "older");
        return Files.writeString(dir.resolve("perf.data"), "previous");
    }

    @Test
    void aStartedRecordingReplacesOld() throws Exception {
        Path data = twoEarlierRecordings();
        PreviousOutput p = PreviousOutput.moveAside(data);
        assertTrue(p.moved());
        assertFalse(Files.exists(data));
        assertEquals("previous", Files.readString(dir.resolve("perf.data.old")));
        Files.writeString(data, "new");
        p.keep();
        assertEquals(List.of("perf.data", "perf.data.old"), names());
        assertEquals("previous", Files.readString(dir.resolve("perf.data.old")));
        assertEquals("new", Files.readString(data));
    }

    @Test
    void aFailedStartPutsBothBack() throws Exception {
        Path data = twoEarlierRecordings();
        PreviousOutput p = PreviousOutput.moveAside(data);
        Files.writeString(data, "new, cut short");
        p.restore();
        assertEquals(List.of("perf.data", "perf.data.old"), names());
        assertEquals("previous", Files.readString(data));
        assertEquals("older", Files.readString(dir.resolve("perf.data.old")));
    }

    @Test
    void aFailedFirstStartLeavesNoFile() throws Exception {
        Path data = dir.resolve("t.data");
        PreviousOutput p = PreviousOutput.moveAside(data);
        assertFalse(p.moved());
        Files.writeString(data, "new");
        p.restore();
        assertEquals(List.of(), names());
    }

    @Test
    void emptyFilesAndDevicesStay() throws Exception {
        Path empty = Files.createFile(dir.resolve("e.data"));
        PreviousOutput p = PreviousOutput.moveAside(empty);
        assertFalse(p.moved(), "perf moves only a non-empty file");
        p.restore();
        assertEquals(List.of("e.data"), names());
        assertFalse(PreviousOutput.moveAside(Path.of("/dev/null")).moved());
        assertTrue(Files.exists(Path.of("/dev/null")));
    }
}

package ptfence.ptarchive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.bundle.BundleFile;
import ptfence.bundle.BundleWriter;
import ptfence.cli.Progress;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.store.Archive;

/**
 * {@code ptarchive import --files DIR} as a user runs it: a different file already in DIR is never replaced (the new
 * one gets the next name and the recording is registered with it), the same file is shared, a symlink in DIR is not
 * written through, and a carried name that cannot be a file name is one line, exit 2. Empty paths are refused.
 */
class ImportFilesTest {
    @TempDir
    Path tmp;

    static Ptarchive.Result run(String... args) {
        return Ptarchive.run(args);
    }

    /** A bundle of recording {@code id} carrying a perf.data of {@code content} and the given extra files. */
    Path bundle(String id, String content, BundleFile... extra) throws Exception {
        Path src = Files.createDirectories(tmp.resolve("src-" + id.hashCode()));
        Path data = Files.writeString(src.resolve("perf.data"), content);
        Path out = tmp.resolve(id.hashCode() + ".ptfb");
        try (Archive a = Archive.open(src.resolve("archive"))) {
            a.write(b -> {
                Recordings.register(b, Recording.started(id, data.toString(), "boot-1", 0));
                return null;
            });
            List<BundleFile> files = new java.util.ArrayList<>(List.of(
                    new BundleFile(BundleFile.PERF_DATA, "/home/u/perf.data", null, data)));
            files.addAll(List.of(extra));
            BundleWriter.export(a, id, out, Progress.NONE, files);
        }
        return out;
    }

    Optional<Recording> recording(Path archive, String id) {
        try (Archive a = Archive.openReadOnly(archive)) {
            return a.read(s -> Recordings.get(s, id));
        }
    }

    @Test
    void aDifferentFileOfTheSameNameIsNeverReplacedAndTheSameOneIsShared() throws Exception {
        Path bin1 = Files.writeString(tmp.resolve("prog-1"), "build one");
        Path bin2 = Files.writeString(tmp.resolve("prog-2"), "build two");
        Path a = bundle("rec-a", "perf data of a", new BundleFile(BundleFile.BINARY, "/usr/bin/prog", new byte[] {1},
                bin1));
        Path b = bundle("rec-b", "perf data of b", new BundleFile(BundleFile.BINARY, "/usr/bin/prog", new byte[] {2},
                bin2));
        Path archive = tmp.resolve("archive");
        Path dir = tmp.resolve("files");
        Ptarchive.Result r = run("--archive", archive.toString(), "import", a.toString(), "--files", dir.toString());
        assertEquals(0, r.exit(), r.err());
        r = run("--archive", archive.toString(), "import", b.toString(), "--files", dir.toString());
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("wrote " + dir.resolve("perf.data.1")), r.out());
        assertEquals("perf data of a", Files.readString(dir.resolve("perf.data")), "the first file is kept");
        assertEquals("perf data of b", Files.readString(dir.resolve("perf.data.1")), "the second gets the next name");
        assertEquals("build one", Files.readString(dir.resolve("prog")));
        assertEquals("build two", Files.readString(dir.resolve("02").resolve("prog")), "another build: by build id");
        assertEquals(dir.resolve("perf.data").toString(), recording(archive, "rec-a").orElseThrow().perfDataPath());
        assertEquals(dir.resolve("perf.data.1").toString(), recording(archive, "rec-b").orElseThrow().perfDataPath(),
                "each recording registered with its own perf.data");

        // the same bundle again, into the same directory: the same files, shared, nothing new
        try (var s = Files.list(dir)) {
            long before = s.count();
            r = run("--archive", archive.toString(), "import", b.toString(), "--files", dir.toString());
            assertEquals(0, r.exit(), r.err());
            try (var s2 = Files.list(dir)) {
                assertEquals(before, s2.count(), "a repeated import adds no file: " + r.out());
            }
        }
        assertEquals(dir.resolve("perf.data.1").toString(), recording(archive, "rec-b").orElseThrow().perfDataPath());
    }

    @Test
    void aSymlinkInTheFilesDirectoryIsNotWrittenThrough() throws Exception {
        Path outside = Files.writeString(Files.createDirectories(tmp.resolve("outside")).resolve("target"), "mine");
        Path dir = Files.createDirectories(tmp.resolve("files"));
        Files.createSymbolicLink(dir.resolve("perf.data"), outside);
        Ptarchive.Result r = run("--archive", tmp.resolve("archive").toString(), "import", bundle("rec", "data").toString(),
                "--files", dir.toString());
        assertEquals(0, r.exit(), r.err());
        assertEquals("mine", Files.readString(outside), "nothing written through the link");
        assertTrue(Files.isSymbolicLink(dir.resolve("perf.data")), "the link is not replaced");
        assertEquals("data", Files.readString(dir.resolve("perf.data.1")));
    }

    @Test
    void aCarriedNameThatIsNoFileNameIsOneLineExitTwoAndImportsNothing() throws Exception {
        Path bin = Files.writeString(tmp.resolve("bin"), "x");
        for (String name : List.of("/usr/bin/a\0b", "/usr/bin/..", "/usr/bin/", "", "..")) {
            Path b = bundle("rec" + name.hashCode(), "d", new BundleFile(BundleFile.BINARY, name, null, bin));
            Path archive = tmp.resolve("archive" + name.hashCode());
            Path dir = tmp.resolve("files" + name.hashCode());
            Ptarchive.Result r = run("--archive", archive.toString(), "import", b.toString(), "--files", dir.toString());
            assertEquals(2, r.exit(), name + ": " + r.err());
            assertEquals(1, r.err().strip().lines().count(), r.err());
            assertTrue(r.err().startsWith("ptarchive: bundle " + b + ": carried file '")
                    && r.err().contains("has no usable file name"), r.err());
            assertFalse(Files.exists(dir.resolve("perf.data")), "nothing written");
            assertTrue(!Files.exists(archive) || recording(archive, "rec" + name.hashCode()).isEmpty(),
                    "nothing imported");
        }
    }

    @Test
    void emptyPathsAreRefused() throws Exception {
        Path archive = tmp.resolve("archive");
        Path b = bundle("rec", "d");
        for (List<String> args : List.of(List.of("import", ""), List.of("import", b.toString(), "--files", ""),
                List.of("import", b.toString(), "--perf-data", ""), List.of("publish", ""),
                List.of("gc", "--published", ""))) {
            List<String> all = new java.util.ArrayList<>(List.of("--archive", archive.toString()));
            all.addAll(args);
            Ptarchive.Result r = run(all.toArray(String[]::new));
            assertEquals(2, r.exit(), args + ": " + r.err());
            assertEquals(1, r.err().strip().lines().count(), r.err());
            assertTrue(r.err().contains("empty path"), args + ": " + r.err());
        }
        assertFalse(Files.exists(Path.of("buildid")) || Files.exists(Path.of("recordings")),
                "nothing published into the current directory");
    }

    @Test
    void exportReplacesASymlinkAtItsOutputNeverWritesThroughIt() throws Exception {
        Path src = Files.createDirectories(tmp.resolve("src"));
        try (Archive a = Archive.open(src.resolve("archive"))) {
            a.write(b -> {
                Recordings.register(b, Recording.started("rec", "", "boot-1", 0));
                return null;
            });
        }
        Path outside = Files.writeString(Files.createDirectories(tmp.resolve("outside")).resolve("target"), "mine");
        Path out = tmp.resolve("out.ptfb");
        Files.createSymbolicLink(out, outside);
        Ptarchive.Result r = run("--archive", src.resolve("archive").toString(), "export", "rec", "-o", out.toString());
        assertEquals(0, r.exit(), r.err());
        assertEquals("mine", Files.readString(outside), "nothing written through the link");
        assertTrue(Files.isRegularFile(out, java.nio.file.LinkOption.NOFOLLOW_LINKS), "the bundle replaced the link");
    }
}

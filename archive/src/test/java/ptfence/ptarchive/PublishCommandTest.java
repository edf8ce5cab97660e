package ptfence.ptarchive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.JsonReader;
import ptfence.cli.Tool;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;

/** {@code ptarchive publish} and {@code gc --published} as a user runs them: output, JSON, one-line errors (exit 2). */
class PublishCommandTest {
    @TempDir
    Path tmp;
    Path archive;

    record Result(int exit, String out, String err) {}

    Result run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err), args);
        return new Result(exit, out.toString(), err.toString());
    }

    @BeforeEach
    void populate() {
        archive = tmp.resolve("archive");
        try (Archive a = Archive.open(archive)) {
            a.write(b -> {
                Recordings.register(b, new Recording("rec-1", "", "boot-a", 100, 900, System.currentTimeMillis()));
                byte[] code = {0x55, 0x48, (byte) 0x89, (byte) 0xe5, 0x5d, (byte) 0xc3};
                Recordings.link(b, "rec-1", RegionIndex.add(b, new Region("boot-a", 0xffffffffc0001000L, code.length,
                        100, 500, RegionKind.BPF_PROG, "bpf_prog_1122334455667788_tiny", b.put(code), null)));
                return null;
            });
        }
    }

    @Test
    void publishThenCollectAsAUserRunsThem() throws Exception {
        Path tree = tmp.resolve("srv/ptfence");
        Result r = run("--archive", archive.toString(), "publish", tree.toString());
        assertEquals(0, r.exit(), r.err());
        assertEquals("published 1 recording(s), 1 image(s): 1 written (" + r.out().replaceAll("(?s).*written \\(([^)]*)\\).*",
                "$1") + "), 0 already there -> " + tree + "\n", r.out());
        assertEquals("rwxr-x---", java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(tree)), "kernel addresses: not for everyone");
        r = run("--archive", archive.toString(), "publish", "--json", tree.toString());
        Map<String, Object> json = JsonReader.object(r.out().strip());
        assertEquals(1L, json.get("present"));
        assertEquals(0L, json.get("written"));
        r = run("gc", "--published", tree.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        assertEquals(1L, JsonReader.object(r.out().strip()).get("objects_kept"));
        r = run("gc", "--published", tree.toString(), "--dry-run");
        assertTrue(r.out().startsWith("gc: would remove 0 object(s)"), r.out());
    }

    @Test
    void badInputIsOneLineAndExitTwo() {
        Path tree = tmp.resolve("tree");
        for (List<String> args : List.of(
                List.of("--archive", archive.toString(), "publish", tree.toString(), "--since", "yesterday"),
                List.of("--archive", archive.toString(), "publish", tree.toString(), "--since", "2h", "--recording",
                        "rec-1"),
                List.of("--archive", archive.toString(), "publish", tree.toString(), "--recording", "nope"),
                List.of("--archive", tmp.resolve("no-archive").toString(), "publish", tree.toString()),
                List.of("gc", "--published", tmp.resolve("not-a-tree").toString()),
                List.of("gc", "--published", tree.toString(), "--grace", "10m"),
                List.of("gc", "--published", tree.toString(), "--max-size", "1G"),
                List.of("--archive", archive.toString(), "gc", "--grace", "2d"))) {
            if (args.contains("--grace") || args.contains("--max-size")) {
                run("--archive", archive.toString(), "publish", tree.toString()); // a tree to refuse them on
            }
            Result r = run(args.toArray(String[]::new));
            assertEquals(2, r.exit(), args + ": " + r.err());
            assertEquals(1, r.err().strip().lines().count(), args + ": " + r.err());
            assertTrue(r.err().startsWith("ptarchive: "), r.err());
        }
    }
}

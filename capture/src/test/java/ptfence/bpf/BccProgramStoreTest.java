package ptfence.bpf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.region.BpfMetadata;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** bcc's program store as bcc lays it out: bpf_prog_%llx of the tag, one directory per program. */
class BccProgramStoreTest {
    @TempDir
    Path root;

    private static BpfMetadata program(String tag, byte[] lineInfo) {
        return new BpfMetadata(3, tag, "p", 2, null, null, lineInfo, lineInfo.length == 0 ? 0 : 16, null, 0, null,
                0, 0, null, null, 0, 0);
    }

    @Test
    void theTagIsANumberInTheDirectoryName() {
        assertEquals("bpf_prog_a1b2c3d4e5f60718", BccProgramStore.directoryName("00a1b2c3d4e5f60718".substring(2)));
        assertEquals("bpf_prog_a1b2c3d4e5f607", BccProgramStore.directoryName("0000a1b2c3d4e5f607"));
        assertEquals("bpf_prog_0", BccProgramStore.directoryName("0000000000000000"));
    }

    @Test
    void filesOfTheTagAreFoundByNameLinksAndHugeFilesLeftOut() throws Exception {
        String tag = "00c0ffee12345678";
        Path d = Files.createDirectories(root.resolve("bpf_prog_c0ffee12345678"));
        Files.writeString(d.resolve("trace_x.c"), "int trace_x(void *ctx) { return 0; }\n");
        Files.writeString(d.resolve("trace_x.rewritten.c"), "/* rewritten */\n");
        Files.write(d.resolve("huge.c"), new byte[(1 << 20) + 1]);
        Files.createSymbolicLink(d.resolve("passwd.c"), Path.of("/etc/passwd"));
        BccProgramStore store = new BccProgramStore(root);
        List<BpfMetadata.SourceFile> found = store.sources(tag);
        assertEquals(List.of("trace_x.c", "trace_x.rewritten.c"), found.stream().map(BpfMetadata.SourceFile::name).toList());
        assertEquals("/* rewritten */\n", new String(found.get(1).content(), StandardCharsets.UTF_8));
        assertEquals(found, store.complete(program(tag, new byte[0])).sources());
        assertEquals(List.of(), store.complete(program(tag, new byte[16])).sources(), "line info: nothing added");
    }

    @Test
    void aMissIsLookedUpAgainSinceBccWritesAfterTheLoad() throws Exception {
        String tag = "1122334455667788";
        BccProgramStore store = new BccProgramStore(root);
        BpfMetadata m = program(tag, new byte[0]);
        assertSame(m, store.complete(m));
        Path d = Files.createDirectories(root.resolve("bpf_prog_" + tag));
        Files.writeString(d.resolve("f.c"), "x");
        assertEquals(List.of("f.c"), store.complete(m).sources().stream().map(BpfMetadata.SourceFile::name).toList());
        assertSame(m, BccProgramStore.NONE.complete(m));
    }
}

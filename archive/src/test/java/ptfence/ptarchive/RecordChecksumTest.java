package ptfence.ptarchive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.region.BpfMetadata;
import ptfence.region.DamagedRecordException;
import ptfence.region.Region;
import ptfence.region.RegionCodec;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.DataFile;
import ptfence.store.Table;

/**
 * Stored region metadata is as protected as code: a byte of a program's source text flipped on disk (metadata no
 * content key covers) is found by verify (exit 1, naming the region) and refused by every reader in one line instead
 * of shown; records written before records carried a checksum still read, and verify says they are unchecked.
 */
class RecordChecksumTest {
    static final byte[] SOURCE = "int kprobe__tcp_v4_connect(struct pt_regs *ctx) { return count(ctx); }\n"
            .getBytes(StandardCharsets.UTF_8);
    static final String NAME = "bpf_prog_1122334455667788_counter";

    @TempDir
    Path tmp;

    static Ptarchive.Result run(Path archive, String... args) {
        String[] all = new String[args.length + 2];
        all[0] = "--archive";
        all[1] = archive.toString();
        System.arraycopy(args, 0, all, 2, args.length);
        return Ptarchive.run(all);
    }

    static Region region(byte[] code) {
        BpfMetadata m = new BpfMetadata(7, "1122334455667788", "counter", 2, new long[] {0xffffffffc0001000L},
                new int[] {code.length}, new byte[32], 16, new byte[16], 8, new byte[8], 8, 0, null, new byte[24],
                123L, 0, new int[0], new long[0], 0, 0, 0, "", 0, true, 3, null,
                List.of(new BpfMetadata.SourceFile("counter.c", SOURCE)));
        return new Region("boot-a", 0xffffffffc0001000L, code.length, 100, Region.OPEN, RegionKind.BPF_PROG, NAME,
                ptfence.store.ContentKey.of(code), m);
    }

    @Test
    void flippedSourceTextIsDamageVerifyReportsAndNoReaderShows() throws Exception {
        Path dir = tmp.resolve("archive");
        byte[] code = {0x55, 0x48, (byte) 0x89, (byte) 0xe5, 0x5d, (byte) 0xc3};
        Region r = region(code);
        byte[] path = "/data/checksum-test/perf.data".getBytes(StandardCharsets.UTF_8);
        try (Archive a = Archive.open(dir)) {
            a.write(b -> {
                b.put(code);
                ptfence.recording.Recordings.register(b, new ptfence.recording.Recording("rec-1",
                        new String(path, StandardCharsets.UTF_8), "boot-a", 100, 900, 0));
                return RegionIndex.add(b, r);
            });
        }
        assertEquals(0, run(dir, "verify").exit(), "clean before the flip");
        Path data = dir.resolve("data.mdb");
        byte[] file = Files.readAllBytes(data);
        int flipped = 0;
        for (int at = 0; (at = DataFile.indexOf(file, SOURCE, at)) >= 0; at++) {
            file[at + 30] ^= 0x01; // "return count" -> "return bount": a wrong line, silently, before
            flipped++;
        }
        assertTrue(flipped > 0, "the source text is stored verbatim");
        for (int at = 0; (at = DataFile.indexOf(file, path, at)) >= 0; at++) {
            file[at + 7] ^= 0x01; // the perf.data path gc decides by: "checksum" -> "bhecksum"
        }
        Files.write(data, file);

        Ptarchive.Result v = run(dir, "verify");
        assertEquals(1, v.exit(), v.out() + v.err());
        assertTrue(v.out().startsWith("DAMAGED: 2 problem(s)"), v.out());
        assertEquals(2, v.err().strip().lines().count(), v.err());
        assertTrue(v.err().contains("region " + r.idHex() + " (" + NAME + "): damaged record"), v.err());
        assertTrue(v.err().contains("recording rec-1: damaged record"), v.err());

        Ptarchive.Result show = run(dir, "show", NAME);
        assertEquals(2, show.exit(), show.out() + show.err());
        assertEquals(1, show.err().strip().lines().count(), show.err());
        assertTrue(show.err().contains("region " + r.idHex() + " (" + NAME + "): damaged record"), show.err());
        assertFalse(show.out().contains("bount"), "the altered text is never shown");
        try (Archive a = Archive.openReadOnly(dir)) {
            assertThrows(DamagedRecordException.class, () -> a.read(s -> RegionIndex.get(s, r.id())));
        }
    }

    @Test
    void recordsWithoutAChecksumStillReadAndVerifySaysTheyAreUnchecked() throws Exception {
        Path dir = tmp.resolve("archive");
        byte[] code = {0x55, (byte) 0xc3};
        Region r = region(code);
        // the record as the previous format wrote it: version 2, no checksum after it
        byte[] v3 = RegionCodec.encode(r);
        byte[] v2 = java.util.Arrays.copyOf(v3, v3.length - 4);
        v2[0] = 2;
        try (Archive a = Archive.open(dir)) {
            a.write(b -> {
                b.put(code);
                RegionIndex.add(b, r);
                b.putRaw(Table.REGIONS, RegionIndex.idKey(r.id()), v2);
                return null;
            });
            assertEquals(r.name(), a.read(s -> RegionIndex.get(s, r.id())).orElseThrow().name());
        }
        Ptarchive.Result v = run(dir, "verify");
        assertEquals(0, v.exit(), v.out() + v.err());
        assertTrue(v.out().startsWith("ok: ") && v.out().contains(
                "(1 records written before records carried checksums: read unchecked)"), v.out());
    }
}

package ptfence.bundle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.BadInputException;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.BpfMetadata;
import ptfence.region.ImageAt;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ContentKey;
import ptfence.store.Table;

class BundleTest {
    @TempDir
    Path tmp;

    /** A source archive with recording "rec" (5 regions, one image shared twice) and an unrelated one. */
    Path source() {
        Path dir = tmp.resolve("src");
        try (Archive a = Archive.open(dir)) {
            Random rnd = new Random(5);
            a.write(b -> {
                Recordings.register(b, Recording.started("rec", "/data/perf.data", "boot-1", 1000));
                Recordings.register(b, Recording.started("other", "", "boot-1", 1000));
                byte[] shared = new byte[777];
                rnd.nextBytes(shared);
                for (int i = 0; i < 5; i++) {
                    byte[] img = i % 2 == 0 ? shared : new byte[100 + i * 1000];
                    rnd.nextBytes(i % 2 == 0 ? new byte[0] : img);
                    long id = RegionIndex.add(b, new Region("boot-1", 0xffffffffc0000000L + i * 0x1000L, img.length,
                            1000 + i, i == 4 ? Region.OPEN : 5000, RegionKind.BPF_PROG, "prog" + i, b.put(img),
                            BpfMetadata.of(i, "00000000000000a" + i, "p" + i, 1)));
                    Recordings.link(b, "rec", id);
                }
                byte[] unrelated = new byte[50];
                long other = RegionIndex.add(b, new Region("boot-1", 0x5000, 50, 0, 1, RegionKind.KPROBE_INSN,
                        "unrelated", b.put(unrelated), null));
                Recordings.link(b, "other", other);
                return null;
            });
            Path bundle = tmp.resolve("rec.ptfb");
            BundleSummary s = BundleWriter.export(a, "rec", bundle);
            assertEquals(3, s.images());
            assertEquals(5, s.regions());
        }
        return tmp.resolve("rec.ptfb");
    }

    @Test
    void exportImportRoundTripsAndReimportIsANoOp() {
        Path bundle = source();
        try (Archive dst = Archive.open(tmp.resolve("dst"))) {
            BundleSummary first = BundleReader.importInto(dst, bundle, "");
            assertEquals(3, first.newImages());
            assertEquals(5, first.newRegions());
            BundleSummary second = BundleReader.importInto(dst, bundle, "");
            assertEquals(0, second.newImages() + second.newRegions());
            assertEquals(3L, (long) dst.read(s -> s.count(Table.IMAGES)));
            assertEquals(1, dst.read(Recordings::all).size());
            assertEquals(5, dst.read(s -> Recordings.regions(s, "rec")).size());
            try (Archive src = Archive.open(tmp.resolve("src"))) {
                for (long addr = 0xffffffffc0000000L; addr < 0xffffffffc0005000L; addr += 0x333) {
                    for (long t : new long[] {999, 1003, 4999, 6000}) {
                        long a0 = addr;
                        ImageAt want = src.read(s -> RegionIndex.bytesAt(s, "boot-1", a0, t)).orElse(null);
                        ImageAt got = dst.read(s -> RegionIndex.bytesAt(s, "boot-1", a0, t)).orElse(null);
                        assertEquals(want == null, got == null);
                        if (want != null) {
                            assertEquals(want.region(), got.region());
                            assertArrayEquals(want.bytes(), got.bytes());
                        }
                    }
                }
            }
            assertTrue(dst.read(s -> RegionIndex.byName(s, "unrelated")).isEmpty(), "only what rec needs");
        }
    }

    /** A region's BTF travels in the bundle as content and comes back whole. */
    @Test
    void programBtfTravelsWithTheRegions() {
        byte[] btf = new byte[300];
        new Random(3).nextBytes(btf);
        BpfMetadata meta = new BpfMetadata(3, "00000000000000bb", "withbtf", 1, null, null, null, 0, null, 0, null, 0,
                41, btf, null, 0, 0);
        Path bundle = tmp.resolve("btf.ptfb");
        try (Archive a = Archive.open(tmp.resolve("srcbtf"))) {
            a.write(b -> {
                Recordings.register(b, Recording.started("btfrec", "", "boot-2", 0));
                Recordings.link(b, "btfrec", RegionIndex.add(b, new Region("boot-2", 0x9000, 4, 0, Region.OPEN,
                        RegionKind.BPF_PROG, "withbtf", b.put(new byte[] {1, 2, 3, 4}), meta)));
                return null;
            });
            assertEquals(2, BundleWriter.export(a, "btfrec", bundle).images(), "the image and the BTF");
        }
        try (Archive dst = Archive.open(tmp.resolve("dstbtf"))) {
            BundleReader.importInto(dst, bundle, "");
            Region back = dst.read(s -> RegionIndex.withContent(s, RegionIndex.byName(s, "withbtf").get(0)));
            assertEquals(meta, back.metadata());
        }
    }

    /** A bundle of format version 1 (no carried files; what earlier builds wrote) still imports. */
    @Test
    void versionOneBundlesStillImport() throws Exception {
        byte[] b = Files.readAllBytes(source());
        ByteBuffer.wrap(b).putInt(8, 1);
        System.arraycopy(ContentKey.sha256(Arrays.copyOf(b, b.length - 32)), 0, b, b.length - 32, 32);
        Path v1 = Files.write(tmp.resolve("v1.ptfb"), b);
        try (Archive dst = Archive.open(tmp.resolve("dstv1"))) {
            assertEquals(5, BundleReader.importInto(dst, v1, "").newRegions());
        }
    }

    /** Carried files: written whole where asked; a bundle whose file data is cut is refused before anything. */
    @Test
    void carriedFilesAreWrittenWholeOrTheBundleIsRefused() throws Exception {
        byte[] big = new byte[(16 << 20) + 12345]; // more than one FILE_DATA entry
        new Random(4).nextBytes(big);
        Path data = Files.write(tmp.resolve("perf.data"), big);
        Path bin = Files.write(tmp.resolve("prog"), new byte[] {1, 2, 3});
        Path bundle = tmp.resolve("files.ptfb");
        try (Archive a = Archive.open(tmp.resolve("srcf"))) {
            a.write(b -> {
                Recordings.register(b, Recording.started("withfiles", data.toString(), "boot-3", 0));
                return null;
            });
            BundleSummary s = BundleWriter.export(a, "withfiles", bundle, ptfence.cli.Progress.NONE, List.of(
                    new BundleFile(BundleFile.PERF_DATA, data.toString(), null, data),
                    new BundleFile(BundleFile.BINARY, "/usr/bin/prog", new byte[] {9}, bin),
                    new BundleFile(BundleFile.BINARY, "/usr/lib/gone.so", null, null)));
            assertEquals(2, s.files().size());
            assertEquals(List.of("/usr/lib/gone.so"), s.missing());
        }
        try (Archive dst = Archive.open(tmp.resolve("dstf"))) {
            Path out = tmp.resolve("files");
            BundleSummary s = BundleReader.importInto(dst, bundle, "", ptfence.cli.Progress.NONE, out);
            assertArrayEquals(big, Files.readAllBytes(out.resolve("perf.data")));
            assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(out.resolve("prog")));
            assertEquals(2, s.files().size());
            assertEquals(out.resolve("perf.data").toAbsolutePath().toString(),
                    dst.read(st -> Recordings.get(st, "withfiles")).orElseThrow().perfDataPath(),
                    "the recording's perf.data is the one written");
        }
        byte[] whole = Files.readAllBytes(bundle);
        // the second FILE_DATA entry of the perf.data, one byte shorter: the file is short, the sum is off
        byte[] cut = Arrays.copyOf(whole, whole.length - 1);
        Path bad = Files.write(tmp.resolve("cut.ptfb"), cut);
        try (Archive dst = Archive.open(tmp.resolve("dstcut"))) {
            assertThrows(BadInputException.class, () -> BundleReader.importInto(dst, bad, "",
                    ptfence.cli.Progress.NONE, tmp.resolve("nofiles")));
            assertFalse(Files.exists(tmp.resolve("nofiles/perf.data")), "nothing written from a bad bundle");
        }
    }

    @Test
    void cutShortAlteredOrUnknownBundlesAreClearErrorsAndTouchNothing() throws Exception {
        Path bundle = source();
        byte[] whole = Files.readAllBytes(bundle);
        List<byte[]> bad = new ArrayList<>();
        List<String> expect = new ArrayList<>();
        for (int cut : new int[] {0, 5, 11, 12, 13, 40, whole.length / 2, whole.length - 33, whole.length - 1}) {
            bad.add(Arrays.copyOf(whole, cut));
            expect.add(cut < 8 ? "" : "cut short");
        }
        Random rnd = new Random(9);
        for (int i = 0; i < 20; i++) {
            byte[] altered = whole.clone();
            int at = 12 + rnd.nextInt(whole.length - 12);
            altered[at] ^= (byte) (1 << rnd.nextInt(8));
            bad.add(altered);
            expect.add("");
        }
        byte[] v3 = whole.clone();
        ByteBuffer.wrap(v3).putInt(8, 3);
        bad.add(v3);
        expect.add("format version 3 is unknown");
        byte[] magic = whole.clone();
        magic[0] = 'X';
        bad.add(magic);
        expect.add("not a ptfence bundle");
        byte[] trailing = Arrays.copyOf(whole, whole.length + 1);
        bad.add(trailing);
        expect.add("");

        try (Archive dst = Archive.open(tmp.resolve("dst"))) {
            for (int i = 0; i < bad.size(); i++) {
                Path f = tmp.resolve("bad" + i + ".ptfb");
                Files.write(f, bad.get(i));
                BadInputException e = assertThrows(BadInputException.class, () -> BundleReader.importInto(dst, f, ""),
                        "case " + i);
                assertTrue(e.getMessage().startsWith("bundle " + f), e.getMessage());
                assertTrue(e.getMessage().contains(expect.get(i)), "case " + i + ": " + e.getMessage());
                for (Table t : new Table[] {Table.IMAGES, Table.REGIONS, Table.RECORDINGS, Table.LEASES}) {
                    assertEquals(0L, (long) dst.read(s -> s.count(t)), "case " + i + " touched " + t);
                }
            }
        }
    }
}

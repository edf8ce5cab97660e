package ptfence.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.BadInputException;

class StoreTest {
    @TempDir
    Path tmp;

    @Test
    void keyIsSha256OfTheBytesAsJdkComputesIt() throws Exception {
        byte[] content = "mov %rdi,%rax; ret".getBytes();
        byte[] expected = MessageDigest.getInstance("SHA-256").digest(content);
        assertEquals(HexFormat.of().formatHex(expected), ContentKey.of(content).hex());
        // A well-known vector: SHA-256("abc").
        assertEquals("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                ContentKey.of("abc".getBytes()).hex());
        assertEquals(ContentKey.of(content), ContentKey.parse(ContentKey.of(content).hex()));
        assertThrows(BadInputException.class, () -> ContentKey.parse("xyz"));
    }

    @Test
    void putGetRoundTripsAndDeduplicates() {
        try (Archive a = Archive.open(tmp.resolve("a"))) {
            Random rnd = new Random(1);
            List<byte[]> images = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                byte[] b = new byte[100 + rnd.nextInt(5000)];
                rnd.nextBytes(b);
                images.add(b);
            }
            List<ContentKey> keys = a.putAll(images);
            List<ContentKey> again = a.putAll(images);
            assertEquals(keys, again);
            long count = a.read(s -> s.count(Table.IMAGES));
            assertEquals(200L, count);
            for (int i = 0; i < images.size(); i++) {
                assertArrayEquals(images.get(i), a.get(keys.get(i)).orElseThrow());
                ContentKey k = keys.get(i);
                long len = a.read(s -> s.imageInfo(k)).orElseThrow().length();
                assertEquals(images.get(i).length, len);
            }
            ContentKey absent = ContentKey.of(new byte[] {1, 2, 3});
            assertTrue(a.get(absent).isEmpty());
            BadInputException e = assertThrows(DamagedImageException.class,
                    () -> a.read(s -> s.requireImage(absent)));
            assertTrue(e.getMessage().contains(absent.hex()), e.getMessage());
        }
    }

    @Test
    void directoryIsPrivateAndFilesOwnerOnly() throws Exception {
        Path dir = tmp.resolve("deep/private");
        try (Archive a = Archive.open(dir)) {
            a.put(new byte[] {1});
        }
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("data.mdb"))));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("lock.mdb"))));
    }

    @Test
    void mapGrowsOnDemandAndSurvivesReopen() {
        Path dir = tmp.resolve("grow");
        List<ContentKey> keys = new ArrayList<>();
        long initialMap;
        Random rnd = new Random(7);
        try (Archive a = Archive.open(dir)) {
            initialMap = a.mapSize();
            for (int batch = 0; batch < 12; batch++) {
                List<byte[]> images = new ArrayList<>();
                for (int i = 0; i < 200; i++) {
                    byte[] b = new byte[64 * 1024];
                    rnd.nextBytes(b);
                    images.add(b);
                }
                keys.addAll(a.putAll(images));  // 12.5 MiB a batch, 150 MiB in all: more than the first map
            }
            assertTrue(a.mapSize() > initialMap, "map grew from " + initialMap + " to " + a.mapSize());
        }
        try (Archive a = Archive.open(dir)) {
            for (ContentKey k : keys) {
                assertTrue(a.contains(k));
                assertTrue(a.get(k).isPresent());
            }
        }
    }

    @Test
    void damagedImageBytesAreAnErrorNamingTheKeyNeverWrongBytes() throws Exception {
        Path dir = tmp.resolve("dmg");
        byte[] image = new byte[3000];
        for (int i = 0; i < image.length; i++) {
            image[i] = (byte) (i % 7 == 0 ? 0x90 : 0xCC);
        }
        ContentKey key;
        try (Archive a = Archive.open(dir)) {
            key = a.put(image);
        }
        DataFile.flip(dir, image, 1234, 0x01);
        try (Archive a = Archive.open(dir)) {
            DamagedImageException e = assertThrows(DamagedImageException.class, () -> a.get(key));
            assertTrue(e.getMessage().contains(key.hex()), e.getMessage());
            assertEquals(key, e.key());
        }
    }

    @Test
    void unknownFormatVersionIsRefused() {
        Path dir = tmp.resolve("ver");
        try (Archive a = Archive.open(dir)) {
            a.write(b -> {
                b.putRaw(Table.META, "format".getBytes(), java.nio.ByteBuffer.allocate(4).putInt(99).array());
                return null;
            });
        }
        BadInputException e = assertThrows(BadInputException.class, () -> Archive.open(dir));
        assertTrue(e.getMessage().contains("format version 99"), e.getMessage());
    }

    @Test
    void garbageDataFileIsAClearError() throws Exception {
        Path dir = tmp.resolve("garbage");
        Files.createDirectories(dir);
        byte[] junk = new byte[64 * 1024];
        new Random(3).nextBytes(junk);
        Files.write(dir.resolve("data.mdb"), junk);
        BadInputException e = assertThrows(BadInputException.class, () -> Archive.open(dir));
        assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
    }

    @Test
    void locationFollowsFlagThenEnvThenUserDefault() {
        assertEquals(Path.of("/x"), ArchiveLocation.resolve(Path.of("/x"), Map.of("PTFENCE_ARCHIVE", "/y"), "/h", true));
        assertEquals(Path.of("/y"), ArchiveLocation.resolve(null, Map.of("PTFENCE_ARCHIVE", "/y"), "/h", true));
        assertEquals(Path.of("/var/lib/ptfence/archive"), ArchiveLocation.resolve(null, Map.of(), "/h", true));
        assertEquals(Path.of("/h/.local/share/ptfence/archive"), ArchiveLocation.resolve(null, Map.of(), "/h", false));
    }

    @Test
    void generationAdvancesAndPutsAreStampedWithIt() {
        try (Archive a = Archive.open(tmp.resolve("gen"))) {
            ContentKey k = a.put(new byte[] {9});
            long g0 = a.read(s -> s.imageInfo(k)).orElseThrow().touchGeneration();
            long g1 = a.write(Batch::advanceGeneration);
            assertEquals(g0 + 1, g1);
            a.put(new byte[] {9});  // dedup put touches
            assertEquals(g1, a.read(s -> s.imageInfo(k)).orElseThrow().touchGeneration());
            assertFalse(a.contains(ContentKey.of(new byte[] {8})));
        }
    }
}

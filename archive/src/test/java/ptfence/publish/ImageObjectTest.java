package ptfence.publish;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.region.BpfMetadata;
import ptfence.region.Region;
import ptfence.region.RegionKind;
import ptfence.store.ContentKey;

/**
 * The published object as independent ELF readers see it: binutils' readelf and objcopy, elfutils' eu-readelf and
 * eu-elflint read the build id (all 32 bytes of the key), the .text bytes at the region's address, the symbol. (The
 * project's own reader and debuginfod read them in decoder's PublishedImageTest and fixtures' FleetTest.)
 */
class ImageObjectTest {
    @TempDir
    Path dir;

    static Region region(byte[] image, long address, long from, String name) {
        BpfMetadata m = new BpfMetadata(42, "0123456789abcdef", "prog", 26, new long[] {address},
                new int[] {image.length}, new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, 8, new byte[16], 8, new byte[8], 8,
                7, new byte[] {(byte) 0x9f, (byte) 0xeb}, new byte[24], 123456789L, 0);
        return new Region("boot-a", address, image.length, from, from + 1000, RegionKind.BPF_PROG, name,
                ContentKey.of(image), m);
    }

    @Test
    void readelfAndEuReadelfReadTheBuildIdTheCodeAndTheSymbol() throws Exception {
        Random rnd = new Random(3);
        for (int round = 0; round < 12; round++) {
            byte[] image = new byte[1 + rnd.nextInt(round < 6 ? 64 : 20_000)];
            rnd.nextBytes(image);
            long address = 0xffffffffc0000000L + rnd.nextInt(1 << 24);
            String name = "bpf_prog_0123456789abcdef_p" + round;
            ContentKey key = ContentKey.of(image);
            List<Region> regions = new ArrayList<>(List.of(region(image, address, 5000, name),
                    region(image, address, 1000, name + "_earlier")));
            byte[] object = ImageObject.write(key, image, regions);
            Path f = Files.write(dir.resolve("obj" + round), object);

            String notes = run("readelf", "-n", f.toString());
            assertTrue(notes.contains("Build ID: " + key.hex()), notes);
            String sections = run("readelf", "-SW", f.toString());
            assertTrue(sections.matches("(?s).*\\.text\\s+PROGBITS\\s+0*" + Long.toHexString(address)
                    + "\\s.*AX.*"), sections);
            assertTrue(sections.contains(ImageObject.REGIONS_SECTION), sections);
            String symbols = run("readelf", "-sW", f.toString());
            assertTrue(symbols.contains(Long.toHexString(address) + " " + String.format("%5d", image.length)
                    + " FUNC    GLOBAL DEFAULT    2 " + name + "_earlier"), symbols);
            Path text = dir.resolve("text" + round);
            run("objcopy", "-O", "binary", "--only-section=.text", f.toString(), text.toString());
            assertArrayEquals(image, Files.readAllBytes(text), "objcopy's .text is the image");
            if (has("eu-readelf")) {
                String eu = run("eu-readelf", "-n", "-l", f.toString());
                assertTrue(eu.contains("Build ID: " + key.hex()), eu);
                assertTrue(eu.contains("LOAD"), eu);
                assertEquals("No errors", run("eu-elflint", "--gnu-ld", f.toString()).strip());
            }
            assertArrayEquals(object, ImageObject.write(key, image, List.of(regions.get(1), regions.get(0))),
                    "the same image and regions, in any order, make the same bytes");
        }
    }

    @Test
    void theTextSitsAtTheOldestRegionsAddressAndOnlyMatchingRegionsAreAccepted() {
        byte[] image = {(byte) 0xc3};
        ContentKey key = ContentKey.of(image);
        byte[] object = ImageObject.write(key, image, List.of(region(image, 0x2000, 9, "later"),
                region(image, 0x1000, 3, "first")));
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(object).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        assertEquals(0x1000, b.getLong(24), "entry = the oldest region's address");
        assertThrows(IllegalArgumentException.class, () -> ImageObject.write(key, image, List.of()));
        assertThrows(IllegalArgumentException.class, () -> ImageObject.write(ContentKey.of(new byte[] {1}), image,
                List.of(region(image, 0x1000, 3, "first"))));
        List<Region> many = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            many.add(region(image, 0x1000 + i, i, "r" + i));
        }
        byte[] capped = ImageObject.write(key, image, many);
        byte[] first = ImageObject.write(key, image, many.subList(0, ImageObject.MAX_REGIONS));
        assertArrayEquals(first, capped, "at most MAX_REGIONS records, the oldest");
    }

    static boolean has(String tool) {
        try {
            Process p = new ProcessBuilder(tool, "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    static String run(String... cmd) throws IOException, InterruptedException {
        Assumptions.assumeTrue(has(cmd[0]), cmd[0] + " is not installed (binutils, elfutils)");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), String.join(" ", cmd) + " hung");
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + ": " + out);
        return out;
    }
}

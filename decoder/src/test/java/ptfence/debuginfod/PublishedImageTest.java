package ptfence.debuginfod;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import ptfence.image.Elf;
import ptfence.publish.ImageObject;
import ptfence.region.BpfMetadata;
import ptfence.region.Region;
import ptfence.region.RegionKind;
import ptfence.region.RegionMetadata;
import ptfence.store.ContentKey;

/**
 * The project's ELF reader reads what the object writer writes (the one writer, archive's ImageObject, and the one
 * parser, PublishedImage): the build id, the bytes at their address, every region record with its metadata. An
 * object that is not the image asked for is refused with the reason, never half used.
 */
class PublishedImageTest {
    static Region region(byte[] image, long address, long from, String name, int progId) {
        BpfMetadata m = new BpfMetadata(progId, "0123456789abcdef", "prog", 26, new long[] {address},
                new int[] {image.length}, new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, 8, new byte[16], 8, new byte[8], 8,
                7, new byte[] {(byte) 0x9f, (byte) 0xeb, 1, 0}, new byte[24], 123456789L + from, 0);
        return new Region("boot-a", address, image.length, from, from + 1000, RegionKind.BPF_PROG, name,
                ContentKey.of(image), m);
    }

    @Test
    void theElfReaderReadsBackTheBytesAndEveryRegionRecord() throws Exception {
        Random rnd = new Random(8);
        for (int round = 0; round < 50; round++) {
            byte[] image = new byte[1 + rnd.nextInt(5000)];
            rnd.nextBytes(image);
            ContentKey key = ContentKey.of(image);
            long address = 0xffffffffc0000000L + rnd.nextInt(1 << 20);
            List<Region> regions = List.of(region(image, address, 10, "bpf_prog_0123456789abcdef_prog", 1),
                    region(image, address, 5000, "bpf_prog_0123456789abcdef_prog", 2));
            byte[] object = ImageObject.write(key, image, regions);
            Elf elf = Elf.of(Path.of("x"), object);
            assertArrayEquals(key.toBytes(), elf.buildId());
            assertEquals(address, elf.sections().stream().filter(s -> s.name().equals(".text")).findFirst()
                    .orElseThrow().addr());
            PublishedImage p = PublishedImage.parse(key, object);
            assertArrayEquals(image, p.bytes());
            assertEquals(regions, p.regions());
            assertEquals(regions.get(1).metadata(), p.metadataFor(regions.get(1).id(), address, "x"), "by id");
            assertEquals(regions.get(0).metadata(), p.metadataFor(12345, address,
                    "bpf_prog_0123456789abcdef_prog"), "another load of the same program: the oldest record");
            assertEquals(RegionMetadata.None.INSTANCE, p.metadataFor(12345, address + 1, "other"));
        }
    }

    @Test
    void anObjectThatIsNotTheImageAskedForIsRefusedWithTheReason() throws Exception {
        byte[] image = {0x55, 0x48, (byte) 0x89, (byte) 0xe5, 0x5d, (byte) 0xc3};
        byte[] other = {(byte) 0xc3};
        ContentKey key = ContentKey.of(image);
        byte[] object = ImageObject.write(key, image, List.of(region(image, 0x1000, 1, "p", 1)));
        byte[] otherObject = ImageObject.write(ContentKey.of(other), other, List.of(region(other, 0x1000, 1, "q", 1)));
        assertTrue(refusal(key, otherObject).startsWith("its build id is " + ContentKey.of(other).hex()));
        // the same object with one code byte changed: build id right, bytes wrong
        byte[] flipped = object.clone();
        int text = indexOf(flipped, image);
        flipped[text + 2] ^= 1;
        assertEquals("its .text (6 bytes) does not hash to the key", refusal(key, flipped));
        assertEquals("not a 64-bit little-endian ELF file", refusal(key, "<html>404</html>".getBytes()));
        byte[] newer = object.clone();
        int section = indexOf(newer, new byte[] {1, 0, 0, 0, 1, 0, 0, 0}); // version 1, one record
        ByteBuffer.wrap(newer).order(ByteOrder.LITTLE_ENDIAN).putInt(section, 2);
        assertTrue(refusal(key, newer).contains("version 2"), refusal(key, newer));
        for (int cut = 0; cut < object.length; cut += 7) {
            String why = refusal(key, Arrays.copyOf(object, cut)); // never an exception other than Refused
            assertTrue(!why.isEmpty());
        }
    }

    private static String refusal(ContentKey key, byte[] object) {
        return assertThrows(PublishedImage.Refused.class, () -> PublishedImage.parse(key, object)).getMessage();
    }

    private static int indexOf(byte[] hay, byte[] needle) {
        for (int i = 0; i + needle.length <= hay.length; i++) {
            if (Arrays.equals(hay, i, i + needle.length, needle, 0, needle.length)) {
                return i;
            }
        }
        throw new AssertionError("not found");
    }
}

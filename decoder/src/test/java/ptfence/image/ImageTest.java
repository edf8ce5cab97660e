package ptfence.image;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.BadInputException;

class ImageTest {
    private static byte[] filled(int n, int v) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) v);
        return b;
    }

    @Test
    void newerSectionOverridesTheOverlapAndSplitsTheOlder() {
        Section a = Section.of("a", 0x1000, filled(0x1000, 0xaa));
        Section b = Section.of("b", 0x1800, filled(0x100, 0xbb));
        Image img = new Image().add(a).add(b);
        assertSame(a, img.find(0x17ff, 0).section);
        assertSame(b, img.find(0x1800, 0).section);
        assertSame(b, img.find(0x18ff, 0).section);
        assertSame(a, img.find(0x1900, 0).section);
        assertNull(img.find(0x2000, 0));
        assertEquals(3, img.pieces().size());
        byte[] buf = new byte[4];
        assertEquals(4, img.read(0x17fe, 0, buf, 0, 4));
        assertArrayEquals(new byte[] {(byte) 0xaa, (byte) 0xaa, (byte) 0xbb, (byte) 0xbb}, buf);
        assertEquals(2, img.read(0x1ffe, 0, buf, 0, 4), "reads stop where nothing is mapped");
    }

    @Test
    void olderSectionFullyCoveredDisappears() {
        Image img = new Image().add(Section.of("a", 0x1000, filled(0x10, 1))).add(Section.of("b", 0x800, filled(0x1000, 2)));
        assertEquals(1, img.pieces().size());
        assertEquals("b", img.find(0x1000, 0).section.name());
    }

    @Test
    void timeBoundedSectionsHoldDifferentCodeAtDifferentTimes() {
        Section before = Section.of("v1", 0x4000, filled(0x100, 1)).during(0, 100);
        Section after = Section.of("v2", 0x4000, filled(0x100, 2)).during(100, Long.MAX_VALUE);
        Image img = new Image().add(before).add(after);
        assertSame(before, img.find(0x4010, 50).section);
        assertSame(after, img.find(0x4010, 100).section);
        assertNull(img.find(0x4010, -1));
    }

    @Test
    void sameBytesShareAContentId() {
        assertEquals(Section.of("x", 0, filled(8, 3)).contentId(), Section.of("y", 0x9000, filled(8, 3)).contentId());
    }

    @Test
    void rawSpecsFollowPtxedSyntax(@TempDir Path dir) throws IOException {
        Path f = dir.resolve("code.bin");
        Files.write(f, new byte[] {0, 1, 2, 3, 4, 5, 6, 7});
        Section whole = RawSection.parse(f + ":0x1000").sections().get(0);
        assertEquals(0x1000, whole.address());
        assertEquals(8, whole.size());
        Section from = RawSection.parse(f + ":0x2:0x1002").sections().get(0);
        assertEquals(0x1002, from.address());
        assertArrayEquals(new byte[] {2, 3, 4, 5, 6, 7}, from.bytes());
        Section range = RawSection.parse(f + ":2-4:0x500").sections().get(0);
        assertArrayEquals(new byte[] {2, 3}, range.bytes());
        assertThrows(BadInputException.class, () -> RawSection.parse(f.toString()));
        assertThrows(BadInputException.class, () -> RawSection.parse(f + ":9:0x100").sections());
    }

    @Test
    void elfExecutableSegmentsLoadAtTheirAddresses() {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path hello = Path.of(shared, "real/dynamorio_drpt2trace/test_simple.tracedir_2022-07-06/hello");
        org.junit.jupiter.api.Assertions.assertTrue(Files.exists(hello), "no hello ELF");
        // NOTES.md: executable PT_LOAD at 0x401000, file offset 0x1000, size 0x86fb1.
        var secs = ElfSegments.parse(hello.toString()).sections();
        assertEquals(1, secs.size());
        assertEquals(0x401000, secs.get(0).address());
        assertEquals(0x86fb1, secs.get(0).size());
        var moved = ElfSegments.parse(hello + ":0x7f0000000000").sections();
        // The lowest PT_LOAD (0x400000) moves to the base; the executable one keeps its distance.
        assertEquals(0x7f0000001000L, moved.get(0).address());
    }
}

package ptfence.perfdata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.BadInputException;

/**
 * ptfence's section naming a recording's text regions: written and read by the one codec (the round trip of every
 * feature is RoundTripTest's; perf's view of it PerfToolTest's); another tool's use of the bit stays raw; damage is a
 * one-line error naming the offset.
 */
class TextRegionsTest {
    @TempDir
    Path dir;

    private Path write(Feature f) throws Exception {
        Path p = dir.resolve("t.perf");
        try (PerfDataWriter w = PerfDataWriter.create(p, List.of(new AttrIds(Samples.ptAttr(), List.of(1L))))) {
            w.setFeature(f);
        }
        return p;
    }

    @Test
    void aSectionWithoutPtfencesMagicIsLeftRaw() throws Exception {
        ByteBuffer other = ByteBuffer.wrap("someone else's bytes at bit 255".getBytes());
        try (PerfDataFile f = PerfDataFile.open(write(new Feature.Raw(Feature.PTFENCE_TEXT, other)))) {
            assertTrue(f.features().textRegions().isEmpty());
            assertEquals(new Feature.Raw(Feature.PTFENCE_TEXT, other), f.features().get(Feature.PTFENCE_TEXT)
                    .orElseThrow());
        }
    }

    @Test
    void aDamagedListIsOneLineNamingWhere() throws Exception {
        ByteBuffer good = FeatureCodec.encode(Samples.textRegions());
        // the count says more regions than the section holds
        ByteBuffer bad = ByteBuffer.allocate(good.remaining()).order(ByteOrder.LITTLE_ENDIAN).put(good.duplicate());
        bad.putInt(12, 1000).flip();
        Path p = write(new Feature.Raw(Feature.PTFENCE_TEXT, bad));
        try (PerfDataFile f = PerfDataFile.open(p)) {
            BadInputException e = assertThrows(BadInputException.class, () -> f.features());
            assertTrue(e.getMessage().matches(".*t\\.perf: offset 0x[0-9a-f]+: feature 255: text regions count 1000.*"),
                    e.getMessage());
        }
        // a region cut short
        ByteBuffer cut = good.duplicate().limit(good.remaining() - 20);
        try (PerfDataFile f = PerfDataFile.open(write(new Feature.Raw(Feature.PTFENCE_TEXT, cut)))) {
            BadInputException e = assertThrows(BadInputException.class, () -> f.features());
            assertTrue(e.getMessage().contains("feature 255"), e.getMessage());
        }
    }
}

package ptfence.record;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import ptfence.debuginfod.NamedCode;
import ptfence.fence.RegionTracker;
import ptfence.perfdata.Feature;
import ptfence.region.Region;
import ptfence.region.RegionMetadata;

/**
 * Passes the fence's regions on to the archive and remembers where and when each was, so the perf.data can name
 * every text region the recording used ({@link Feature.TextRegions}): a decoder elsewhere fetches the images by
 * their keys (docs/fleet.md). Metadata is not remembered (the archive keeps it; the perf.data needs placement only).
 */
final class RegionLog implements RegionTracker.RegionWriter {
    private final RegionTracker.RegionWriter archive;
    private final Map<Long, Region> regions = new LinkedHashMap<>();

    RegionLog(RegionTracker.RegionWriter archive) {
        this.archive = archive;
    }

    @Override
    public void opened(Region region, byte[] bytes) throws IOException {
        archive.opened(region, bytes);
        remember(region);
    }

    @Override
    public void closed(Region region) throws IOException {
        archive.closed(region);
        remember(region);
    }

    @Override
    public void redrawn(Region region) throws IOException {
        archive.redrawn(region);
        remember(region);
    }

    @Override
    public void enriched(Region region) throws IOException {
        archive.enriched(region);
    }

    @Override
    public void flush() throws IOException {
        archive.flush();
    }

    /** A region the recording uses that the archive got by another way (the boot's kernel text). */
    void named(Region region) {
        remember(region);
    }

    private synchronized void remember(Region r) {
        regions.put(r.id(), new Region(r.bootId(), r.address(), r.length(), r.validFrom(), r.validTo(), r.kind(),
                r.name(), r.key(), RegionMetadata.None.INSTANCE));
    }

    /** The feature naming every region seen so far. */
    synchronized Feature.TextRegions feature(String recordingId, String bootId, long start, long end) {
        return NamedCode.feature(recordingId, bootId, start, end, List.copyOf(regions.values()));
    }
}

package ptfence.debuginfod;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import ptfence.perfdata.Feature;
import ptfence.region.Region;
import ptfence.region.RegionKind;
import ptfence.region.RegionMetadata;
import ptfence.store.ContentKey;

/**
 * A recording's text regions as its perf.data names them ({@link Feature.TextRegions}) and as the archive keeps
 * them ({@link Region}): the one mapping between the two, for the writers (ptrec, the forge) and the reader
 * (ptdecode, fetching what the local archive lacks).
 */
public final class NamedCode {
    private NamedCode() {}

    /** The feature naming these regions (oldest first) of a recording. */
    public static Feature.TextRegions feature(String recordingId, String bootId, long start, long end,
            Collection<Region> regions) {
        List<Region> sorted = new ArrayList<>(regions);
        sorted.sort(Comparator.comparingLong(Region::validFrom).thenComparingLong(Region::address));
        List<Feature.TextRegion> out = new ArrayList<>(sorted.size());
        for (Region r : sorted) {
            out.add(new Feature.TextRegion(r.address(), r.length(), r.validFrom(), r.validTo(), r.kind().name(),
                    r.name(), r.key().hex()));
        }
        return new Feature.TextRegions(recordingId, bootId, start, end, out);
    }

    /**
     * The region a named entry places, with the metadata given; null when the entry cannot be a region here (a kind
     * this build does not know, a malformed entry).
     */
    public static Region region(Feature.TextRegions named, Feature.TextRegion e, RegionMetadata metadata) {
        try {
            return new Region(named.bootId(), e.address(), e.length(), e.validFrom(), e.validTo(),
                    RegionKind.valueOf(e.kind()), e.name(), ContentKey.parse(e.key()), metadata);
        } catch (RuntimeException bad) {
            return null;
        }
    }
}

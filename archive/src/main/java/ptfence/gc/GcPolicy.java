package ptfence.gc;

import java.time.Duration;

/**
 * What gc may drop.
 *
 * @param keep       recordings created longer ago than this are dropped (unless pinned)
 * @param maxBytes   after that, while the images still referenced exceed this many bytes, the oldest
 *                   unpinned recordings are dropped too; {@code <= 0} means no limit
 * @param dryRun     decide and report, change nothing
 * @param opsPerTxn  deletions per write transaction: small, so a live capture never waits long
 */
public record GcPolicy(Duration keep, long maxBytes, boolean dryRun, int opsPerTxn) {
    /**
     * A recording whose perf.data is gone is dropped only once it is this old: an import names a perf.data that may
     * still be on its way, a capture's file may be moved into place after it ends.
     */
    public static final Duration PERF_DATA_GRACE = Duration.ofHours(1);

    /** The default retention of {@code ptarchive gc}. */
    public static final Duration DEFAULT_KEEP = Duration.ofDays(30);

    public GcPolicy {
        if (keep.isNegative()) {
            throw new IllegalArgumentException("--keep must not be negative");
        }
        if (opsPerTxn < 1) {
            throw new IllegalArgumentException("opsPerTxn must be positive");
        }
    }

    /** Keep 30 days, no size limit, for real. */
    public static GcPolicy defaults() {
        return new GcPolicy(DEFAULT_KEEP, 0, false, 500);
    }

    /** This policy as a dry run. */
    public GcPolicy asDryRun() {
        return new GcPolicy(keep, maxBytes, true, opsPerTxn);
    }
}

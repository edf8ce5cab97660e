package ptfence.gc;

import java.util.List;

/**
 * What a gc run decided and did.
 *
 * @param dryRun            nothing was changed
 * @param generation        the archive generation the run started (anything touched since was spared)
 * @param droppedRecordings recordings dropped, with why
 * @param regionsFreed      regions removed (or that would be, in a dry run)
 * @param imagesFreed       images removed
 * @param bytesFreed        bytes of those images
 * @param spared            candidates spared because a capture touched or a user pinned them while gc ran
 * @param leasesExpired     expired leases removed
 * @param keptRecordings    recordings left
 * @param keptImages        images left
 * @param keptBytes         bytes of images left
 */
public record GcReport(boolean dryRun, long generation, List<Dropped> droppedRecordings, long regionsFreed,
        long imagesFreed, long bytesFreed, long spared, long leasesExpired, long keptRecordings, long keptImages,
        long keptBytes) {

    /** A dropped recording and the reason ("older than 30d", "perf.data gone", "over --max-size"). */
    public record Dropped(String id, String reason) {}
}

package ptfence.fence;

import java.util.Map;

/**
 * What the fence did: images delivered per hook, and every way an image can be lost — none is silent.
 *
 * @param reserveFailures    in-kernel copies dropped because the ring was full (counted by the BPF programs)
 * @param submittedInKernel  records the BPF programs committed to the ring
 * @param incompleteImages   delivered images whose copy faulted or was truncated
 * @param functionListsCut   programs with more JITed functions than the hooks walk
 * @param userSpaceMissed    programs the user-space fence saw too late (gone before it could pin them)
 * @param metadataFetched    programs whose metadata (bpf_prog_info) was fetched on request
 * @param metadataMissing    programs whose metadata was asked for after they were gone
 * @param sinkErrors         images the sink refused (IOException)
 * @param recursionMisses    hook runs the kernel skipped because the hook was already running on that CPU
 * @param metadataFenced     programs whose whole metadata the LOAD hook read with their code
 * @param metadataIncomplete programs the LOAD hook saw whose metadata is partial (a fault, a record too large, an
 *                           image or a BTF object that did not arrive)
 */
public record FenceCounters(Map<Hook, Long> imagesByHook, long reserveFailures, long submittedInKernel,
                            long incompleteImages, long functionListsCut, long userSpaceMissed,
                            long metadataFetched, long metadataMissing, long sinkErrors,
                            long recursionMisses, long metadataFenced, long metadataIncomplete) {

    public long images(Hook h) { return imagesByHook.getOrDefault(h, 0L); }

    /** Images that should have been captured and were not. */
    public long losses() { return reserveFailures + userSpaceMissed + incompleteImages + functionListsCut + sinkErrors
            + recursionMisses; }

    public String summary() {
        StringBuilder b = new StringBuilder("fence images:");
        imagesByHook.forEach((h, n) -> { if (n > 0) b.append(' ').append(h.name().toLowerCase()).append('=').append(n); });
        b.append("; losses=").append(losses());
        if (reserveFailures > 0) b.append(" (ring full: ").append(reserveFailures).append(')');
        if (userSpaceMissed > 0) b.append(" (user-space fence too late: ").append(userSpaceMissed).append(')');
        if (incompleteImages > 0) b.append(" (incomplete copies: ").append(incompleteImages).append(')');
        if (functionListsCut > 0) b.append(" (function lists cut: ").append(functionListsCut).append(')');
        if (recursionMisses > 0) b.append(" (hook runs skipped by the kernel: ").append(recursionMisses).append(')');
        if (sinkErrors > 0) b.append(" (sink errors: ").append(sinkErrors).append(')');
        if (metadataFenced > 0 || metadataIncomplete > 0) {
            b.append("; metadata fenced=").append(metadataFenced);
            if (metadataIncomplete > 0) b.append(" partial=").append(metadataIncomplete);
        }
        if (metadataMissing > 0) b.append("; metadata missing for ").append(metadataMissing).append(" programs");
        return b.toString();
    }
}

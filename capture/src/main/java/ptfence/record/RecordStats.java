package ptfence.record;

import java.util.Map;
import java.util.TreeMap;
import ptfence.perfdata.RecordTypes;

/** What the rings delivered: records by type, LOST, AUX flags, PT bytes per CPU. Only the loop thread writes it. */
final class RecordStats {
    static final long AUX_TRUNCATED = 0x1, AUX_OVERWRITE = 0x2, AUX_PARTIAL = 0x4, AUX_COLLISION = 0x8;

    final Map<Integer, Long> byType = new TreeMap<>();
    final Map<Integer, Long> ptBytes = new TreeMap<>();
    /** Records the kernel dropped (PERF_RECORD_LOST), by ring: kernel-text, sideband, pt. */
    final Map<String, Long> lost = new TreeMap<>();
    long auxTruncated, auxPartial, auxCollision;
    long snapshots;
    long kernelReads, kernelReadFailures, metadataErrors;
    /** Kernel-text records whose header.size overstated their content (see KernelRecordSizes). */
    long sizeRepairs;
    /** Programs loaded before the recording, described by synthesized KSYMBOL/BPF_EVENT records. */
    long synthesized;
    private long records;

    void count(int type) {
        byType.merge(type, 1L, Long::sum);
        records++;
    }

    long records() {
        return records;
    }

    void auxFlags(long flags) {
        if ((flags & AUX_TRUNCATED) != 0) auxTruncated++;
        if ((flags & AUX_PARTIAL) != 0) auxPartial++;
        if ((flags & AUX_COLLISION) != 0) auxCollision++;
    }

    /** An immutable copy for the summary. */
    RecordSummary.Counts snapshot() {
        Map<String, Long> names = new TreeMap<>();
        byType.forEach((t, n) -> names.put(RecordTypes.name(t), n));
        return new RecordSummary.Counts(Map.copyOf(names), Map.copyOf(ptBytes), Map.copyOf(lost), auxTruncated, auxPartial,
                auxCollision, snapshots, kernelReads, kernelReadFailures, metadataErrors, sizeRepairs, synthesized);
    }
}

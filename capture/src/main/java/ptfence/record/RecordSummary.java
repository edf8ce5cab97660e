package ptfence.record;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import ptfence.fence.Hook;

/**
 * What ptrec prints at the end: PT bytes per CPU, AUX losses, records by type, images archived (by hook) and the
 * fence's losses.
 *
 * @param fenceLosses -1 when no fence ran
 * @param commandExit the traced command's exit status (128+N if signal N ended it), -1 without a command or when ptrec
 *                    ended it (a SIGINT or SIGTERM to ptrec)
 * @param clockNote   how the fence's CLOCK_MONOTONIC times were converted to perf's clock, or "" if they were not
 * @param kernelTextNote whether this boot's kernel text and kallsyms were archived now or found archived, or ""
 * @param archiveNote what went wrong with the recording in the archive ("" if nothing)
 * @param bpfOutputNote bpf-output samples recorded and lost, and from which maps, or "" without --bpf-output
 * @param runsOn        "BPF program N runs on EVENT" per program found attached to a perf event (docs/ptrec.md)
 */
public record RecordSummary(Path output, long records, long dataBytes, Counts counts, int bpfProgramsDescribed,
                            long regionsArchived, Map<Hook, Long> imagesByHook, long fenceLosses, String fenceSummary,
                            String fenceNote, String recordingId, int commandExit, String clockNote,
                            String kernelTextNote, String archiveNote, String bpfOutputNote, List<String> runsOn) {

    public RecordSummary {
        runsOn = List.copyOf(runsOn);
    }

    public RecordSummary(Path output, long records, long dataBytes, Counts counts, int bpfProgramsDescribed,
            long regionsArchived, Map<Hook, Long> imagesByHook, long fenceLosses, String fenceSummary,
            String fenceNote, String recordingId, int commandExit, String clockNote, String kernelTextNote,
            String archiveNote, String bpfOutputNote) {
        this(output, records, dataBytes, counts, bpfProgramsDescribed, regionsArchived, imagesByHook, fenceLosses,
                fenceSummary, fenceNote, recordingId, commandExit, clockNote, kernelTextNote, archiveNote,
                bpfOutputNote, List.of());
    }

    /** The ring-side counts. */
    public record Counts(Map<String, Long> recordsByType, Map<Integer, Long> ptBytesByCpu, Map<String, Long> lostByRing,
                         long auxTruncated, long auxPartial, long auxCollision, long snapshots, long kernelReads,
                         long kernelReadFailures, long metadataErrors, long sizeRepairs, long synthesized) {}

    public void print(PrintStream out) {
        out.printf("[ ptrec: wrote %s: %d records, %.3f MB ]%n", output, records, dataBytes / 1e6);
        if (!counts.ptBytesByCpu().isEmpty()) {
            StringBuilder b = new StringBuilder("[ ptrec: PT bytes per CPU:");
            counts.ptBytesByCpu().forEach((cpu, n) -> b.append(" cpu").append(cpu).append('=').append(n));
            out.println(b.append(" ]"));
        }
        out.printf("[ ptrec: AUX truncated=%d partial=%d collision=%d; lost records: kernel-text=%d sideband=%d "
                + "switch=%d%s ]%n",
                counts.auxTruncated(), counts.auxPartial(), counts.auxCollision(),
                counts.lostByRing().getOrDefault("text", 0L), counts.lostByRing().getOrDefault("sideband", 0L)
                        + counts.lostByRing().getOrDefault("pt", 0L), counts.lostByRing().getOrDefault("switch", 0L),
                counts.snapshots() > 0 ? "; snapshots=" + counts.snapshots() : "");
        if (counts.sizeRepairs() > 0) {
            out.printf("[ ptrec: %d kernel-text records had an oversized header.size from the kernel; written with "
                    + "their true size ]%n", counts.sizeRepairs());
        }
        StringBuilder types = new StringBuilder("[ ptrec: records:");
        counts.recordsByType().forEach((t, n) -> types.append(' ').append(t).append('=').append(n));
        out.println(types.append(" ]"));
        if (fenceLosses >= 0) {
            out.printf("[ ptrec: archived %d regions (recording %s); %s ]%n", regionsArchived, recordingId,
                    fenceSummary);
            if (!fenceNote.isEmpty()) out.println("[ ptrec: " + fenceNote + " ]");
            if (!kernelTextNote.isEmpty()) out.println("[ ptrec: " + kernelTextNote + " ]");
            if (counts.kernelReads() + counts.kernelReadFailures() > 0) {
                out.printf("[ ptrec: out-of-line text copied on KSYMBOL: %d, failed: %d ]%n", counts.kernelReads(),
                        counts.kernelReadFailures());
            }
        } else if (recordingId != null) {
            out.printf("[ ptrec: recording %s registered; no fence ran ]%n", recordingId);
        }
        if (!archiveNote.isEmpty()) out.println("[ ptrec: " + archiveNote + " ]");
        if (!bpfOutputNote.isEmpty()) out.println("[ ptrec: " + bpfOutputNote + " ]");
        runsOn.forEach(l -> out.println("[ ptrec: " + l + " ]"));
        if (!clockNote.isEmpty()) out.println("[ ptrec: " + clockNote + " ]");
        if (bpfProgramsDescribed > 0 || counts.metadataErrors() > 0) {
            out.printf("[ ptrec: BPF programs described in the header: %d (%d loaded before the start)%s ]%n",
                    bpfProgramsDescribed, counts.synthesized(),
                    counts.metadataErrors() > 0 ? ", metadata errors: " + counts.metadataErrors() : "");
        }
    }
}

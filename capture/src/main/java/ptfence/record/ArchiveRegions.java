package ptfence.record;

import java.io.IOException;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicLong;
import ptfence.fence.RegionTracker;
import ptfence.fence.TextRegion;
import ptfence.recording.Recordings;
import ptfence.region.BpfMetadata;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

/**
 * Writes the fence's regions into the archive and links each to the running recording, so gc keeps what the
 * recording needs. One archive transaction per region: a killed ptrec keeps every region written so far.
 */
final class ArchiveRegions implements RegionTracker.RegionWriter {
    private final Archive archive;
    private final String recordingId;
    private final AtomicLong opened = new AtomicLong();
    private final AtomicLong closed = new AtomicLong();

    ArchiveRegions(Archive archive, String recordingId) {
        this.archive = archive;
        this.recordingId = recordingId;
    }

    @Override
    public void opened(TextRegion region) throws IOException {
        archive.write(b -> {
            ContentKey key = b.put(region.bytes());
            long id = RegionIndex.add(b, toRegion(region, key));
            Recordings.link(b, recordingId, id);
            return null;
        });
        opened.incrementAndGet();
    }

    @Override
    public void closed(TextRegion region) throws IOException {
        Region r = toRegion(region, ContentKey.of(region.bytes()));
        archive.write(b -> RegionIndex.close(b, r.id(), region.validToNs()));
        closed.incrementAndGet();
    }

    long regionsOpened() {
        return opened.get();
    }

    long regionsClosed() {
        return closed.get();
    }

    static Region toRegion(TextRegion t, ContentKey key) {
        RegionKind kind = switch (t.kind()) {
            case "bpf_trampoline" -> RegionKind.BPF_TRAMPOLINE;
            case "bpf_dispatcher" -> RegionKind.BPF_DISPATCHER;
            case "kernel_text" -> RegionKind.KERNEL_TEXT;
            default -> t.name().endsWith("_F") ? RegionKind.BPF_SUBPROG : RegionKind.BPF_PROG;
        };
        BpfMetadata meta = t.progId() != 0 || t.tag() != 0
                ? BpfMetadata.of(t.progId(), t.tag() == 0 ? "" : HexFormat.of().toHexDigits(t.tag()), t.name(), 0)
                : null;
        long from = t.validFromNs();
        return new Region(t.bootId(), t.address(), t.bytes().length, from, Region.OPEN, kind, t.name(), key, meta);
    }
}

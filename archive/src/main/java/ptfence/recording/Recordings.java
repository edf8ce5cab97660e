package ptfence.recording;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;
import ptfence.store.Batch;
import ptfence.store.Snapshot;
import ptfence.store.Table;

/**
 * The recordings registry (gc's roots), pins and leases.
 *
 * <pre>{@code
 * // a capture, start to end: the lease keeps the recording live (gc never drops it) until it is closed
 * Lease lease = Recordings.begin(archive, Recording.started(id, path, boot, t0), "ptrec pid " + pid,
 *         Duration.ofMinutes(10));
 * archive.write(b -> { long r = RegionIndex.add(b, region); Recordings.link(b, id, r); return null; });
 * Recordings.renewLease(archive, lease.id(), Duration.ofMinutes(10));  // every few minutes
 * archive.write(b -> Recordings.finish(b, id, tEnd));
 * Recordings.closeLease(archive, lease.id());
 * }</pre>
 */
public final class Recordings {
    private static final byte[] EMPTY = new byte[0];

    private Recordings() {}

    /** Registers (or replaces) a recording. */
    public static void register(Batch b, Recording r) {
        b.putRaw(Table.RECORDINGS, idKey(r.id()), RecordingCodec.encode(r));
    }

    /** Records that a recording needs a region (idempotent; touches the region so a running gc keeps it). */
    public static void link(Batch b, String recordingId, long regionId) {
        if (b.raw(Table.RECORDINGS, idKey(recordingId)) == null) {
            throw new IllegalArgumentException("recording " + recordingId + " is not registered");
        }
        if (!RegionIndex.touch(b, regionId)) {
            throw new IllegalArgumentException("region " + Region.idHex(regionId) + " is not in the archive");
        }
        b.putRaw(Table.RECORDING_REGIONS, linkKey(recordingId, regionId), EMPTY);
    }

    /** Links many regions. */
    public static void linkAll(Batch b, String recordingId, Collection<Long> regionIds) {
        for (long id : regionIds) {
            link(b, recordingId, id);
        }
    }

    /** Sets a recording's end time; false if unknown. */
    public static boolean finish(Batch b, String recordingId, long endTime) {
        Optional<Recording> r = get(b, recordingId);
        r.ifPresent(rec -> register(b, rec.finishedAt(endTime)));
        return r.isPresent();
    }

    /** The recording with this id. */
    public static Optional<Recording> get(Snapshot s, String id) {
        byte[] v = s.raw(Table.RECORDINGS, idKey(id));
        return v == null ? Optional.empty() : Optional.of(RecordingCodec.decode(v, "recording " + id));
    }

    /** All recordings, oldest (by creation) first. */
    public static List<Recording> all(Snapshot s) {
        List<Recording> list = new ArrayList<>();
        s.forEachPrefix(Table.RECORDINGS, EMPTY, (k, v) -> list.add(RecordingCodec.decode(v,
                "recording " + new String(k, StandardCharsets.UTF_8))));
        list.sort(java.util.Comparator.comparingLong(Recording::createdMillis).thenComparing(Recording::id));
        return list;
    }

    /** Ids of the regions a recording needs. */
    public static List<Long> regionIds(Snapshot s, String recordingId) {
        List<Long> ids = new ArrayList<>();
        s.forEachPrefix(Table.RECORDING_REGIONS, linkPrefix(recordingId), (k, v) -> ids.add(RegionIndex.idOf(k)));
        return ids;
    }

    /** The regions a recording needs (the query "all regions of a recording"). */
    public static List<Region> regions(Snapshot s, String recordingId) {
        List<Region> list = new ArrayList<>();
        for (long id : regionIds(s, recordingId)) {
            RegionIndex.get(s, id).ifPresent(list::add);
        }
        list.sort(java.util.Comparator.comparingLong(Region::validFrom));
        return list;
    }

    /** Removes a recording and its links (not its regions; gc decides those). */
    public static boolean delete(Batch b, String recordingId) {
        for (long id : regionIds(b, recordingId)) {
            b.deleteRaw(Table.RECORDING_REGIONS, linkKey(recordingId, id));
        }
        return b.deleteRaw(Table.RECORDINGS, idKey(recordingId));
    }

    /**
     * Checks every recording, pin and lease decodes and every link points at a region that exists. Problems go to
     * the sink, one line each; returns the number of recordings.
     */
    /** Recording records written before they carried a checksum (version 1): read as they are, unchecked. */
    public static long unchecked(Snapshot s) {
        long[] n = {0};
        s.forEachPrefix(Table.RECORDINGS, EMPTY, (k, v) -> {
            if (!RecordingCodec.checked(v)) {
                n[0]++;
            }
            return true;
        });
        return n[0];
    }

    public static long check(Snapshot s, java.util.function.Consumer<String> problems) {
        long[] n = {0};
        s.forEachPrefix(Table.RECORDINGS, EMPTY, (k, v) -> {
            n[0]++;
            try {
                RecordingCodec.decode(v, "recording " + new String(k, StandardCharsets.UTF_8));
            } catch (RuntimeException e) {
                problems.accept(e.getMessage());
            }
            return true;
        });
        s.forEachPrefix(Table.RECORDING_REGIONS, EMPTY, (k, v) -> {
            int nul = k.length - 9;
            String rec = nul >= 0 ? new String(k, 0, nul, StandardCharsets.UTF_8) : "?";
            if (nul < 0 || s.raw(Table.RECORDINGS, idKey(rec)) == null) {
                problems.accept("link of unknown recording '" + rec + "'");
            } else if (s.raw(Table.REGIONS, RegionIndex.idKey(RegionIndex.idOf(k))) == null) {
                // present is enough here: a record that does not decode is RegionIndex.check's to report
                problems.accept("recording " + rec + " needs region " + Region.idHex(RegionIndex.idOf(k))
                        + " which is missing");
            }
            return true;
        });
        s.forEachPrefix(Table.LEASES, EMPTY, (k, v) -> {
            try {
                RecordingCodec.decodeLease(v, "lease " + new String(k, StandardCharsets.UTF_8));
            } catch (RuntimeException e) {
                problems.accept(e.getMessage());
            }
            return true;
        });
        s.forEachPrefix(Table.PINS, EMPTY, (k, v) -> {
            try {
                PinTarget.fromKey(k);
                if (v.length != 8) {
                    problems.accept("pin " + new String(k, StandardCharsets.UTF_8) + ": malformed value");
                }
            } catch (RuntimeException e) {
                problems.accept("pin: " + e.getMessage());
            }
            return true;
        });
        return n[0];
    }

    // ---- pins ----

    /** Pins something so gc never takes it: a recording, an image, or every region with a name. */
    public static void pin(Batch b, PinTarget target) {
        b.putRaw(Table.PINS, target.key(), ByteBuffer.allocate(8).putLong(System.currentTimeMillis()).array());
    }

    /** Unpins; false if it was not pinned. */
    public static boolean unpin(Batch b, PinTarget target) {
        return b.deleteRaw(Table.PINS, target.key());
    }

    /** All pins. */
    public static List<PinTarget> pins(Snapshot s) {
        List<PinTarget> list = new ArrayList<>();
        s.forEachPrefix(Table.PINS, EMPTY, (k, v) -> list.add(PinTarget.fromKey(k)));
        return list;
    }

    /** Whether this exact target is pinned. */
    public static boolean isPinned(Snapshot s, PinTarget target) {
        return s.raw(Table.PINS, target.key()) != null;
    }

    // ---- leases ----

    /** Opens a lease for a live capture (own short write transaction). */
    public static Lease openLease(Archive archive, String holder, Duration ttl) {
        return archive.write(b -> openLease(b, holder, ttl, ""));
    }

    /** Opens a lease that also keeps one recording live, registered now or later (an import registers it last). */
    public static Lease openLease(Archive archive, String holder, Duration ttl, String recordingId) {
        return archive.write(b -> openLease(b, holder, ttl, recordingId));
    }

    /**
     * A capture begins: in one transaction, a lease naming the recording and the recording itself (registered
     * unless it is there already: a capture whose lease lapsed begins again with the same recording). From this
     * commit until the lease is closed or runs out, gc keeps the recording whatever {@code --keep} or its perf.data
     * say, and everything touched since.
     */
    public static Lease begin(Archive archive, Recording recording, String holder, Duration ttl) {
        return archive.write(b -> {
            if (b.raw(Table.RECORDINGS, idKey(recording.id())) == null) {
                register(b, recording);
            }
            return openLease(b, holder, ttl, recording.id());
        });
    }

    private static Lease openLease(Batch b, String holder, Duration ttl, String recordingId) {
        long now = System.currentTimeMillis();
        Lease l = new Lease(UUID.randomUUID().toString(), holder, b.advanceGeneration(), now, now + ttl.toMillis(),
                recordingId);
        b.putRaw(Table.LEASES, idKey(l.id()), RecordingCodec.encode(l));
        return l;
    }

    /** Whether a lease that holds at {@code nowMillis} names this recording: it is live, gc keeps it. */
    public static boolean isLive(Snapshot s, String recordingId, long nowMillis) {
        return leases(s).stream().anyMatch(l -> l.liveAt(nowMillis) && l.recording().equals(recordingId));
    }

    /** Extends a lease; false if it is gone (expired and removed by gc: open a new one). */
    public static boolean renewLease(Archive archive, String leaseId, Duration ttl) {
        return archive.write(b -> {
            byte[] v = b.raw(Table.LEASES, idKey(leaseId));
            if (v == null) {
                return false;
            }
            Lease l = RecordingCodec.decodeLease(v, "lease " + leaseId);
            Lease renewed = new Lease(l.id(), l.holder(), l.fromGeneration(), l.startedMillis(),
                    System.currentTimeMillis() + ttl.toMillis(), l.recording());
            b.putRaw(Table.LEASES, idKey(leaseId), RecordingCodec.encode(renewed));
            return true;
        });
    }

    /** Ends a lease (the capture registered and linked what it needs). */
    public static boolean closeLease(Archive archive, String leaseId) {
        return archive.write(b -> deleteLease(b, leaseId));
    }

    /** Removes a lease record. */
    public static boolean deleteLease(Batch b, String leaseId) {
        return b.deleteRaw(Table.LEASES, idKey(leaseId));
    }

    /** All leases, live or expired. */
    public static List<Lease> leases(Snapshot s) {
        List<Lease> list = new ArrayList<>();
        s.forEachPrefix(Table.LEASES, EMPTY, (k, v) -> list.add(RecordingCodec.decodeLease(v,
                "lease " + new String(k, StandardCharsets.UTF_8))));
        return list;
    }

    private static byte[] idKey(String id) {
        return id.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] linkPrefix(String recordingId) {
        byte[] id = idKey(recordingId);
        return ByteBuffer.allocate(id.length + 1).put(id).put((byte) 0).array();
    }

    private static byte[] linkKey(String recordingId, long regionId) {
        byte[] p = linkPrefix(recordingId);
        return ByteBuffer.allocate(p.length + 8).put(p).putLong(regionId).array();
    }
}

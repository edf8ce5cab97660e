package ptfence.fence;

import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Writes the fence's regions into the archive: each image into the content store, each region into the region
 * index (closed at its FREE), each linked to the recording so that gc keeps what the recording needs.
 * <p>
 * A commit costs about 0.35 ms, so regions are written in batches: at most {@code maxDelay} after they arrive (a
 * timer flushes an idle batch) or as soon as {@code maxBatch} operations are pending. A killed recorder loses at most
 * the last {@code maxDelay} of images; everything committed before stays.
 */
public final class ArchiveSink implements RegionTracker.RegionWriter, AutoCloseable {
    private sealed interface Op permits Opened, Closed, Enriched, Redrawn {}

    private record Opened(Region region, byte[] bytes) implements Op {}

    private record Closed(Region region) implements Op {}

    private record Enriched(Region region) implements Op {}

    private record Redrawn(Region region) implements Op {}

    private final Archive archive;
    private final String recordingId;
    private final int maxBatch;
    private final ScheduledExecutorService timer;
    private List<Op> pending = new ArrayList<>();
    private long regionsAdded, regionsClosed, commits, metadataTooLate;
    /** What the timer's last flush failed with, for the next flush the fence makes to report. */
    private Exception failure;

    /**
     * @param recordingId a recording already registered in the archive (regions are linked to it), or null
     */
    public ArchiveSink(Archive archive, String recordingId, Duration maxDelay, int maxBatch) {
        this.archive = archive;
        this.recordingId = recordingId;
        this.maxBatch = maxBatch;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "fence-archive-flush");
            t.setDaemon(true);
            return t;
        });
        long ms = Math.max(1, maxDelay.toMillis());
        timer.scheduleWithFixedDelay(this::flushQuietly, ms, ms, TimeUnit.MILLISECONDS);
    }

    public ArchiveSink(Archive archive, String recordingId) {
        this(archive, recordingId, Duration.ofMillis(100), 1024);
    }

    @Override
    public synchronized void opened(Region region, byte[] bytes) throws IOException {
        pending.add(new Opened(region, bytes));
        if (pending.size() >= maxBatch) flush();
    }

    @Override
    public synchronized void closed(Region region) throws IOException {
        pending.add(new Closed(region));
        if (pending.size() >= maxBatch) flush();
    }

    @Override
    public synchronized void redrawn(Region region) throws IOException {
        pending.add(new Redrawn(region));
        if (pending.size() >= maxBatch) flush();
    }

    /**
     * Richer metadata for a region: swapped in if the region is still in the pending batch, else the stored record
     * is rewritten with it in the next commit (counted in {@link #metadataTooLate} if the region is not there).
     */
    @Override
    public synchronized void enriched(Region region) throws IOException {
        long id = region.id();
        for (int i = pending.size() - 1; i >= 0; i--) {
            if (pending.get(i) instanceof Opened o && o.region().id() == id) {
                pending.set(i, new Opened(region, o.bytes()));
                return;
            }
        }
        pending.add(new Enriched(region));
        if (pending.size() >= maxBatch) flush();
    }

    /** Metadata for a region the archive does not hold (kept in perf.data's BPF_PROG_INFO only). */
    public synchronized long metadataTooLate() { return metadataTooLate; }

    @Override
    public synchronized void flush() throws IOException {
        if (failure != null) {
            Exception f = failure;
            failure = null;
            if (f instanceof IOException io) throw io;
            throw (RuntimeException) f;
        }
        if (pending.isEmpty()) return;
        List<Op> ops = pending;
        pending = new ArrayList<>();
        try {
            long[] counts = archive.write(b -> {
                long added = 0, closed = 0, unknown = 0;
                for (Op op : ops) {
                    if (op instanceof Opened o) {
                        ContentKey key = b.put(o.bytes());
                        if (!key.equals(o.region().key()))
                            throw new IllegalStateException("region " + o.region().name() + ": key mismatch");
                        long id = RegionIndex.add(b, o.region());
                        if (recordingId != null) Recordings.link(b, recordingId, id);
                        added++;
                    } else if (op instanceof Closed c) {
                        if (RegionIndex.close(b, c.region().id(), c.region().validTo())) closed++;
                    } else if (op instanceof Enriched e) {
                        if (!RegionIndex.enrich(b, e.region())) unknown++;
                    } else if (op instanceof Redrawn r) {
                        if (!RegionIndex.redraw(b, r.region().id(), r.region().validTo())) unknown++;
                    }
                }
                return new long[] {added, closed, unknown};
            });
            regionsAdded += counts[0];
            regionsClosed += counts[1];
            metadataTooLate += counts[2];
            commits++;
        } catch (RuntimeException e) {
            ops.addAll(pending); // keep them for the next attempt, in order
            pending = ops;
            if (e instanceof ptfence.cli.BadInputException) {
                // the archive's state, not ptrec's fault (another process's lock, a full disk): one line, exit 2
                throw new ptfence.cli.BadInputException(e.getMessage() + " (" + ops.size() + " fence regions not "
                        + "written)", e);
            }
            throw new IOException("archive " + archive.directory() + ": writing " + ops.size()
                    + " fence regions failed: " + e.getMessage(), e);
        }
    }

    private synchronized void flushQuietly() {
        try {
            flush();
        } catch (IOException | RuntimeException e) {
            failure = e; // reported by the next flush the fence makes (a timer task that throws is never run again)
        }
    }

    public synchronized long regionsAdded() { return regionsAdded; }

    public synchronized long regionsClosed() { return regionsClosed; }

    public synchronized long commits() { return commits; }

    @Override
    public void close() throws IOException {
        timer.shutdownNow();
        flush();
    }
}

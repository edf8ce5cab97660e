package ptfence.gc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import ptfence.cli.Progress;
import ptfence.recording.Lease;
import ptfence.recording.PinTarget;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;
import ptfence.store.Batch;
import ptfence.store.ContentKey;
import ptfence.store.ImageInfo;
import ptfence.store.Snapshot;

/**
 * Mark and sweep over the archive.
 *
 * <p>Roots: recordings that are kept — live (a lease that has not run out names it: a capture from its first
 * commit to its end, whatever {@code --keep} or its perf.data say), pinned, or neither older than {@code --keep}
 * nor with its perf.data gone (a recording whose perf.data is gone is dropped only once it is
 * {@link GcPolicy#PERF_DATA_GRACE} old, and one still running without a live lease — a crashed capture — only by
 * age, counted from its perf.data's last write); pins; and live leases (everything touched since the lease's
 * generation). Marked: the regions those recordings link, the regions with pinned names, and the images of all
 * marked regions.
 *
 * <p>Safe alongside captures and readers: the run first starts a new archive generation in its own
 * write transaction, then marks in a read snapshot, then sweeps in short write transactions that re-check
 * each candidate and spare anything touched in the new generation (a capture that put, added or linked
 * it meanwhile) and any recording a lease made live meanwhile. Sweep order is recordings, then regions, then
 * images, so every committed state keeps the invariant "a region's image is present" and a kill at any moment
 * leaves a consistent archive; running gc again finishes the job (idempotent).
 *
 * <p>It deletes nothing from a damaged archive: before its first write it checks, in one snapshot, every record it
 * decides by (regions and their indexes, recordings and their links, leases, pins) and refuses with one line
 * naming the first problem. Image bytes are not re-hashed here (every read does that; {@code ptarchive verify}
 * re-hashes them all).
 */
public final class GarbageCollector {
    private GarbageCollector() {}

    /** Runs gc now. */
    public static GcReport run(Archive archive, GcPolicy policy) {
        return run(archive, policy, System.currentTimeMillis());
    }

    /** Runs gc now, reporting its phases to {@code progress}. */
    public static GcReport run(Archive archive, GcPolicy policy, Progress progress) {
        return run(archive, policy, System.currentTimeMillis(), progress);
    }

    /** Runs gc as if the wall clock read {@code nowMillis} (tests). */
    public static GcReport run(Archive archive, GcPolicy policy, long nowMillis) {
        return run(archive, policy, nowMillis, Progress.NONE);
    }

    private static GcReport run(Archive archive, GcPolicy policy, long nowMillis, Progress progress) {
        progress.phase("checking", 0);
        requireUndamaged(archive);
        progress.phase("marking", 0);
        long generation = policy.dryRun() ? archive.read(Snapshot::generation) + 1
                : archive.write(Batch::advanceGeneration);
        Plan plan = archive.read(s -> mark(s, policy, nowMillis));
        if (policy.dryRun()) {
            return plan.report(true, generation, 0);
        }
        Swept swept = sweep(archive, policy, plan, generation, nowMillis, progress);
        GcReport planned = plan.report(false, generation, swept.spared);
        // what was dropped: a recording pinned or begun again meanwhile, or dropped by a concurrent gc, is not
        List<GcReport.Dropped> dropped = planned.droppedRecordings().stream()
                .filter(d -> swept.droppedIds.contains(d.id())).toList();
        return new GcReport(false, generation, dropped, swept.regions, swept.images,
                swept.bytes, swept.spared, planned.leasesExpired(), planned.keptRecordings(),
                planned.keptImages() + (plan.images.size() - swept.images),
                planned.keptBytes() + (planned.bytesFreed() - swept.bytes));
    }

    /**
     * The records gc decides by, checked in one snapshot before anything is written: a flipped bit in a link or a
     * region record would otherwise make gc free what a kept recording needs.
     */
    static void requireUndamaged(Archive archive) {
        List<String> problems = new ArrayList<>();
        archive.read(s -> {
            RegionIndex.check(s, problems::add);
            Recordings.check(s, problems::add);
            return null;
        });
        if (!problems.isEmpty()) {
            throw new ptfence.cli.BadInputException("archive " + archive.directory() + ": damaged ("
                    + problems.get(0) + (problems.size() > 1 ? "; " + (problems.size() - 1) + " more problem(s)" : "")
                    + "); gc deletes nothing from a damaged archive: run 'ptarchive verify'");
        }
    }

    /** What the mark phase decided. */
    private static final class Plan {
        final List<GcReport.Dropped> dropped = new ArrayList<>();
        final List<Long> regions = new ArrayList<>();
        final Map<ContentKey, Long> images = new HashMap<>();
        final List<String> expiredLeases = new ArrayList<>();
        long keptRecordings;
        long keptImages;
        long keptBytes;

        GcReport report(boolean dryRun, long generation, long spared) {
            long bytes = images.values().stream().mapToLong(Long::longValue).sum();
            return new GcReport(dryRun, generation, List.copyOf(dropped), regions.size(), images.size(), bytes,
                    spared, expiredLeases.size(), keptRecordings, keptImages, keptBytes);
        }
    }

    private static Plan mark(Snapshot s, GcPolicy policy, long now) {
        Plan plan = new Plan();
        Set<String> pinnedRecordings = new HashSet<>();
        Set<ContentKey> pinnedImages = new HashSet<>();
        Set<String> pinnedNames = new HashSet<>();
        for (PinTarget p : Recordings.pins(s)) {
            switch (p.type()) {
                case RECORDING -> pinnedRecordings.add(p.value());
                case IMAGE -> {
                    if (ContentKey.isHex(p.value()) && p.value().length() == 64) {
                        pinnedImages.add(ContentKey.parse(p.value()));
                    }
                }
                case NAME -> pinnedNames.add(p.value());
            }
        }
        long leaseGeneration = Long.MAX_VALUE;
        Set<String> liveRecordings = new HashSet<>();
        for (Lease l : Recordings.leases(s)) {
            if (l.liveAt(now)) {
                leaseGeneration = Math.min(leaseGeneration, l.fromGeneration());
                if (!l.recording().isEmpty()) {
                    liveRecordings.add(l.recording());
                }
            } else {
                plan.expiredLeases.add(l.id());
            }
        }

        // Recordings: keep or drop, oldest first (the order --max-size drops in).
        List<Recording> kept = new ArrayList<>();
        long cutoff = now - policy.keep().toMillis();
        for (Recording r : Recordings.all(s)) {
            if (pinnedRecordings.contains(r.id()) || liveRecordings.contains(r.id())) {
                kept.add(r);
            } else if (r.endTime() != Recording.RUNNING
                    && now - r.createdMillis() >= GcPolicy.PERF_DATA_GRACE.toMillis() && perfDataGone(r)) {
                plan.dropped.add(new GcReport.Dropped(r.id(), "perf.data gone (" + r.perfDataPath() + ")"));
            } else if (lastActiveMillis(r) < cutoff) {
                plan.dropped.add(new GcReport.Dropped(r.id(), "older than " + policy.keep()));
            } else {
                kept.add(r);
            }
        }

        // Regions and images held by something other than a droppable recording.
        Map<Long, Region> allRegions = new HashMap<>();
        for (Region r : RegionIndex.all(s, r -> true)) {
            allRegions.put(r.id(), r);
        }
        Set<Long> fixedRegions = new HashSet<>();
        for (Region r : allRegions.values()) {
            if (pinnedNames.contains(r.name())
                    || RegionIndex.touchGeneration(s, r.id()) >= leaseGeneration) {
                fixedRegions.add(r.id());
            }
        }
        Map<ContentKey, Long> imageSizes = new HashMap<>();
        Set<ContentKey> fixedImages = new HashSet<>(pinnedImages);
        long lg = leaseGeneration;
        s.forEachImage((k, info) -> {
            imageSizes.put(k, info.length());
            if (info.touchGeneration() >= lg) {
                fixedImages.add(k);
            }
            return true;
        });
        Map<Long, Integer> regionRefs = new HashMap<>();
        Map<ContentKey, Integer> imageRefs = new HashMap<>();
        long[] liveBytes = {0};
        for (long id : fixedRegions) {
            refRegion(id, allRegions, regionRefs, imageRefs, imageSizes, liveBytes, 1);
        }
        for (ContentKey k : fixedImages) {
            refImage(k, imageRefs, imageSizes, liveBytes, 1);
        }
        Map<String, List<Long>> linked = new HashMap<>();
        for (Recording r : kept) {
            List<Long> ids = Recordings.regionIds(s, r.id());
            linked.put(r.id(), ids);
            for (long id : ids) {
                refRegion(id, allRegions, regionRefs, imageRefs, imageSizes, liveBytes, 1);
            }
        }
        if (policy.maxBytes() > 0) {
            List<Recording> survivors = new ArrayList<>();
            for (Recording r : kept) {
                if (liveBytes[0] > policy.maxBytes() && !pinnedRecordings.contains(r.id())
                        && !liveRecordings.contains(r.id()) && r.endTime() != Recording.RUNNING) {
                    for (long id : linked.get(r.id())) {
                        refRegion(id, allRegions, regionRefs, imageRefs, imageSizes, liveBytes, -1);
                    }
                    plan.dropped.add(new GcReport.Dropped(r.id(), "over --max-size " + policy.maxBytes()));
                } else {
                    survivors.add(r);
                }
            }
            kept = survivors;
        }
        plan.keptRecordings = kept.size();
        for (long id : allRegions.keySet()) {
            if (regionRefs.getOrDefault(id, 0) <= 0) {
                plan.regions.add(id);
            }
        }
        for (Map.Entry<ContentKey, Long> e : imageSizes.entrySet()) {
            if (imageRefs.getOrDefault(e.getKey(), 0) <= 0) {
                plan.images.put(e.getKey(), e.getValue());
            } else {
                plan.keptImages++;
                plan.keptBytes += e.getValue();
            }
        }
        return plan;
    }

    /**
     * When a recording was last active: its creation; for one still running, also its perf.data's last
     * write (a live capture keeps writing it, a crashed one stops).
     */
    private static long lastActiveMillis(Recording r) {
        long t = r.createdMillis();
        if (r.endTime() == Recording.RUNNING && !r.perfDataPath().isEmpty()) {
            try {
                Path p = Path.of(r.perfDataPath());
                if (p.isAbsolute() && Files.exists(p)) {
                    t = Math.max(t, Files.getLastModifiedTime(p).toMillis());
                }
            } catch (java.io.IOException | java.nio.file.InvalidPathException e) {
                // unreadable: age by creation time
            }
        }
        return t;
    }

    /** Only an absolute path can be checked: gc's working directory is not the capture's. */
    private static boolean perfDataGone(Recording r) {
        if (r.perfDataPath().isEmpty()) {
            return false;
        }
        try {
            Path p = Path.of(r.perfDataPath());
            return p.isAbsolute() && !Files.exists(p);
        } catch (java.nio.file.InvalidPathException e) {
            return false;
        }
    }

    private static void refRegion(long id, Map<Long, Region> regions, Map<Long, Integer> regionRefs,
            Map<ContentKey, Integer> imageRefs, Map<ContentKey, Long> sizes, long[] liveBytes, int delta) {
        Region r = regions.get(id);
        if (r == null) {
            return;
        }
        int before = regionRefs.getOrDefault(id, 0);
        regionRefs.put(id, before + delta);
        if (before == 0 && delta > 0 || before == 1 && delta < 0) {
            for (ContentKey k : r.contentKeys()) {
                refImage(k, imageRefs, sizes, liveBytes, delta);
            }
        }
    }

    private static void refImage(ContentKey k, Map<ContentKey, Integer> imageRefs, Map<ContentKey, Long> sizes,
            long[] liveBytes, int delta) {
        int before = imageRefs.getOrDefault(k, 0);
        imageRefs.put(k, before + delta);
        if (before == 0 && delta > 0) {
            liveBytes[0] += sizes.getOrDefault(k, 0L);
        } else if (before == 1 && delta < 0) {
            liveBytes[0] -= sizes.getOrDefault(k, 0L);
        }
    }

    /** What the sweep actually removed. */
    private static final class Swept {
        final Set<String> droppedIds = new HashSet<>();
        long regions;
        long images;
        long bytes;
        long spared;

        void add(Swept o) {
            regions += o.regions;
            images += o.images;
            bytes += o.bytes;
            spared += o.spared;
        }
    }

    private static Swept sweep(Archive archive, GcPolicy policy, Plan plan, long generation, long now,
            Progress progress) {
        int n = policy.opsPerTxn();
        Swept swept = new Swept();
        Set<ContentKey> sparedImages = new HashSet<>();
        Set<Long> sparedRegions = new HashSet<>();
        progress.phase("dropping recordings", plan.dropped.size());
        for (int i = 0; i < plan.dropped.size(); i += n) {
            List<GcReport.Dropped> chunk = plan.dropped.subList(i, Math.min(plan.dropped.size(), i + n));
            archive.write(b -> {
                for (GcReport.Dropped d : chunk) {
                    if (Recordings.isPinned(b, new PinTarget(PinTarget.Type.RECORDING, d.id()))
                            || Recordings.isLive(b, d.id(), now)) {
                        sparedRegions.addAll(Recordings.regionIds(b, d.id()));  // pinned or begun again while we ran
                        continue;
                    }
                    if (Recordings.delete(b, d.id())) {
                        swept.droppedIds.add(d.id());
                    }
                }
                return null;
            });
            progress.add(chunk.size());
        }
        progress.phase("sweeping regions", plan.regions.size());
        for (int i = 0; i < plan.regions.size(); i += n) {
            List<Long> chunk = plan.regions.subList(i, Math.min(plan.regions.size(), i + n));
            Swept part = archive.write(b -> {
                Swept c = new Swept();
                for (long id : chunk) {
                    Region r = RegionIndex.get(b, id).orElse(null);
                    if (r == null) {
                        continue;
                    }
                    if (RegionIndex.touchGeneration(b, id) >= generation || sparedRegions.contains(id)
                            || Recordings.isPinned(b, new PinTarget(PinTarget.Type.NAME, r.name()))) {
                        c.spared++;
                        sparedImages.addAll(r.contentKeys());
                        continue;
                    }
                    if (RegionIndex.delete(b, id)) {
                        c.regions++;
                    }
                }
                return c;
            });
            swept.add(part);
            progress.add(chunk.size());
        }
        List<ContentKey> images = new ArrayList<>(plan.images.keySet());
        progress.phase("sweeping images", images.size());
        for (int i = 0; i < images.size(); i += n) {
            List<ContentKey> chunk = images.subList(i, Math.min(images.size(), i + n));
            Swept part = archive.write(b -> {
                Swept c = new Swept();
                for (ContentKey k : chunk) {
                    ImageInfo info = b.imageInfo(k).orElse(null);
                    if (info == null) {
                        continue;
                    }
                    if (info.touchGeneration() >= generation || sparedImages.contains(k)
                            || Recordings.isPinned(b, new PinTarget(PinTarget.Type.IMAGE, k.hex()))) {
                        c.spared++;
                        continue;
                    }
                    if (b.deleteImage(k)) {
                        c.images++;
                        c.bytes += info.length();
                    }
                }
                return c;
            });
            swept.add(part);
            progress.add(chunk.size());
        }
        if (!plan.expiredLeases.isEmpty()) {
            archive.write(b -> {
                Set<String> expired = new HashSet<>(plan.expiredLeases);
                Recordings.leases(b).stream().filter(l -> expired.contains(l.id()) && !l.liveAt(now))
                        .forEach(l -> Recordings.deleteLease(b, l.id()));
                return null;
            });
        }
        return swept;
    }
}

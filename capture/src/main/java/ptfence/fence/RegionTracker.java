package ptfence.fence;

import ptfence.bpf.BccProgramStore;
import ptfence.region.BpfMetadata;
import ptfence.region.Region;
import ptfence.region.RegionKind;
import ptfence.region.RegionMetadata;
import ptfence.store.ContentKey;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.AbstractMap;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongUnaryOperator;

/**
 * Turns the fence's images into the archive's time-bounded {@link Region}s: an image seen at LOAD (or by the startup
 * scan, the user-space fence, a kernel read) opens a region at once — so a crash keeps it — and the FREE image of the
 * same function (same address and name) closes it at the free time. JIT space is reused within seconds, so regions
 * are keyed by (address, time), never by address alone.
 * <p>
 * Times are the recording's perf time: the fence stamps its images with CLOCK_MONOTONIC, which a recording on
 * perf's own clock (intel_pt) converts through {@code fenceTime}; KSYMBOL and TEXT_POKE times come straight from the
 * perf records. Where the in-kernel FREE hook runs, a program's KSYMBOL unregister does not end its region: the code
 * stays at its address (and can still run) until the FREE, an RCU grace period later; the unregister time is kept
 * as the end only for a FREE that never comes ({@link #closeUnfreed}).
 */
public final class RegionTracker implements TextSink {
    public static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");

    /** Where regions go: the archive ({@link ArchiveSink}), or a test's list. */
    public interface RegionWriter {
        /** A region and its bytes; validTo may still be {@link Region#OPEN}. */
        void opened(Region region, byte[] bytes) throws IOException;

        /** The same region (same id) now with its end time. */
        void closed(Region region) throws IOException;

        /** The same region (same id) with richer metadata, which arrived after {@link #opened}. */
        default void enriched(Region region) throws IOException {}

        /**
         * The same region (same id) with another end, open or closed, even where it was closed already: a late exact
         * copy redrew its text's versions from some time on (a wrong one to no width).
         */
        default void redrawn(Region region) throws IOException {
            closed(region);
        }

        default void flush() throws IOException {}
    }

    record Key(long address, String name) {}

    /**
     * A region still open; {@code awaitsFree}: the FREE hook will deliver its end; {@code copiedAt}: for module
     * text, when the copy its versions start from was read (every poke made until then is in its bytes), else
     * {@link Long#MIN_VALUE}; {@code bornAt}: when its first version began (the text's own start, kept through
     * its later versions).
     */
    record Live(Region region, byte[] bytes, boolean awaitsFree, long copiedAt, long bornAt) {
        Live withRegion(Region r) { return new Live(r, bytes, awaitsFree, copiedAt, bornAt); }

        /** A poke made at {@code time} is in these bytes already: the copy was read after it. */
        boolean holdsPokeOf(long time) { return time <= copiedAt; }
    }

    /**
     * Module text whose free copy (read at {@code at}) reached the tracker before the recorder had handled every
     * poke made before it: it stays open to those pokes ({@link #patchLive}) until the recorder's records pass its
     * free ({@link #sidebandTime}), then ends as a free does. Not in {@link #live}: the module can load again at
     * the same address meanwhile.
     */
    private record Freeing(Map.Entry<Key, Live> entry, CapturedText image, long at) {}

    private final String bootId;
    private final RegionWriter writer;
    private final LiveRegions live = new LiveRegions();
    private final List<Freeing> freeing = new ArrayList<>();
    /** The newest perf time of the recorder's kernel-text records handled (they come in time order). */
    private long sidebandTime = Long.MIN_VALUE;
    /** Metadata that arrived before its image (the recorder can be faster than the fence's consumer). */
    private final Map<Key, BpfMetadata> early = new HashMap<>();
    /** FREE images of trampolines still live whose bytes differ from the live version's (a poke yet to come). */
    private final Map<Key, byte[]> freedEarly = new HashMap<>();
    /** Regions their KSYMBOL unregister ended, for a FREE of the same image that comes after it. */
    private final Map<Key, Live> endedAtUnregister = new HashMap<>();
    /** KSYMBOL unregister times of live regions whose FREE is awaited. */
    private final Map<Key, Long> unregistered = new HashMap<>();
    private final LongUnaryOperator fenceTime;
    private volatile boolean freeHooked;
    private final BccProgramStore bcc;

    /** A tracker for a recording on CLOCK_MONOTONIC, the fence's own clock. */
    public RegionTracker(String bootId, RegionWriter writer) {
        this(bootId, writer, LongUnaryOperator.identity());
    }

    /**
     * @param fenceTime converts the fence's CLOCK_MONOTONIC stamps ({@link CapturedText#monotonicNs}) into the
     *                  recording's perf time (identity for a recording on CLOCK_MONOTONIC)
     */
    public RegionTracker(String bootId, RegionWriter writer, LongUnaryOperator fenceTime) {
        this(bootId, writer, fenceTime, BccProgramStore.standard());
    }

    /** @param bcc where programs without line info find their source (bcc's store) */
    public RegionTracker(String bootId, RegionWriter writer, LongUnaryOperator fenceTime, BccProgramStore bcc) {
        this.bootId = bootId;
        this.writer = writer;
        this.fenceTime = fenceTime;
        this.bcc = bcc;
    }

    /**
     * Whether the in-kernel FREE hook runs (the fence is in-kernel): then program regions end at their FREE, and a
     * KSYMBOL unregister only notes a fallback end.
     */
    @Override
    public void freeHookActive(boolean active) {
        this.freeHooked = active;
    }

    /** The boot the regions belong to. */
    public String bootId() {
        return bootId;
    }

    public static String currentBootId() throws IOException {
        return Files.readString(BOOT_ID).trim();
    }

    /** Region metadata given with the image being accepted (a module's symbols), else null. */
    private RegionMetadata given;

    @Override
    public synchronized void accept(CapturedText t, RegionMetadata metadata) throws IOException {
        given = metadata;
        try {
            accept(t);
        } finally {
            given = null;
        }
    }

    @Override
    public synchronized void accept(CapturedText t) throws IOException {
        if (t.bytes().length == 0 || !t.complete()) return;
        Key key = new Key(t.address(), t.name());
        long at = fenceTime.applyAsLong(t.monotonicNs());
        switch (t.hook()) {
            case FREE, TRAMPOLINE_FREE, MODULE_FREE -> {
                Live current = live.get(key);
                if (t.hook() == Hook.TRAMPOLINE_FREE && sidebandTime != Long.MIN_VALUE && at > sidebandTime) {
                    // The fence's worker delivers a trampoline's FREE at once, the recorder's loop the image's
                    // KSYMBOLs and pokes seconds later: a FREE ahead of the loop waits for the loop to pass its time,
                    // so it meets the image it freed. Taken for an older image of the same name at the address it
                    // made a version with the later image's bytes: over the whole gap where that one had ended 20 s
                    // before (guest 6.1), beside that one's last version where it was still live (guest 6.12 under
                    // an overload: 188 bytes of the next image over a 304-byte image's last 16 s)
                    if (freesAhead.size() >= 4096) freesAhead.remove(0);
                    freesAhead.add(t);
                    return;
                }
                if (t.hook() == Hook.TRAMPOLINE_FREE && current != null
                        && t.bytes().length > current.region().length()) {
                    // the image is the live version's length (TrampolineImages), the rest of the page neighbours
                    t = new CapturedText(t.hook(), t.address(),
                            Arrays.copyOf(t.bytes(), (int) current.region().length()), t.progId(), t.tag(),
                            t.name(), t.monotonicNs(), t.functionIndex(), t.functionCount(), t.pid(), t.tid(),
                            t.complete(), t.metadata());
                }
                if (t.hook() == Hook.TRAMPOLINE_FREE && current != null && !current.awaitsFree()
                        && current.region().validFrom() > at) {
                    return; // an earlier image of the same name at this address (its end came at its unregister)
                }
                if (t.hook() == Hook.TRAMPOLINE_FREE && current != null && !current.awaitsFree()
                        && !Arrays.equals(current.bytes(), t.bytes())) {
                    // The fence's worker delivers the FREE at once, the recorder's loop its pokes up to 1.5 s later
                    // (guest, 6.1): the retirement poke still to come explains the difference at its own time. The
                    // image stays live until its KSYMBOL unregister, which the loop takes after that poke
                    if (freedEarly.size() > 4096) freedEarly.clear();
                    freedEarly.put(key, t.bytes());
                    return;
                }
                if (t.hook() == Hook.MODULE_FREE && live.containsKey(key) && at >= sidebandTime) {
                    // The module fence's copy at the free can reach the tracker seconds before the recorder's
                    // TEXT_POKE records of flips made before it (guest, 6.1: rmmod's copy ~5 s ahead of them):
                    // closed now, the last version would end without them and the free's bytes stand over its whole
                    // span. The free waits until the recorder has handled every poke before it.
                    freeing.add(new Freeing(new AbstractMap.SimpleEntry<>(key, live.remove(key)), t, at));
                    return;
                }
                free(key, live.remove(key), t, at);
            }
            default -> {
                if ((t.hook() == Hook.TRAMPOLINE_BUILD || t.hook() == Hook.TRAMPOLINE_UPDATE)
                        && imageBuilt(key, t, at)) {
                    return;
                }
                Long exactFrom = builtFrom.get(key);
                if (t.hook() == Hook.KERNEL_READ && exactFrom != null && at >= exactFrom && live.containsKey(key)
                        && live.get(key).bornAt() <= exactFrom) {
                    // the loop's read at the attach poke, reaching the tracker after the consumer delivered the
                    // image's late build copy: the copy is exact, and pokes inside the image come as pokes
                    return;
                }
                Live previous = live.get(key);
                long from = t.hook() == Hook.SCAN || t.hook() == Hook.MODULE_SCAN ? 0 : at;
                if (previous != null && from != 0 && at < previous.region().validFrom()) {
                    // before the live version: its bytes held then, even where the live one has the same
                    placeLate(key, t, at, previous);
                    return;
                }
                if (previous != null && Arrays.equals(previous.bytes(), t.bytes())) return; // seen by two sources
                if (previous != null) { // a new version
                    long end = Math.max(at, previous.region().validFrom());
                    writer.closed(previous.region().closedAt(end));
                    if (from != 0) from = end;
                }
                Region r = region(t, from, Region.OPEN);
                BpfMetadata meta = early.remove(key);
                if (meta != null && t.metadata() == null) {
                    r = new Region(r.bootId(), r.address(), r.length(), r.validFrom(), r.validTo(), r.kind(),
                            r.name(), r.key(), meta);
                }
                boolean awaitsFree = freeHooked && (t.hook() == Hook.LOAD || t.hook() == Hook.SCAN);
                long copiedAt = r.kind() == RegionKind.MODULE ? at : Long.MIN_VALUE;
                long bornAt = previous != null ? previous.bornAt() : r.validFrom();
                live.put(key, new Live(r, t.bytes(), awaitsFree, copiedAt, bornAt));
                noteStart(key, r);
                writer.opened(r, t.bytes());
                noteVersion(key, r, previous == null);
                replayOrphans(key, at);
            }
        }
    }

    /**
     * A BPF trampoline image's in-kernel copy ({@link TrampolineCopies}) as its version from the attach poke at
     * {@code at}. The copy can come after the tracker has handled later pokes (the fence's consumer behind the
     * recorder's loop: guest 6.12 beside the BPF churn), which were applied to the late read the loop took at the
     * poke instead, or, where that read was the KSYMBOL's one chunk of int3 fill, taken by an older text whose chunk
     * the image reuses (guest 6.12: a program freed before the image was built, its FREE copy still behind, took
     * the image's retirement jump at +0x4d). Nothing writes a live image but pokes inside it, so its versions from
     * {@code at} are redrawn: the copy, then each poke inside its extent after it, in time order (its own, none
     * taken, or taken by a text born before the image: that text's chunk was free when the image was allocated),
     * up to its end; the versions from {@code at} the tracker had are cut to no width. False where the image's
     * lifetime holding {@code at} is not known here (the ordinary path then places it).
     */
    private boolean imageBuilt(Key key, CapturedText t, long at) throws IOException {
        Live l = live.get(key);
        boolean ended = false;
        if (l == null || l.bornAt() > at) {
            l = endedAtUnregister.get(key);
            if (l == null || l.bornAt() > at || l.region().validTo() <= at) return false;
            ended = true;
        }
        long end = ended ? l.region().validTo() : Region.OPEN;
        List<Seen> pokes = new ArrayList<>();
        for (Seen p : seen) {
            long off = p.address() - t.address();
            if (p.time() <= at || p.time() >= end || off < 0 || off + p.bytes().length > t.bytes().length) continue;
            if (p.taker() == null || p.taker().equals(key) || p.takerBornAt() < l.bornAt()) pokes.add(p);
        }
        pokes.sort(Comparator.comparingLong(Seen::time));
        Region like = l.region();
        List<Region> chain = new ArrayList<>();
        List<byte[]> chainBytes = new ArrayList<>();
        byte[] bytes = t.bytes();
        long from = at;
        for (Seen p : pokes) {
            byte[] next = bytes.clone();
            System.arraycopy(p.bytes(), 0, next, (int) (p.address() - t.address()), p.bytes().length);
            if (Arrays.equals(next, bytes)) continue;
            if (p.time() > from) {
                chain.add(version(like, from, p.time(), bytes));
                chainBytes.add(bytes);
            }
            bytes = next;
            from = p.time();
        }
        chain.add(version(like, from, end, bytes));
        chainBytes.add(bytes);
        // only this image's versions: where it has ended, a later image at the address with the same name (the
        // versions are kept per address and name) is another lifetime (guest 6.12 under an overload: an image's
        // build copy came after the next image there was live, and the redraw cut that image's versions)
        List<Region> versions = imageVersions.computeIfAbsent(key, k -> new ArrayList<>());
        java.util.Set<Long> old = new java.util.HashSet<>();
        for (Region v : versions) {
            if (v.validFrom() < at || v.validFrom() >= end) continue;
            old.add(v.id());
            if (chain.stream().noneMatch(c -> c.id() == v.id())) writer.redrawn(v.closedAt(v.validFrom()));
        }
        if (!ended && like.validFrom() < at) writer.closed(like.closedAt(at)); // the live version before the copy
        for (int i = 0; i < chain.size(); i++) {
            Region c = chain.get(i);
            if (old.contains(c.id())) writer.redrawn(c);
            else writer.opened(c, chainBytes.get(i));
            noteStart(key, c);
        }
        versions.removeIf(v -> v.validFrom() >= at && v.validFrom() < end);
        versions.addAll(chain);
        if (!ended) { // the live image's guard: a later read of it is stale
            if (builtFrom.size() > 4096) builtFrom.clear(); // bounded: a guard against a late read only
            builtFrom.put(key, at);
        }
        Region last = chain.get(chain.size() - 1);
        if (ended) endedAtUnregister.put(key, new Live(last, bytes, false, Long.MIN_VALUE, l.bornAt()));
        else live.put(key, new Live(last, bytes, l.awaitsFree(), l.copiedAt(), l.bornAt()));
        return true;
    }

    private Region version(Region like, long from, long to, byte[] bytes) {
        return new Region(bootId, like.address(), bytes.length, from, to, like.kind(), like.name(),
                ContentKey.of(bytes), like.metadata());
    }

    /** Trampoline images whose version from this time is their in-kernel copy (a later read there is stale). */
    private final Map<Key, Long> builtFrom = new HashMap<>();

    /** Versions written per trampoline image (a bounded few per key, keys bounded), for a late copy to redraw. */
    private final Map<Key, List<Region>> imageVersions = new java.util.LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, List<Region>> eldest) {
            return size() > 4096;
        }
    };

    /** Keeps a trampoline image's version ({@code first}: the image's first, at its address anew). */
    private void noteVersion(Key key, Region r, boolean first) {
        if (r.kind() != RegionKind.BPF_TRAMPOLINE) return;
        List<Region> versions = imageVersions.computeIfAbsent(key, k -> new ArrayList<>());
        if (first) versions.clear();
        versions.add(r);
        if (versions.size() > 64) versions.remove(0);
    }

    /** A poke the tracker handled: where, what, when, and the text that took it (null: no region but TEXT_POKE's). */
    private record Seen(long address, byte[] bytes, long time, Key taker, long takerBornAt) {}

    private final ArrayDeque<Seen> seen = new ArrayDeque<>();

    /**
     * A version stamped before the live one's start reached the tracker after it (guest, 6.1, module lane beside
     * the XDP lane: the consumer's recopy of a dispatcher at an attach, stamped at its own time, came while the
     * recorder's loop was still seconds behind, before the switch pokes it then delivered in time order). Closing
     * the live version at this earlier time would give it, and every version after it, no width. The late one is
     * placed at its own time instead: valid from {@code at} up to the next version start known after it (the
     * archive's newest-start-wins rule decides any overlap with an older version already closed), and the live
     * version stays as it is. Where a version of other bytes starts at that very time, the late one replaces it, as
     * a second delivery at the live version's own time does: two versions from one time would leave the archive
     * to pick either (guest 6.1 under a loaded CI: a dispatcher switch's in-kernel copy, judged after the loop had
     * passed the half's next switch, tied with the loop's read at the switch, which held a later update's bytes).
     */
    private void placeLate(Key key, CapturedText t, long at, Live live) throws IOException {
        java.util.TreeMap<Long, Region> known = starts.get(key);
        Region same = known == null ? null : known.get(at);
        ContentKey content = ContentKey.of(t.bytes());
        if (same != null && same.key().equals(content)) return; // seen by two sources
        Long next = known == null ? null : known.higherKey(at);
        long to = next != null ? next : live.region().validFrom();
        if (same != null) writer.redrawn(same.closedAt(at));
        Region r = region(t, at, to);
        noteStart(key, r);
        writer.opened(r, t.bytes());
    }

    /** Versions per region by their start (a bounded few per key), to place a late version by its time. */
    private final Map<Key, java.util.TreeMap<Long, Region>> starts = new java.util.LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, java.util.TreeMap<Long, Region>> eldest) {
            return size() > 4096;
        }
    };
    private static final int STARTS_PER_KEY = 256;

    private void noteStart(Key key, Region version) {
        if (version.validFrom() == 0) return;
        java.util.TreeMap<Long, Region> s = starts.computeIfAbsent(key, k -> new java.util.TreeMap<>());
        s.put(version.validFrom(), version);
        if (s.size() > STARTS_PER_KEY) s.pollFirstEntry();
    }

    /** The end of a live region ({@code open}, null if none) at a FREE image taken at {@code at}. */
    private void free(Key key, Live open, CapturedText t, long at) throws IOException {
        open = withLateSources(open);
        unregistered.remove(key);
        Live ended = open == null ? endedAtUnregister.remove(key) : null;
        if (ended != null) {
            // closed at its KSYMBOL unregister already (a trampoline image's FREE comes through the fence's
            // ring, after the loop's unregister): the same bytes add nothing; other bytes are a version
            // from that end, not one valid from time 0 over every earlier image at the address
            if (Arrays.equals(ended.bytes(), t.bytes())) return;
            long end = Math.min(ended.region().validTo(), at);
            writer.opened(region(t, end, Math.max(end, at)), t.bytes());
            return;
        }
        if (open != null && Arrays.equals(open.bytes(), t.bytes())) {
            writer.closed(open.region().closedAt(Math.max(at, open.region().validFrom())));
        } else {
            // Never seen live (predates the fence, or loaded where LOAD cannot see), or its bytes changed
            // after load (tail-call pokes): the bytes at free are a version valid up to the free.
            if (open != null) writer.closed(open.region().closedAt(Math.max(at, open.region().validFrom())));
            long from = open != null ? open.region().validFrom() : 0;
            Region atFree = region(t, Math.min(from, at), at);
            writer.opened(atFree, t.bytes());
        }
    }

    /**
     * The recorder has handled its kernel-text records (TEXT_POKE, KSYMBOL, BPF_EVENT: one stream in time order) up
     * to perf time {@code time}: module frees before it have had every poke made before them, and end.
     */
    public synchronized void sidebandTime(long time) throws IOException {
        if (time <= sidebandTime) return;
        sidebandTime = time;
        settleFrees(time);
        settleFreesAhead(time);
    }

    /** Trampoline FREEs that came before the loop's records reached their time ({@link #accept}). */
    private final List<CapturedText> freesAhead = new ArrayList<>();

    /** Takes the trampoline FREEs held for the loop, those before {@code time}, in their order. */
    private void settleFreesAhead(long time) throws IOException {
        if (freesAhead.isEmpty()) return;
        List<CapturedText> due = new ArrayList<>();
        for (var it = freesAhead.iterator(); it.hasNext(); ) {
            CapturedText t = it.next();
            if (fenceTime.applyAsLong(t.monotonicNs()) < time) {
                due.add(t);
                it.remove();
            }
        }
        for (CapturedText t : due) accept(t);
    }

    /** Ends the waiting frees taken before {@code time}, oldest first. */
    private void settleFrees(long time) throws IOException {
        if (freeing.isEmpty()) return;
        freeing.sort(Comparator.comparingLong(Freeing::at));
        while (!freeing.isEmpty() && freeing.get(0).at() < time) {
            Freeing f = freeing.remove(0);
            free(f.entry().getKey(), f.entry().getValue(), f.image(), f.at());
        }
    }

    /** Full bpf_prog_info for a program's functions: enriches their live regions, or waits for their images. */
    @Override
    public synchronized void metadata(ptfence.bpf.ProgramMetadata m) throws IOException {
        BpfMetadata meta = bcc.complete(m.toArchive());
        java.util.List<String> names = m.ksymNames();
        long[] addrs = m.info().jitedKsyms();
        for (int i = 0; i < addrs.length && i < names.size(); i++) {
            Key key = new Key(addrs[i], names.get(i));
            Live l = live.get(key);
            if (l == null) {
                if (early.size() > 4096) early.clear(); // bounded: stale entries are programs never seen
                early.put(key, meta);
                continue;
            }
            Region r = l.region();
            Region richer = new Region(r.bootId(), r.address(), r.length(), r.validFrom(), r.validTo(), r.kind(),
                    r.name(), r.key(), meta);
            live.put(key, l.withRegion(richer));
            writer.enriched(richer);
        }
    }

    /**
     * A PERF_RECORD_KSYMBOL with the UNREGISTER flag at perf time {@code time}: ends the live region of that symbol
     * where there is no FREE hook (user-space fence, out-of-line regions); where the FREE hook will deliver the end,
     * notes the time for {@link #closeUnfreed}. False if no region of that symbol is live.
     */
    public synchronized boolean ksymbolUnregistered(long address, String name, long time) throws IOException {
        sidebandTime(time);
        Key key = new Key(address, name);
        Live open = live.get(key);
        if (open == null) return false;
        if (open.awaitsFree()) {
            unregistered.put(key, time);
            return true;
        }
        live.remove(key);
        open = withLateSources(open);
        Region closed = open.region().closedAt(Math.max(time, open.region().validFrom()));
        writer.closed(closed);
        byte[] freed = freedEarly.remove(key);
        if (freed != null && !Arrays.equals(freed, open.bytes())) {
            // no poke explained its FREE image: that is a version up to the end too (as a FREE's is)
            Region r = closed;
            writer.opened(new Region(bootId, r.address(), freed.length, r.validFrom(), r.validTo(), r.kind(),
                    r.name(), ContentKey.of(freed), r.metadata()), freed);
        }
        if (endedAtUnregister.size() > 4096) endedAtUnregister.clear(); // bounded: most never get a FREE
        endedAtUnregister.put(key, new Live(closed, open.bytes(), false, Long.MIN_VALUE,
                open.bornAt()));
        return true;
    }

    /**
     * Ends, at their KSYMBOL unregister, the regions whose FREE never came (the recording stopped within the grace
     * period, or the FREE image was lost). Returns how many.
     */
    public synchronized int closeUnfreed() throws IOException {
        settleFrees(Long.MAX_VALUE); // the recording's records are all handled
        List<CapturedText> ahead = new ArrayList<>(freesAhead);
        freesAhead.clear();
        long was = sidebandTime;
        sidebandTime = Long.MIN_VALUE; // none waits any more
        for (CapturedText t : ahead) accept(t);
        sidebandTime = was;
        int n = 0;
        for (var e : unregistered.entrySet()) {
            Live open = withLateSources(live.remove(e.getKey()));
            if (open == null) continue;
            writer.closed(open.region().closedAt(Math.max(e.getValue(), open.region().validFrom())));
            n++;
        }
        unregistered.clear();
        return n;
    }

    /**
     * A PERF_RECORD_TEXT_POKE at perf time {@code time}: the live region holding
     * {@code [address, address + newBytes.length)} ends then and a new version with the poked bytes begins. Where no
     * live region holds it (kernel or module text, an out-of-line page the kernel populates with a poke of nothing),
     * the new bytes alone become a TEXT_POKE region from then on, over whatever code was there (a decoder takes the
     * newest version at each address); a later poke at that address makes its next version. Returns whether a live
     * region (other than such a TEXT_POKE region) held the range.
     * <p>
     * Such a poke is also kept ({@link #orphans}): a region whose copy was taken before it but reaches the tracker
     * after it (a module's text comes through the module fence's ring and thread, which in the guest ran up to 40 s
     * behind the recorder's TEXT_POKE records) gets it as a version when it opens ({@link #replayOrphans}); every live
     * region holding a poke gets it, so a TEXT_POKE region made before its module arrived and the module agree.
     */
    public synchronized boolean textPoke(long address, byte[] newBytes, long time) throws IOException {
        return textPoke(address, null, newBytes, time);
    }

    /**
     * The same with the poke's old bytes (the record carries both), which let a trampoline image copied after this
     * poke had already happened keep the bytes it really held before it ({@link #patchLive}).
     */
    public synchronized boolean textPoke(long address, byte[] oldBytes, byte[] newBytes, long time)
            throws IOException {
        if (newBytes.length == 0) return false;
        sidebandTime(time);
        taker = null;
        int held = patchLive(address, oldBytes, newBytes, time);
        seen.addLast(new Seen(address, newBytes.clone(), time, taker == null ? null : taker.getKey(),
                taker == null ? Long.MIN_VALUE : taker.getValue().bornAt()));
        if (seen.size() > MAX_ORPHANS) seen.removeFirst();
        if ((held & HELD_BY_REGION) != 0) return true;
        orphans.addLast(new Poke(address, newBytes.clone(), time));
        if (orphans.size() > MAX_ORPHANS) orphans.removeFirst();
        if ((held & HELD_BY_POKE) != 0) return false;
        Region r = new Region(bootId, address, newBytes.length, time, Region.OPEN, RegionKind.TEXT_POKE,
                "text_poke@0x" + Long.toHexString(address), ContentKey.of(newBytes), null);
        live.put(new Key(address, r.name()), new Live(r, newBytes.clone(), false, Long.MIN_VALUE,
                time));
        writer.opened(r, newBytes.clone());
        return false;
    }

    private static final int HELD_BY_REGION = 1, HELD_BY_POKE = 2;
    /** The region {@link #patchLive} gave its poke to (null: none). */
    private Map.Entry<Key, Live> taker;

    /**
     * Patches the newest live region holding the range, as a decoder picks it, and every TEXT_POKE region there;
     * which kinds held it (HELD_BY_*). An older region can still be live at the address (a neighbour whose end has
     * not come yet, an image awaiting its FREE): a poke given to it instead was lost for the newest (guest, 6.1: a
     * trampoline's retirement poke taken by a stale region, so its image never got the jump). A text born after the
     * poke's time never takes it, however early its copy arrived. TEXT_POKE regions made
     * before their module's late copy arrived follow every poke, so the two agree. Module text whose copy was read
     * after the poke holds it already (its jump labels set as it came up, their records handled after the copy):
     * held, and no version; one whose free waits for its last pokes ({@link #freeing}) takes them.
     */
    private int patchLive(long address, byte[] oldBytes, byte[] newBytes, long time) throws IOException {
        int held = 0;
        Map.Entry<Key, Live> newest = null;
        List<Map.Entry<Key, Live>> candidates = live.holding(address, newBytes.length);
        for (Freeing f : freeing) { // all freed after this poke (those before it ended first)
            if (LiveRegions.holds(f.entry().getValue().region(), address, newBytes.length)) candidates.add(f.entry());
        }
        for (var e : candidates) {
            Region r = e.getValue().region();
            if (r.kind() == RegionKind.TEXT_POKE) {
                patch(e, address, oldBytes, newBytes, time);
                held |= HELD_BY_POKE;
            } else if (e.getValue().holdsPokeOf(time)) {
                held |= HELD_BY_REGION;
            } else if (e.getValue().bornAt() > time) {
                // a text born after the poke (its copy came through the fence's ring ahead of the recorder's
                // records) was not there to take it: the poke was its predecessor's at that address (guest, 6.12:
                // a program loaded into a retired trampoline's BPF pack chunk took the trampoline's retirement jump
                // as a second version of the program)
                continue;
            } else if (newest == null || r.validFrom() > newest.getValue().region().validFrom()) {
                newest = e;
            }
        }
        if (newest != null) {
            taker = newest;
            patch(newest, address, oldBytes, newBytes, time);
            held |= HELD_BY_REGION;
        }
        return held;
    }

    /** Applies the poke to this live region, which holds its range (a new version where its bytes change). */
    private void patch(Map.Entry<Key, Live> e, long address, byte[] oldBytes, byte[] newBytes, long time)
            throws IOException {
        Region r = e.getValue().region();
        int off = (int) (address - r.address());
        byte[] patched = e.getValue().bytes().clone();
        System.arraycopy(newBytes, 0, patched, off, newBytes.length);
        if (Arrays.equals(patched, e.getValue().bytes())) {
            // a poke the copy already holds (a module's jump labels and ftrace sites are poked before the load hook
            // copies it, their records can come after): no new version. Else a version of zero length with the
            // same id as the next (same address, bytes and start) would reopen it in the archive. A trampoline
            // image copied after the poke gets its earlier bytes back, though
            copiedAfterPoke(e, r, off, oldBytes, time);
            return;
        }
        long at = Math.max(time, r.validFrom());
        writer.closed(r.closedAt(at));
        Region next = new Region(bootId, r.address(), r.length(), at, Region.OPEN, r.kind(), r.name(),
                ContentKey.of(patched), r.metadata());
        e.setValue(new Live(next, patched, e.getValue().awaitsFree(), e.getValue().copiedAt(),
                e.getValue().bornAt()));
        noteStart(e.getKey(), next);
        writer.opened(next, patched);
        noteVersion(e.getKey(), next, false);
    }

    /** A TEXT_POKE no live region but a TEXT_POKE region held when it came. */
    private record Poke(long address, byte[] bytes, long time) {}

    /** How many such pokes are kept for regions that arrive late (a few MB at most). */
    static final int MAX_ORPHANS = 1 << 16;
    private final ArrayDeque<Poke> orphans = new ArrayDeque<>();

    /**
     * A region just opened from a copy taken at {@code copiedAt}: the pokes inside it made after the copy but seen
     * before the region (its copy came late) become its versions, in time order, as if they had come after it.
     */
    private void replayOrphans(Key key, long copiedAt) throws IOException {
        Region r = live.get(key).region();
        List<Poke> missed = new ArrayList<>();
        for (Poke p : orphans) {
            long off = p.address() - r.address();
            if (p.time() > copiedAt && off >= 0 && off + p.bytes().length <= r.length()) missed.add(p);
        }
        if (missed.isEmpty()) return;
        missed.sort(Comparator.comparingLong(Poke::time));
        var entry = live.entry(key);
        for (Poke p : missed) patch(entry, p.address(), null, p.bytes(), p.time());
    }

    /**
     * A BPF trampoline image whose live version, from {@code r.validFrom()}, already holds the bytes of a poke made
     * later, at {@code time}: the copy was read after that poke (the retirement poke, bpf_tramp_image_put's jump to
     * the epilogue at ip_after_call, comes soon after the next attach or detach, and a user-space read of the image
     * at the poke that made it reachable can be taken after it; 6.12 in the guest). Nothing else writes a live
     * image, so from its start up to this poke it held the poke's old bytes: that version is rewritten — the one
     * stored is cut to no length, one with the old bytes spans [start, time), and the copy's bytes from then on.
     */
    private void copiedAfterPoke(Map.Entry<Key, Live> e, Region r, int off, byte[] oldBytes, long time)
            throws IOException {
        if (r.kind() != RegionKind.BPF_TRAMPOLINE || oldBytes == null || time <= r.validFrom()) return;
        byte[] bytes = e.getValue().bytes(), before = bytes.clone();
        if (off + oldBytes.length > before.length) return;
        System.arraycopy(oldBytes, 0, before, off, oldBytes.length);
        if (Arrays.equals(before, bytes)) return;
        writer.closed(r.closedAt(r.validFrom()));
        Region held = new Region(bootId, r.address(), r.length(), r.validFrom(), Region.OPEN, r.kind(), r.name(),
                ContentKey.of(before), r.metadata());
        writer.opened(held, before);
        writer.closed(held.closedAt(time));
        Region next = new Region(bootId, r.address(), r.length(), time, Region.OPEN, r.kind(), r.name(), r.key(),
                r.metadata());
        e.setValue(new Live(next, bytes, e.getValue().awaitsFree(), e.getValue().copiedAt(),
                e.getValue().bornAt()));
        writer.opened(next, bytes);
        noteVersion(e.getKey(), held, false);
        noteVersion(e.getKey(), next, false);
    }

    /** Regions still open (live programs at the end of a recording stay open in the archive). */
    public synchronized int liveRegions() { return live.size() + freeing.size(); }

    @Override
    public void flush() throws IOException {
        writer.flush();
    }

    /**
     * A program without line info whose source bcc had not written yet when its region opened (bcc writes it just
     * after the load returns): looked up again as the region ends, and the stored region enriched with it.
     */
    private Live withLateSources(Live open) throws IOException {
        if (open == null || !(open.region().metadata() instanceof BpfMetadata m)) return open;
        BpfMetadata full = bcc.complete(m);
        if (full == m) return open;
        Region r = open.region(), richer = new Region(r.bootId(), r.address(), r.length(), r.validFrom(),
                r.validTo(), r.kind(), r.name(), r.key(), full);
        writer.enriched(richer);
        return open.withRegion(richer);
    }

    private Region region(CapturedText t, long from, long to) {
        return new Region(bootId, t.address(), t.bytes().length, from, to, kindOf(t), t.name(),
                ContentKey.of(t.bytes()), metadataOf(t));
    }

    private RegionMetadata metadataOf(CapturedText t) {
        if (given != null) return given;
        if (t.metadata() != null) return bcc.complete(t.metadata().toArchive());
        if (t.progId() == 0 && t.tag() == 0) return RegionMetadata.None.INSTANCE;
        String n = t.name();
        String progName = n.startsWith("bpf_prog_") && n.length() > 26 ? n.substring(26) : "";
        return bcc.complete(BpfMetadata.of(t.progId(), t.tagHex(), progName, 0));
    }

    private static RegionKind kindOf(CapturedText t) {
        String n = t.name();
        if (t.hook() == Hook.MODULE_LOAD || t.hook() == Hook.MODULE_SCAN || t.hook() == Hook.MODULE_FREE)
            return RegionKind.MODULE;
        if (t.hook() == Hook.TRAMPOLINE_FREE || n.startsWith("bpf_trampoline")) return RegionKind.BPF_TRAMPOLINE;
        if (n.startsWith("bpf_dispatcher")) return RegionKind.BPF_DISPATCHER;
        if (n.startsWith("bpf_prog_") || t.progId() != 0 || t.tag() != 0)
            return t.functionIndex() == 0 ? RegionKind.BPF_PROG : RegionKind.BPF_SUBPROG;
        if (t.hook() == Hook.KERNEL_READ && n.equals(TextFence.CORE_TEXT_NAME)) return RegionKind.KERNEL_TEXT;
        if (t.hook() == Hook.KERNEL_READ) return n.contains("kprobe") ? RegionKind.KPROBE_INSN
                : RegionKind.FTRACE_TRAMPOLINE;
        return RegionKind.BPF_PROG; // a FREE without name or id: a cBPF/seccomp filter's JIT image
    }
}

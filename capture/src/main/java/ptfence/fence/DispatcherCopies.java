package ptfence.fence;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Pairs the in-kernel copies of BPF dispatcher halves (fexit bpf_dispatcher_change_prog, {@link FenceRecord#KIND_DISPATCHER})
 * with the switches (TEXT_POKEs) that put those halves in force, and says which copies replace the bytes the
 * recorder read in user space at the switch.
 * <p>
 * A copy taken at time c of half h belongs to the latest switch to h at or before c (and to every poke of that update
 * to h: on 6.1 the static call's trampoline, then the call site), since the update that switched to h
 * sets image_off only after the switch and an RCU grace period, and returns before another update can write h again
 * (that needs a switch to the other half first); where a concurrent update got in before the copy was taken, the
 * copy is of that update's half, and that update's switch is then the latest one to it. So a copy can be judged
 * only once every switch up to its time is known. The recorder's loop takes TEXT_POKEs in time order within a drain
 * of the CPUs' rings, but a record a CPU writes while the others are drained comes in the next drain, after later
 * ones (guest 6.12 under a loaded CI: 24 of 67 copies judged before their switch was seen); so at each poke
 * ({@link #settle}) the copies taken a lag before it are judged, against every switch kept per half (the latest
 * at or before the copy). A copy whose switch was not seen is counted and left out: the user-space read stays.
 * <p>
 * The in-kernel copy is preferred: it is read as the update returns, the user-space one when the recorder gets to
 * the poke (up to seconds later under load, when the half may already hold the next version but one).
 */
final class DispatcherCopies {
    /** An in-kernel copy of a half: its address, the dispatcher's name, when it was taken (CLOCK_MONOTONIC). */
    record Copy(long half, String name, long monotonicNs, byte[] bytes) {}

    /** A switch to a half as the archive has it: from when, with which bytes. */
    record Version(long half, String name, long monotonicNs, byte[] bytes) {}

    /** Copies not yet judged (a bound: the loop judges them within a poke or two). */
    private static final int MAX_PENDING = 4096;
    private final List<Copy> pending = new ArrayList<>();
    /** Per half, its switches by time (the last {@link #KEPT_SWITCHES}). */
    private final Map<Long, java.util.TreeMap<Long, Version>> switches = new HashMap<>();
    private static final int KEPT_SWITCHES = 64;
    /** How long before a poke's time a copy must be taken to be judged there (records late by a drain). */
    private final long lagNanos;
    private long matched, replaced, unmatched;

    /** Copies judged 2 s behind the loop's pokes: a record late by a drain is far less late than that. */
    DispatcherCopies() {
        this(2_000_000_000L);
    }

    DispatcherCopies(long lagNanos) {
        this.lagNanos = lagNanos;
    }

    /** A copy from the fence's ring (the consumer's thread). */
    synchronized void copied(Copy c) {
        if (pending.size() >= MAX_PENDING) {
            pending.remove(0);
            unmatched++;
        }
        pending.add(c);
    }

    /**
     * The loop reached a TEXT_POKE at {@code monotonicNs}: every switch before it is known, so the copies taken
     * before it are judged. Returns the matched ones as versions from their switch's time, for the archive (it
     * keeps no new version where the bytes equal the user-space read).
     */
    synchronized List<Version> settle(long monotonicNs) {
        return judge(monotonicNs == Long.MAX_VALUE ? Long.MAX_VALUE : monotonicNs - lagNanos);
    }

    private List<Version> judge(long before) {
        if (pending.isEmpty()) return List.of();
        pending.sort(Comparator.comparingLong(Copy::monotonicNs));
        List<Version> out = new ArrayList<>();
        int n = 0;
        for (; n < pending.size() && pending.get(n).monotonicNs() < before; n++) {
            Copy c = pending.get(n);
            java.util.TreeMap<Long, Version> toHalf = switches.get(c.half());
            Map.Entry<Long, Version> e = toHalf == null ? null : toHalf.floorEntry(c.monotonicNs());
            Version v = e == null ? null : e.getValue();
            if (v == null || !v.name().equals(c.name())) {
                unmatched++;
                continue;
            }
            matched++;
            if (!Arrays.equals(v.bytes(), c.bytes())) replaced++;
            // every poke of that update: it switches the static call's trampoline and then its call sites (6.1: two
            // pokes), each a switch to this half here, all after the last switch to the other half (updates
            // alternate the halves); the copy is the version from each, else the read at the first stands over the
            // time up to the last
            long since = lastSwitchElsewhere(c.half(), c.name(), e.getKey());
            for (long at : List.copyOf(toHalf.subMap(since, false, e.getKey(), true).keySet())) {
                Version exact = new Version(c.half(), c.name(), at, c.bytes());
                toHalf.put(at, exact);
                out.add(exact);
            }
        }
        pending.subList(0, n).clear();
        return out;
    }

    /** The latest switch of this dispatcher to another half before {@code before}; else just before it. */
    private long lastSwitchElsewhere(long half, String name, long before) {
        long last = Long.MIN_VALUE;
        for (var h : switches.entrySet()) {
            if (h.getKey() == half) continue;
            Map.Entry<Long, Version> e = h.getValue().lowerEntry(before);
            if (e != null && e.getValue().name().equals(name)) last = Math.max(last, e.getKey());
        }
        return last == Long.MIN_VALUE ? before - 1 : last;
    }

    /** Every copy still pending (the recording ended: every switch is known). */
    synchronized List<Version> settleAll() {
        return judge(Long.MAX_VALUE);
    }

    /**
     * The loop delivered a switch to {@code half} at {@code monotonicNs} with the bytes read in user space. Call
     * after {@link #settle} of the same time, so the copies before it are judged against the switches before it.
     */
    synchronized void switched(long half, String name, long monotonicNs, byte[] userSpaceBytes) {
        java.util.TreeMap<Long, Version> toHalf = switches.computeIfAbsent(half, h -> new java.util.TreeMap<>());
        toHalf.put(monotonicNs, new Version(half, name, monotonicNs, userSpaceBytes));
        if (toHalf.size() > KEPT_SWITCHES) toHalf.pollFirstEntry();
    }

    /** "N in-kernel copies at the switch, M replaced the user-space read, K unmatched". */
    synchronized String summary() {
        return matched + " in-kernel copies at the switch, " + replaced + " replaced the user-space read, "
                + (unmatched + pending.size()) + " unmatched";
    }

    synchronized long matched() { return matched; }

    synchronized long replaced() { return replaced; }

    synchronized long unmatched() { return unmatched; }
}

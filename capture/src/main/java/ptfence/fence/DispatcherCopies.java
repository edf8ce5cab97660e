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
 * A copy taken at time c of half h belongs to the latest switch to h at or before c: the update that switched to h
 * sets image_off only after the switch and an RCU grace period, and returns before another update can write h again
 * (that needs a switch to the other half first); where a concurrent update got in before the copy was taken, the
 * copy is of that update's half, and that update's switch is then the latest one to it. So a copy can be judged
 * only once every switch up to its time is known: the recorder's loop takes TEXT_POKEs in time order, and at each
 * one ({@link #settle}) the copies taken before it are judged. A copy whose switch was not seen, or whose half has
 * been switched to again since, is counted and left out: the user-space read stays.
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
    private final Map<Long, Version> lastSwitch = new HashMap<>();
    private long matched, replaced, unmatched;

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
        if (pending.isEmpty()) return List.of();
        pending.sort(Comparator.comparingLong(Copy::monotonicNs));
        List<Version> out = new ArrayList<>();
        int n = 0;
        for (; n < pending.size() && pending.get(n).monotonicNs() < monotonicNs; n++) {
            Copy c = pending.get(n);
            Version v = lastSwitch.get(c.half());
            if (v == null || v.monotonicNs() > c.monotonicNs() || !v.name().equals(c.name())) {
                unmatched++;
                continue;
            }
            matched++;
            if (!Arrays.equals(v.bytes(), c.bytes())) replaced++;
            Version exact = new Version(c.half(), c.name(), v.monotonicNs(), c.bytes());
            lastSwitch.put(c.half(), exact);
            out.add(exact);
        }
        pending.subList(0, n).clear();
        return out;
    }

    /** Every copy still pending (the recording ended: every switch is known). */
    synchronized List<Version> settleAll() {
        return settle(Long.MAX_VALUE);
    }

    /**
     * The loop delivered a switch to {@code half} at {@code monotonicNs} with the bytes read in user space. Call
     * after {@link #settle} of the same time, so the copies before it are judged against the switches before it.
     */
    synchronized void switched(long half, String name, long monotonicNs, byte[] userSpaceBytes) {
        lastSwitch.put(half, new Version(half, name, monotonicNs, userSpaceBytes));
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

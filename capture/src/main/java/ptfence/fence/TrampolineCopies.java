package ptfence.fence;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Pairs the in-kernel copies of BPF trampoline images (fexit arch_prepare_bpf_trampoline,
 * {@link FenceRecord#KIND_TRAMP_BUILT}) with the attach pokes that make them reachable, and says which copy is the
 * version an attach poke opens.
 * <p>
 * A build writes an image whole and returns; only then does bpf_trampoline_update poke the traced function's call
 * (nop or the previous image's address) to the new image. Nothing runs the image before that poke, and afterwards it
 * changes only by pokes inside it (the retirement's jump to the epilogue), which the tracker applies at their time.
 * So the version an attach poke at time p to image A opens is the last copy of A taken before p — and after the
 * previous attach poke to A, if any: an image freed and a new one built at the same address (the BPF pack reuses
 * chunks on 6.12) is a new copy, and an older copy of A not matched at its own poke must not be given to the next
 * image there. Copies are judged when the recorder's loop gets to the attach poke (in time order, after the kernel),
 * or, where the consumer delivers the copy only after the loop passed that poke (guest 6.12 beside the BPF churn:
 * 122 of 300 copies came after the loop's 100 ms wait), as it arrives ({@link #copied} returns it with the poke's
 * time): the poke's time is known, so the copy is that poke's version from then, placed late by the tracker, and
 * the loop never waits for it. One that no poke explains — a build whose update failed, a copy superseded by a later
 * build at the same address before any poke, one still waiting when the recording ends — is counted and left out,
 * never given to another version (one limit: where a
 * rebuild's copy is lost, a full ring counted as a loss, an earlier failed build of the same name at the same address
 * would be taken). Where no copy is found for a poke, the recorder's own read at the poke stays (today's behaviour
 * where the hook cannot load).
 * <p>
 * Where the build hook cannot attach (6.1), the copies come from the update hook instead ({@link #afterPoke},
 * fexit bpf_trampoline_update, {@link FenceRecord#KIND_TRAMP_UPDATED}): taken as the update returns, after the attach
 * poke, of the image in force, while tr->mutex is still held. The only pokes inside an image are its retirement's,
 * made by a later update under that mutex, and an image is freed only after its retirement, so no poke inside it and
 * no new image at its address can come between its attach poke and that copy: the version an attach poke at p to A
 * opens is then the first copy of A taken after p. The loop waits for it at the poke and delivers it there, before
 * it handles any later poke, so the retirement's poke inside A still applies over it in the tracker.
 */
final class TrampolineCopies {
    /** An in-kernel copy of an image: its address, its ksym's name, when its build returned (CLOCK_MONOTONIC). */
    record Copy(long image, String name, long monotonicNs, byte[] bytes) {}

    /** A build copy judged after the loop passed its attach poke: the version from {@code pokeNs}. */
    record Late(Copy copy, long pokeNs) {}

    /**
     * An attach poke the loop passed before its build's copy came (build rule): the image's name, the poke's time,
     * the previous attach poke to the address, the read at the poke (null if none), and the time of the copy given
     * to it late so far ({@link Long#MIN_VALUE} if none).
     */
    private record Awaiting(String name, long poke, long after, byte[] read, long given) {}

    /** Per image address, its last attach poke the loop passed without a copy (build rule). */
    private final Map<Long, Awaiting> awaiting = new HashMap<>();
    private long late;

    /** Copies not yet judged (a bound: the loop judges each at its attach poke). */
    private static final int MAX_PENDING = 4096;
    private final List<Copy> pending = new ArrayList<>();
    /** Per image address, the time of the last attach poke to it the loop has seen. */
    private final Map<Long, Long> lastAttach = new HashMap<>();
    private long matched, differed, unmatched;
    /** Whether the copies are the update hook's (taken after the attach poke) rather than the build hook's. */
    private boolean afterPoke;

    /** The copies are taken after the attach poke, by the update hook (see the class comment). */
    synchronized void afterPoke() { afterPoke = true; }

    synchronized boolean isAfterPoke() { return afterPoke; }

    /**
     * A copy from the fence's ring (the consumer's thread). Returns it with its poke's time where the loop has
     * passed the attach poke it belongs to (build rule: the first attach poke to its image after it, with no later
     * copy of the image before that poke), else null (judged at its poke).
     */
    synchronized Late copied(Copy c) {
        Awaiting a = afterPoke ? null : awaiting.get(c.image());
        if (a != null && c.monotonicNs() <= a.poke()) {
            if (!a.name().equals(c.name()) || c.monotonicNs() <= a.after() || c.monotonicNs() <= a.given()) {
                unmatched++; // another image's, older than the previous poke, or superseded by the copy given
                return null;
            }
            if (a.given() != Long.MIN_VALUE) {
                unmatched++; // a failed build's copy came first and was given: this later build supersedes it
            } else {
                matched++;
                late++;
                if (a.read() != null && differs(a.read(), c.bytes())) differed++;
            }
            awaiting.put(c.image(), new Awaiting(a.name(), a.poke(), a.after(), a.read(), c.monotonicNs()));
            return new Late(c, a.poke());
        }
        if (pending.size() >= MAX_PENDING) {
            pending.remove(0);
            unmatched++;
        }
        pending.add(c);
        notifyAll();
        return null;
    }

    private static boolean differs(byte[] read, byte[] copy) {
        int n = Math.min(read.length, copy.length);
        return !Arrays.equals(read, 0, n, copy, 0, n);
    }

    /**
     * The loop reached an attach poke at {@code monotonicNs} whose call targets {@code image} (ksym {@code name}).
     * Returns the copy that is the version it opens, or null where none is there yet; waits up to {@code waitNanos}
     * for the consumer to deliver one (the update rule; the build rule passes 0 and judges a copy that comes after
     * the poke as it arrives, {@link #copied}). Every other copy of the image taken before the poke is
     * left out (counted). {@code userSpaceBytes}, where the recorder read the image at the poke (else null), is
     * compared with the copy for the summary.
     */
    synchronized Copy attached(long image, String name, long monotonicNs, byte[] userSpaceBytes, long waitNanos) {
        long deadline = System.nanoTime() + waitNanos;
        Copy found = find(image, name, monotonicNs);
        while (found == null && waitNanos > 0) {
            long left = deadline - System.nanoTime();
            if (left <= 0) break;
            try {
                wait(Math.max(1, left / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            found = find(image, name, monotonicNs);
        }
        Long previous = lastAttach.put(image, monotonicNs);
        long after = previous == null ? Long.MIN_VALUE : previous;
        for (var it = pending.iterator(); it.hasNext(); ) {
            Copy c = it.next();
            if (c.image() != image || c.monotonicNs() > monotonicNs || c == found) continue;
            it.remove();
            unmatched++; // superseded by a later build, older than the previous attach poke, or (after the poke)
                         // an update's copy whose poke the loop had passed before it came
        }
        if (!afterPoke) awaiting.remove(image);
        if (found == null || (!afterPoke && found.monotonicNs() <= after)) {
            if (found != null) {
                pending.remove(found);
                unmatched++;
            }
            // the build's copy may still be on its way (the consumer behind the loop): judged as it comes
            if (!afterPoke) {
                if (awaiting.size() >= MAX_PENDING) awaiting.clear(); // bounded: the pack's chunks are few
                awaiting.put(image, new Awaiting(name, monotonicNs, after, userSpaceBytes, Long.MIN_VALUE));
            }
            return null;
        }
        pending.remove(found);
        matched++;
        if (userSpaceBytes != null && differs(userSpaceBytes, found.bytes())) differed++;
        return found;
    }

    /**
     * The last copy of {@code image} named {@code name} taken at or before {@code monotonicNs} (build copies), or the
     * first one taken after it (update copies), else null.
     */
    private Copy find(long image, String name, long monotonicNs) {
        Copy best = null;
        for (Copy c : pending) {
            if (afterPoke) {
                if (c.image() == image && c.name().equals(name) && c.monotonicNs() > monotonicNs
                        && (best == null || c.monotonicNs() < best.monotonicNs())) {
                    best = c;
                }
                continue;
            }
            if (c.image() == image && c.name().equals(name) && c.monotonicNs() <= monotonicNs
                    && (best == null || c.monotonicNs() > best.monotonicNs())) {
                best = c;
            }
        }
        return best;
    }

    /** The recording ended: copies no attach poke took are unexplained. */
    synchronized void end() {
        unmatched += pending.size();
        pending.clear();
        awaiting.clear();
    }

    /** "N in-kernel copies at the attach poke (L came after the loop passed it), M differed from the read at the poke, K unmatched". */
    synchronized String summary() {
        return matched + " in-kernel copies at the attach poke" + (late > 0 ? " (" + late + " came after the loop "
                + "passed it)" : "") + ", " + differed + " differed from the read at the poke, "
                + (unmatched + pending.size()) + " unmatched";
    }

    synchronized long matched() { return matched; }

    synchronized long differed() { return differed; }

    synchronized long unmatched() { return unmatched; }

    /** Of the matched, how many came after the loop had passed their attach poke. */
    synchronized long late() { return late; }
}

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
 * chunks on 6.12) is a new copy, and an older copy of A not matched at its own poke (the ring delivered it late) must
 * not be given to the next image there. Copies are judged when the recorder's loop gets to the attach poke (in time
 * order, after the kernel: the ring's copy of a build has normally arrived by then); one that no poke explains —
 * a build whose update failed, a copy superseded by a later build at the same address before any poke, one still
 * waiting when the recording ends — is counted and left out, never given to another version (one limit: where a
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

    /** A copy from the fence's ring (the consumer's thread). */
    synchronized void copied(Copy c) {
        if (pending.size() >= MAX_PENDING) {
            pending.remove(0);
            unmatched++;
        }
        pending.add(c);
        notifyAll();
    }

    /**
     * The loop reached an attach poke at {@code monotonicNs} whose call targets {@code image} (ksym {@code name}).
     * Returns the copy that is the version it opens, or null where none is there; waits up to {@code waitNanos} for
     * the consumer to deliver one built before the poke. Every other copy of the image taken before the poke is
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
        if (found == null || (!afterPoke && found.monotonicNs() <= after)) {
            if (found != null) {
                pending.remove(found);
                unmatched++;
            }
            return null;
        }
        pending.remove(found);
        matched++;
        if (userSpaceBytes != null && !Arrays.equals(userSpaceBytes, 0, Math.min(userSpaceBytes.length,
                found.bytes().length), found.bytes(), 0, Math.min(userSpaceBytes.length, found.bytes().length))) {
            differed++;
        }
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
    }

    /** "N in-kernel copies at the attach poke, M differed from the read at the poke, K unmatched". */
    synchronized String summary() {
        return matched + " in-kernel copies at the attach poke, " + differed + " differed from the read at the poke, "
                + (unmatched + pending.size()) + " unmatched";
    }

    synchronized long matched() { return matched; }

    synchronized long differed() { return differed; }

    synchronized long unmatched() { return unmatched; }
}

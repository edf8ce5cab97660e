package ptfence.fence;

import org.junit.jupiter.api.Test;
import ptfence.region.Region;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A BPF dispatcher's halves reach the tracker from two threads: the recorder's loop delivers each switch's half at
 * the switch's poke time, in time order but seconds behind the kernel under load; the fence's consumer copies both
 * halves again at an attach or a program's free, stamped at that record's time, and can deliver them before the
 * loop's earlier switches (guest, 6.1, module lane beside the XDP lane: every dispatcher version of 226-262 s
 * stamped 262.03 s, the consumer's copy, with no width). Whatever the arrival order, a decoder asking for a half at
 * any time after its first switch must get the bytes the kernel had then (the test's ground truth), and no version
 * may be cut to nothing by one that was taken later.
 */
class DispatcherVersionOrderTest {
    private static final long PAGE = 0xffffffffc00241c0L;
    private static final int HALF = 2048;
    private static final String NAME = "bpf_dispatcher_xdp";

    /** One version a half held from {@code time} on: what the kernel wrote at a switch. */
    private record Written(long half, long time, byte[] bytes) {}

    @Test
    void versionsDeliveredAfterALaterCopyKeepTheirTime() throws Exception {
        rounds(29, DispatcherVersionOrderTest::check);
    }

    private interface History {
        void check(Random rnd, String why) throws Exception;
    }

    /** 200 random histories, each from a seed of its own (named where one fails). */
    private static void rounds(long seed, History h) throws Exception {
        Random rnd = new Random(seed);
        for (int round = 0; round < 200; round++) {
            long s = rnd.nextLong();
            h.check(new Random(s), "seed " + s);
        }
    }

    /**
     * 4-43 switches from {@code t}, each update writing the idle half and switching to it, up to {@code maxGap} ns
     * apart; {@code again}: a third of them write what their half held before (a round's same program).
     */
    private static List<Written> switches(Random rnd, long t, int maxGap, boolean again) {
        int switches = 4 + rnd.nextInt(40);
        List<Written> truth = new ArrayList<>();
        for (int i = 0; i < switches; i++) {
            t += 1_000_000 + rnd.nextInt(maxGap);
            long half = PAGE + (long) (i % 2) * HALF;
            byte[] same = again && i >= 2 && rnd.nextInt(3) == 0 ? truth.get(i - 2).bytes() : null;
            byte[] b = same != null ? same : new byte[HALF];
            if (same == null) rnd.nextBytes(b);
            truth.add(new Written(half, t, b));
        }
        return truth;
    }

    private static void check(Random rnd, String why) throws Exception {
        List<Written> truth = switches(rnd, 200_000_000_000L, 500_000_000, false);
        long end = truth.get(truth.size() - 1).time() + 1_000_000_000L;
        // the loop's deliveries, in time order
        List<CapturedText> arrivals = new ArrayList<>();
        for (Written w : truth) arrivals.add(version(w.half(), w.bytes(), w.time()));
        // the consumer's copies of both halves at a few random times, each arriving ahead of the loop's switches
        // before it (anywhere from at once to just in time)
        int copies = 1 + rnd.nextInt(3);
        for (int c = 0; c < copies; c++) {
            long at = truth.get(0).time() + (long) (rnd.nextDouble() * (end - truth.get(0).time()));
            int insertAt = rnd.nextInt(1 + (int) truth.stream().filter(w -> w.time() <= at).count());
            for (int h = 0; h < 2; h++) {
                byte[] held = heldAt(truth, PAGE + (long) h * HALF, at);
                if (held != null) arrivals.add(Math.min(insertAt, arrivals.size()), version(PAGE + (long) h * HALF,
                        held, at));
            }
        }
        ModuleTextOrderTest.Archive archive = new ModuleTextOrderTest.Archive();
        RegionTracker tracker = new RegionTracker("boot", archive);
        for (CapturedText v : arrivals) tracker.accept(v);

        assertHeld(archive, truth, end, why);
        assertTrue(archive.regions.values().stream().allMatch(r -> r.isOpen() || r.validTo() > r.validFrom()),
                () -> "a version cut to no width; " + why);
    }

    /**
     * The loop reads a half when it gets to the switch's poke, under load after the kernel has written that half
     * again (the read holds a later update's bytes); the half's in-kernel copy at the switch, judged only after the
     * loop has passed later switches, comes as a version from the switch's own time. The exact copy must win over
     * the read at every time the read would answer (guest 6.1 under a loaded CI: the two tied at one start and the
     * archive answered with the read's bytes, 6 bytes of another program's address).
     */
    @Test
    void anInKernelCopyArrivingAfterLaterSwitchesReplacesTheLateRead() throws Exception {
        rounds(44, DispatcherVersionOrderTest::checkLateCopies);
    }

    private static void checkLateCopies(Random rnd, String why) throws Exception {
        List<Written> truth = switches(rnd, 90_000_000_000L, 200_000_000, true);
        int switches = truth.size();
        long end = truth.get(switches - 1).time() + 1_000_000_000L;
        // per switch, where its in-kernel copy arrives: after the loop's delivery of this switch or a later one,
        // in the copies' time order (DispatcherCopies judges them so)
        List<List<CapturedText>> after = new ArrayList<>();
        for (int i = 0; i < switches; i++) after.add(new ArrayList<>());
        List<CapturedText> arrivals = new ArrayList<>();
        int judgedAt = 0;
        for (int i = 0; i < switches; i++) {
            Written w = truth.get(i);
            int lateBy = rnd.nextInt(3) == 0 ? 2 * (1 + rnd.nextInt(2)) : 0; // read after the half's next writes
            byte[] read = i + lateBy < switches ? truth.get(i + lateBy).bytes() : w.bytes();
            judgedAt = Math.max(judgedAt, i) + (rnd.nextBoolean() ? 0 : rnd.nextInt(switches - Math.max(judgedAt, i)));
            after.get(judgedAt).add(new CapturedText(Hook.DISPATCHER_SWITCH, w.half(), w.bytes().clone(), 0, 0, NAME,
                    w.time(), 0, 1, 0, 0, true));
            arrivals.add(version(w.half(), read, w.time()));
            arrivals.addAll(after.get(i));
        }
        ModuleTextOrderTest.Archive archive = new ModuleTextOrderTest.Archive();
        RegionTracker tracker = new RegionTracker("boot", archive);
        for (CapturedText v : arrivals) tracker.accept(v);
        assertHeld(archive, truth, end, why);
    }

    /** The bytes a decoder gets at each switch, just after it, and halfway to the next are the kernel's. */
    private static void assertHeld(ModuleTextOrderTest.Archive archive, List<Written> truth, long end, String why) {
        // the bytes a decoder gets at each switch, just after it, and halfway to the next
        for (int i = 0; i < truth.size(); i++) {
            long from = truth.get(i).time(), to = i + 1 < truth.size() ? truth.get(i + 1).time() : end;
            for (long q : new long[] {from, from + 1, from + (to - from) / 2, to - 1}) {
                for (int h = 0; h < 2; h++) {
                    long half = PAGE + (long) h * HALF;
                    byte[] held = heldAt(truth, half, q);
                    if (held == null) continue;
                    for (int off : new int[] {0, 1, HALF / 2, HALF - 1}) {
                        assertEquals(Byte.valueOf(held[off]), archive.at(half + off, q),
                                "half 0x" + Long.toHexString(half) + "+" + off + " at " + q + " (switch " + i
                                        + " of " + truth.size() + "); " + why);
                    }
                }
            }
        }
    }

    /** The bytes the kernel's half held at {@code time}: its last switch at or before it; null before the first. */
    private static byte[] heldAt(List<Written> truth, long half, long time) {
        byte[] held = null;
        for (Written w : truth) if (w.half() == half && w.time() <= time) held = w.bytes();
        return held;
    }

    private static CapturedText version(long half, byte[] bytes, long time) {
        return new CapturedText(Hook.KERNEL_READ, half, bytes.clone(), 0, 0, NAME, time, 0, 1, 0, 0, true);
    }
}

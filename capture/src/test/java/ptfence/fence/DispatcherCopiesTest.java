package ptfence.fence;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.region.ImageAt;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Which in-kernel dispatcher copy is which switch's version ({@link DispatcherCopies}), and that the archive then
 * answers with the in-kernel bytes: the rule is "the latest switch to the copy's half at or before the copy", judged
 * only once the loop has passed the copy's time.
 */
class DispatcherCopiesTest {
    static final long PAGE = 0xffffffffc0001000L, A = PAGE, B = PAGE + 2048;
    static final String XDP = "bpf_dispatcher_xdp";

    static byte[] half(int fill) {
        byte[] b = new byte[2048];
        Arrays.fill(b, (byte) fill);
        return b;
    }

    @Test
    void aCopyAfterItsSwitchReplacesTheUserSpaceReadFromTheSwitchTime() {
        DispatcherCopies c = new DispatcherCopies(0);
        assertEquals(List.of(), c.settle(100));
        c.switched(A, XDP, 100, half(1));                 // the poke at 100; user space read stale bytes
        c.copied(new DispatcherCopies.Copy(A, XDP, 130, half(2)));
        assertEquals(List.of(), c.settle(120), "not judged before the loop passes its time");
        List<DispatcherCopies.Version> v = c.settle(200);
        assertEquals(1, v.size());
        assertEquals(A, v.get(0).half());
        assertEquals(100, v.get(0).monotonicNs(), "valid from the switch, not from the copy");
        assertArrayEquals(half(2), v.get(0).bytes());
        assertEquals(1, c.replaced());
        assertEquals("1 in-kernel copies at the switch, 1 replaced the user-space read, 0 unmatched", c.summary());
    }

    /**
     * Debian's 6.1 switches with two pokes (the static call's trampoline, then the call site in the dispatcher
     * function), both to the half: the copy is the version from each, so the read at the first (late, another
     * update's bytes) stands nowhere. Pokes to the half before the last switch to the other half are earlier updates.
     */
    @Test
    void aSwitchOfTwoPokesGetsTheCopyFromBoth() {
        DispatcherCopies c = new DispatcherCopies(0);
        c.switched(A, XDP, 20, half(7));
        c.switched(B, XDP, 50, half(8));
        c.switched(A, XDP, 100, half(1));
        c.switched(A, XDP, 101, half(1));
        c.copied(new DispatcherCopies.Copy(A, XDP, 130, half(2)));
        List<DispatcherCopies.Version> v = c.settle(200);
        assertEquals(List.of(100L, 101L), v.stream().map(DispatcherCopies.Version::monotonicNs).toList());
        v.forEach(x -> assertArrayEquals(half(2), x.bytes()));
        assertEquals("1 in-kernel copies at the switch, 1 replaced the user-space read, 0 unmatched", c.summary());
    }

    @Test
    void anEqualCopyIsMatchedNotCountedAsReplacing() {
        DispatcherCopies c = new DispatcherCopies(0);
        c.switched(A, XDP, 100, half(1));
        c.copied(new DispatcherCopies.Copy(A, XDP, 130, half(1)));
        assertEquals(1, c.settleAll().size());
        assertEquals(1, c.matched());
        assertEquals(0, c.replaced());
    }

    /**
     * An update's fexit ran after a concurrent update had switched to the other half: its copy is of that half, and
     * is that later switch's version, not its own update's.
     */
    @Test
    void aCopyTakenAfterAConcurrentSwitchIsThatSwitchsVersion() {
        DispatcherCopies c = new DispatcherCopies(0);
        c.switched(A, XDP, 100, half(1));
        c.switched(B, XDP, 110, half(3));
        c.copied(new DispatcherCopies.Copy(B, XDP, 120, half(4)));  // update 1's fexit, after update 2 switched to B
        List<DispatcherCopies.Version> v = c.settle(300);
        assertEquals(1, v.size());
        assertEquals(B, v.get(0).half());
        assertEquals(110, v.get(0).monotonicNs());
    }

    @Test
    void copiesThatNoSwitchExplainsAreLeftOut() {
        DispatcherCopies c = new DispatcherCopies(0);
        c.copied(new DispatcherCopies.Copy(A, XDP, 50, half(2)));           // no switch to A seen before it
        c.switched(A, XDP, 100, half(1));
        c.copied(new DispatcherCopies.Copy(A, "bpf_dispatcher_other", 130, half(2)));  // another dispatcher's name
        assertEquals(List.of(), c.settle(200));
        assertEquals(2, c.unmatched());
        // a copy the consumer delivered only after the loop passed a later switch to the same half: it is the
        // version of the latest switch at or before it (100), not of the later one (300)
        c.switched(A, XDP, 300, half(5));
        c.copied(new DispatcherCopies.Copy(A, XDP, 250, half(6)));
        List<DispatcherCopies.Version> v = c.settle(400);
        assertEquals(1, v.size());
        assertEquals(100, v.get(0).monotonicNs());
        assertEquals(2, c.unmatched());
        assertEquals(1, c.matched());
    }

    /**
     * A switch's TEXT_POKE written while the loop drained the other CPUs' rings comes a drain later, after later
     * pokes (guest 6.12, a loaded CI: 24 of 67 copies had been judged before their switch was known). Judged a lag
     * behind the pokes, each copy still finds its own switch; without the lag, such copies went unmatched.
     */
    @Test
    void switchesLateByADrainStillGetTheirCopies() {
        Random rnd = new Random(42);
        for (int round = 0; round < 100; round++) {
            for (long lag : new long[] {0, 1500}) {
                DispatcherCopies c = new DispatcherCopies(lag);
                int n = 40;
                List<DispatcherCopies.Version> got = new java.util.ArrayList<>();
                // the loop's order: switch i comes after switch i+1 where the drain split them (in time order else)
                List<Integer> order = new java.util.ArrayList<>();
                for (int i = 0; i < n; i++) order.add(i);
                for (int i = 0; i + 1 < n; i++) {
                    if (rnd.nextInt(4) == 0) {
                        java.util.Collections.swap(order, i, i + 1);
                        i++;
                    }
                }
                // each copy taken within its update; the consumer hands it over before the loop reaches a later poke
                List<DispatcherCopies.Copy> copies = new java.util.ArrayList<>();
                for (int i = 0; i < n; i++) {
                    copies.add(new DispatcherCopies.Copy(i % 2 == 0 ? A : B, XDP, 1000L * (i + 1) + 1 + rnd.nextInt(900),
                            half(i + 1)));
                }
                int handed = 0;
                for (int i : order) {
                    long t = 1000L * (i + 1);
                    while (handed < n && copies.get(handed).monotonicNs() < t) c.copied(copies.get(handed++));
                    got.addAll(c.settle(t));
                    c.switched(i % 2 == 0 ? A : B, XDP, t, half(0));
                }
                while (handed < n) c.copied(copies.get(handed++));
                got.addAll(c.settleAll());
                long own = got.stream().filter(v -> java.util.Arrays.equals(v.bytes(),
                        half((int) (v.monotonicNs() / 1000)))).count();
                boolean late = !order.equals(java.util.stream.IntStream.range(0, n).boxed().toList());
                if (lag == 0) {
                    if (late) assertTrue(own < n, "no lag: a copy judged before its switch was known: " + c.summary());
                    continue;
                }
                assertEquals(n, got.size(), c.summary());
                assertEquals(0, c.unmatched(), c.summary());
                for (DispatcherCopies.Version v : got) {
                    int i = (int) (v.monotonicNs() / 1000) - 1;
                    assertArrayEquals(half(i + 1), v.bytes(), "switch " + i + " got its own copy");
                }
            }
        }
    }

    /**
     * Copies arrive out of time order and late (CPUs race into the ring, the consumer lags): each still goes to its
     * own switch, as long as it is there before the loop passes the next switch to the same half.
     */
    @Test
    void manySwitchesInAnyArrivalOrder() {
        Random rnd = new Random(29);
        for (int round = 0; round < 50; round++) {
            DispatcherCopies c = new DispatcherCopies(0);
            int n = 40;
            List<DispatcherCopies.Version> got = new java.util.ArrayList<>();
            List<DispatcherCopies.Copy> held = new java.util.ArrayList<>();
            for (int i = 0; i <= n; i++) {
                long t = 1000L * (i + 1);
                if (i > 0) { // the previous switch's copy, taken within its update, delivered now or one switch later
                    int j = i - 1;
                    held.add(new DispatcherCopies.Copy(j % 2 == 0 ? A : B, XDP, 1000L * (j + 1) + 1 + rnd.nextInt(900),
                            half(j + 1)));
                    List<DispatcherCopies.Copy> now = new java.util.ArrayList<>();
                    for (var it = held.iterator(); it.hasNext(); ) {
                        DispatcherCopies.Copy k = it.next();
                        if (k.monotonicNs() < t - 1000 || rnd.nextBoolean()) {
                            now.add(k);
                            it.remove();
                        }
                    }
                    java.util.Collections.shuffle(now, rnd);
                    now.forEach(c::copied);
                }
                got.addAll(c.settle(t));
                if (i < n) c.switched(i % 2 == 0 ? A : B, XDP, t, half(0));
            }
            held.forEach(c::copied);
            got.addAll(c.settleAll());
            assertEquals(n, got.size(), c.summary());
            for (DispatcherCopies.Version v : got) {
                int i = (int) (v.monotonicNs() / 1000) - 1;
                assertEquals(i % 2 == 0 ? A : B, v.half());
                assertArrayEquals(half(i + 1), v.bytes(), "switch " + i + " got its own copy");
            }
        }
    }

    /** Through the tracker into an archive: the version in force after the switch has the in-kernel bytes. */
    @Test
    void theArchivePrefersTheInKernelCopy(@TempDir Path dir) throws Exception {
        String boot = "boot-r29c";
        try (Archive archive = TrampolineCopiesTest.recordingArchive(dir.resolve("archive"), boot)) {
            DispatcherCopies c = new DispatcherCopies(0);
            try (ArchiveSink sink = new ArchiveSink(archive, "rec1")) {
                RegionTracker t = new RegionTracker(boot, sink);
                t.accept(read(A, 10, half(1)));           // the page's first copy, at its KSYMBOL
                t.accept(read(A, 100, half(9)));          // the switch's user-space read: a later version, too late
                c.switched(A, XDP, 100, half(9));
                c.copied(new DispatcherCopies.Copy(A, XDP, 140, half(2)));
                for (DispatcherCopies.Version v : c.settle(500)) {
                    t.accept(new CapturedText(Hook.DISPATCHER_SWITCH, v.half(), v.bytes(), 0, 0, v.name(),
                            v.monotonicNs(), 0, 1, 0, 0, true));
                }
                sink.flush();
            }
            archive.read(s -> {
                assertArrayEquals(half(1), bytesAt(s, boot, 50), "before the switch: the earlier version");
                assertArrayEquals(half(2), bytesAt(s, boot, 100), "from the switch: the in-kernel copy");
                assertArrayEquals(half(2), bytesAt(s, boot, 400));
                return null;
            });
        }
    }

    private static byte[] bytesAt(ptfence.store.Snapshot s, String boot, long time) {
        Optional<ImageAt> at = RegionIndex.bytesAt(s, boot, A, time);
        assertTrue(at.isPresent(), "a version at " + time);
        return at.get().bytes();
    }

    private static CapturedText read(long half, long ns, byte[] bytes) {
        return new CapturedText(Hook.KERNEL_READ, half, bytes, 0, 0, XDP, ns, 0, 1, 0, 0, true);
    }
}

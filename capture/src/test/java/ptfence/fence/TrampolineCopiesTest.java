package ptfence.fence;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.region.ImageAt;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;

/**
 * Which in-kernel trampoline copy is which attach poke's version ({@link TrampolineCopies}), and that the archive
 * then answers with the in-kernel bytes: the rule is "the last copy of the image built before the poke and after the
 * previous attach poke to the same address"; a copy no poke explains is left out, never given to another version.
 */
class TrampolineCopiesTest {
    static final long A = 0xffffffffc0002000L, B = 0xffffffffc0002400L, C = 0xffffffffc0003000L;

    static byte[] image(int fill) {
        byte[] b = new byte[187];
        Arrays.fill(b, (byte) fill);
        return b;
    }

    static TrampolineCopies.Copy copy(long at, String name, long ns, int fill) {
        return new TrampolineCopies.Copy(at, name, ns, image(fill));
    }

    @Test
    void theBuildBeforeThePokeIsItsVersion() {
        TrampolineCopies c = new TrampolineCopies();
        c.copied(copy(A, "bpf_trampoline_1", 90, 2));
        TrampolineCopies.Copy got = c.attached(A, "bpf_trampoline_1", 100, image(1), 0);
        assertNotNull(got);
        assertArrayEquals(image(2), got.bytes());
        assertEquals("1 in-kernel copies at the attach poke, 1 differed from the read at the poke, 0 unmatched",
                c.summary());
        c.copied(copy(A, "bpf_trampoline_2", 190, 3));
        assertNotNull(c.attached(A, "bpf_trampoline_2", 200, image(3), 0), "an image again at the address");
        assertEquals(2, c.matched());
        assertEquals(1, c.differed(), "an equal read is matched, not counted as differing");
        assertNull(c.attached(A, "bpf_trampoline_2", 300, null, 0), "a second poke to the same image: no new build");
    }

    @Test
    void copiesThatNoPokeExplainsAreLeftOut() {
        TrampolineCopies c = new TrampolineCopies();
        c.copied(copy(A, "bpf_trampoline_1", 50, 1));     // a build whose update failed: rebuilt at the address
        c.copied(copy(A, "bpf_trampoline_1", 80, 2));
        c.copied(copy(A, "bpf_trampoline_1", 120, 9));    // after the poke: a later build's
        assertArrayEquals(image(2), c.attached(A, "bpf_trampoline_1", 100, null, 0).bytes(), "the last before it");
        assertEquals(1, c.unmatched(), "the superseded build");
        // the consumer delivered a copy only after the loop passed its poke: the next image at the address (its copy
        // still on the way) must not get it
        assertNull(c.attached(B, "bpf_trampoline_2", 200, null, 0));
        c.copied(copy(B, "bpf_trampoline_2", 150, 5));
        assertNull(c.attached(B, "bpf_trampoline_2", 400, null, 0), "older than the previous poke to the address");
        assertEquals(2, c.unmatched());
        c.copied(copy(C, "bpf_trampoline_3", 450, 6));
        assertNull(c.attached(C, "bpf_trampoline_4", 500, null, 0), "not another image's: its name");
        assertEquals(3, c.unmatched());
        c.copied(copy(C, "bpf_trampoline_5", 600, 7));    // never attached
        c.end();
        assertEquals(5, c.unmatched(), "with the build after the first poke to A, which no poke took");
        assertEquals(1, c.matched());
        assertTrue(c.summary().endsWith("5 unmatched"), c.summary());
    }

    /** The loop right behind the kernel: the copy the consumer delivers a little later is waited for. */
    @Test
    void thePokeWaitsBrieflyForACopyOnItsWay() throws Exception {
        TrampolineCopies c = new TrampolineCopies();
        Thread consumer = new Thread(() -> {
            try {
                Thread.sleep(30);
            } catch (InterruptedException e) {
                return;
            }
            c.copied(copy(A, "bpf_trampoline_1", 90, 7));
        });
        consumer.start();
        TrampolineCopies.Copy got = c.attached(A, "bpf_trampoline_1", 100, null, 5_000_000_000L);
        consumer.join();
        assertNotNull(got);
        assertArrayEquals(image(7), got.bytes());
    }

    /**
     * Builds and attach pokes at three addresses reused over and over (the BPF pack's chunks), copies delivered in
     * any order and late (CPUs race into the ring, the consumer lags), some only after the loop passed their poke:
     * every poke whose copy was there gets its own build's bytes, and no poke gets another build's.
     */
    @Test
    void manyBuildsInAnyArrivalOrder() {
        Random rnd = new Random(29);
        long[] at = {A, B, C};
        for (int round = 0; round < 50; round++) {
            TrampolineCopies c = new TrampolineCopies();
            int n = 60, late = 0, got = 0;
            List<TrampolineCopies.Copy> held = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                long poke = 1000L * (i + 1), built = poke - 1 - rnd.nextInt(900);
                boolean tooLate = rnd.nextInt(8) == 0;
                // a build retried (its update failed): an earlier copy at the same address and name, which the
                // rebuild's copy supersedes (were that one lost, the rule would take this one: the ring's loss counts)
                boolean failedFirst = !tooLate && rnd.nextInt(5) == 0;
                if (failedFirst) held.add(copy(at[i % 3], "bpf_trampoline_" + i, built - 50, 200));
                TrampolineCopies.Copy own = copy(at[i % 3], "bpf_trampoline_" + i, built, i);
                if (!tooLate) held.add(own);
                List<TrampolineCopies.Copy> now = new ArrayList<>();
                for (var it = held.iterator(); it.hasNext(); ) {
                    TrampolineCopies.Copy k = it.next();
                    if (k.monotonicNs() < poke - 500 || k == own || rnd.nextBoolean()) {
                        now.add(k);
                        it.remove();
                    }
                }
                Collections.shuffle(now, rnd);
                now.forEach(c::copied);
                TrampolineCopies.Copy v = c.attached(at[i % 3], "bpf_trampoline_" + i, poke, null, 0);
                if (tooLate) {
                    assertNull(v, "poke " + i + ": its copy is not there: the read at the poke stays");
                    c.copied(own); // arrives after the loop passed the poke
                    late++;
                } else {
                    assertNotNull(v, "poke " + i);
                    assertArrayEquals(image(i), v.bytes(), "poke " + i + " got its own build");
                    got++;
                }
            }
            held.forEach(c::copied);
            c.end();
            assertEquals(got, c.matched(), c.summary());
            assertTrue(c.unmatched() >= late, c.summary());
        }
    }

    /**
     * Through the tracker into an archive: the late read at the KSYMBOL (6.1: before the build wrote the image) is
     * the version until the attach poke, the build's copy from it, and the retirement poke inside the image then
     * applies to the copy.
     */
    @Test
    void theArchiveHasTheBuildsCopyFromTheAttachPoke(@TempDir Path dir) throws Exception {
        TrampolineCopies c = new TrampolineCopies();
        throughAnArchive(dir, Hook.TRAMPOLINE_BUILD, built -> {
            c.copied(copy(A, "bpf_trampoline_7", 60, 0));
            c.copied(new TrampolineCopies.Copy(A, "bpf_trampoline_7", 80, built));
            return c.attached(A, "bpf_trampoline_7", 100, image(0xcc), 0);
        });
    }

    /** The nop5 at offset 100 that the retirement poke makes a jmp. */
    private static final byte[] JMP = {(byte) 0xe9, 0x10, 0, 0, 0};

    /**
     * The KSYMBOL's read at 10 (all fill), the copy {@code attach} judges at the attach poke at 100 (given the
     * image as built) delivered as {@code hook}'s version from the poke, then the retirement poke at 300: the archive
     * answers the read before the poke, the built image from it, the retired image from 300.
     */
    private static void throughAnArchive(Path dir, Hook hook,
            ThrowingFunction<byte[], TrampolineCopies.Copy> attach) throws Exception {
        String boot = "boot-" + hook;
        byte[] built = image(2);
        built[100] = 0x0f; built[101] = 0x1f; built[102] = 0x44; built[103] = 0x00; built[104] = 0x00; // nop5
        byte[] retired = built.clone();
        System.arraycopy(JMP, 0, retired, 100, 5);
        try (Archive archive = TrackedArchive.write(dir.resolve("archive"), boot, t -> {
            t.accept(new CapturedText(Hook.KERNEL_READ, A, image(0xcc), 0, 0, "bpf_trampoline_7", 10, 0, 1, 0, 0,
                    true));
            TrampolineCopies.Copy v = attach.apply(built);
            assertNotNull(v, "a copy for the attach poke");
            t.accept(new CapturedText(hook, A, v.bytes(), 0, 0, v.name(), 100, 0, 1, 0, 0, true));
            t.textPoke(A + 100, Arrays.copyOfRange(built, 100, 105), JMP, 300);
        })) {
            archive.read(s -> {
                assertArrayEquals(image(0xcc), bytesAt(s, boot, 50), "before the attach: the KSYMBOL's read");
                assertArrayEquals(built, bytesAt(s, boot, 100), "from the attach poke: the in-kernel copy");
                assertArrayEquals(built, bytesAt(s, boot, 299));
                assertArrayEquals(retired, bytesAt(s, boot, 300), "the retirement poke over the in-kernel copy");
                return null;
            });
        }
    }

    interface ThrowingFunction<T, R> {
        R apply(T t) throws Exception;
    }

    /**
     * The update hook's rule (6.1): a copy is taken after its attach poke, under the trampoline's mutex, so a poke's
     * version is the first copy of its image taken after it; copies taken before the poke (an earlier image at the
     * address, whose copy came after the loop passed its poke) are left out.
     */
    @Test
    void afterThePokeTheFirstCopyAfterItIsItsVersion() {
        TrampolineCopies c = new TrampolineCopies();
        c.afterPoke();
        c.copied(copy(A, "bpf_trampoline_1", 90, 1));   // an earlier image's, which came too late for its poke
        c.copied(copy(A, "bpf_trampoline_1", 130, 3));  // a later image's at the address (its poke not yet reached)
        c.copied(copy(A, "bpf_trampoline_1", 110, 2));
        TrampolineCopies.Copy got = c.attached(A, "bpf_trampoline_1", 100, image(2), 0);
        assertNotNull(got);
        assertArrayEquals(image(2), got.bytes(), "the first after the poke");
        assertEquals(1, c.unmatched(), "the one before the poke");
        assertArrayEquals(image(3), c.attached(A, "bpf_trampoline_1", 120, null, 0).bytes());
        assertNull(c.attached(B, "bpf_trampoline_2", 200, null, 0), "none after the poke: the read stays");
        c.copied(copy(B, "bpf_trampoline_2", 210, 4));
        c.copied(copy(C, "bpf_trampoline_3", 260, 5));
        assertNull(c.attached(C, "bpf_trampoline_4", 250, null, 0), "not another image's: its name");
        assertNull(c.attached(B, "bpf_trampoline_5", 300, null, 0), "the late copy is not the next image's");
        c.end();
        assertEquals(2, c.matched());
        assertEquals(0, c.differed());
        assertEquals(3, c.unmatched(), c.summary());
    }

    /**
     * 6.1's order through the loop: the loop reaches the attach poke right behind the kernel, the consumer delivers
     * the update's copy (taken after the poke) a little later; the loop waits for it and takes it, and only then
     * goes on (to the retirement poke, which the tracker applies over it); a copy of the previous image at the
     * address, which came too late, is not taken.
     */
    @Test
    void thePokeWaitsForTheUpdatesCopyAfterIt() throws Exception {
        TrampolineCopies c = new TrampolineCopies();
        c.afterPoke();
        c.copied(copy(A, "bpf_trampoline_1", 40, 6));
        Thread consumer = new Thread(() -> {
            try {
                Thread.sleep(30);
            } catch (InterruptedException e) {
                return;
            }
            c.copied(copy(A, "bpf_trampoline_1", 105, 7));
        });
        consumer.start();
        TrampolineCopies.Copy got = c.attached(A, "bpf_trampoline_1", 100, null, 5_000_000_000L);
        consumer.join();
        assertNotNull(got);
        assertArrayEquals(image(7), got.bytes());
        assertEquals(1, c.unmatched());
    }

    /**
     * Updates at three reused addresses (6.1: a page freed after its retirement can be the next image's), each
     * copied after its poke and before the next poke to its address, delivered in any order and late: a poke whose
     * copy is there gets its own; one whose copy came after the loop passed it gets none (the read stays) and that
     * copy goes to no other poke.
     */
    @Test
    void manyUpdatesInAnyArrivalOrder() {
        Random rnd = new Random(61);
        long[] at = {A, B, C};
        for (int round = 0; round < 50; round++) {
            TrampolineCopies c = new TrampolineCopies();
            c.afterPoke();
            int n = 60, late = 0, got = 0;
            List<TrampolineCopies.Copy> held = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                long poke = 1000L * (i + 1), copied = poke + 1 + rnd.nextInt(2900); // before the next poke there
                String name = "bpf_trampoline_" + (i % 3) + "_" + (i / 3 % 2); // names recur, as selectors do
                boolean tooLate = rnd.nextInt(8) == 0;
                TrampolineCopies.Copy own = copy(at[i % 3], name, copied, i);
                List<TrampolineCopies.Copy> now = new ArrayList<>();
                for (var it = held.iterator(); it.hasNext(); ) {
                    TrampolineCopies.Copy k = it.next();
                    if (rnd.nextBoolean()) {
                        now.add(k);
                        it.remove();
                    }
                }
                if (!tooLate) now.add(own);
                Collections.shuffle(now, rnd);
                now.forEach(c::copied);
                TrampolineCopies.Copy v = c.attached(at[i % 3], name, poke, null, 0);
                if (tooLate) {
                    assertNull(v, "poke " + i + ": its copy is not there: the read at the poke stays");
                    held.add(own); // arrives after the loop passed the poke
                    late++;
                } else {
                    assertNotNull(v, "poke " + i);
                    assertArrayEquals(image(i), v.bytes(), "poke " + i + " got its own update's copy");
                    got++;
                }
            }
            held.forEach(c::copied);
            c.end();
            assertEquals(got, c.matched(), c.summary());
            assertEquals(late, c.unmatched(), c.summary());
        }
    }

    /**
     * Through the tracker into an archive, 6.1's order: the KSYMBOL's read (the symbol comes before the image is
     * written), the attach poke, the old image's retirement, the update's copy after both, arriving while the loop
     * waits at the attach poke; the copy is the version from the poke, and the retirement poke inside it, later,
     * applies over it.
     */
    @Test
    void theArchiveHasTheUpdatesCopyFromTheAttachPoke(@TempDir Path dir) throws Exception {
        TrampolineCopies c = new TrampolineCopies();
        c.afterPoke();
        throughAnArchive(dir, Hook.TRAMPOLINE_UPDATE, built -> {
            byte[] retired = built.clone();
            System.arraycopy(JMP, 0, retired, 100, 5);
            Thread consumer = new Thread(() -> {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
                c.copied(new TrampolineCopies.Copy(A, "bpf_trampoline_7", 120, built));
            });
            consumer.start();
            TrampolineCopies.Copy v = c.attached(A, "bpf_trampoline_7", 100, retired, 5_000_000_000L);
            consumer.join();
            return v;
        });
        assertEquals(1, c.differed(), "a late read at the poke had the retirement already");
    }

    private static byte[] bytesAt(ptfence.store.Snapshot s, String boot, long time) {
        Optional<ImageAt> at = RegionIndex.bytesAt(s, boot, A, time);
        assertTrue(at.isPresent(), "a version at " + time);
        return at.get().bytes();
    }
}

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
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
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
        // the consumer delivered a copy only after the loop passed its poke: still that poke's version (judged as it
        // comes), and the next image at the address (its copy still on the way) must not get it
        assertNull(c.attached(B, "bpf_trampoline_2", 200, null, 0));
        TrampolineCopies.Late late = c.copied(copy(B, "bpf_trampoline_2", 150, 5));
        assertNotNull(late, "a copy after the loop passed its poke");
        assertEquals(200, late.pokeNs());
        assertArrayEquals(image(5), late.copy().bytes());
        assertNull(c.copied(copy(B, "bpf_trampoline_2", 140, 4)), "older than the copy given: superseded");
        assertEquals(2, c.unmatched());
        assertNull(c.attached(B, "bpf_trampoline_2", 400, null, 0), "older than the previous poke to the address");
        assertNull(c.copied(copy(B, "bpf_trampoline_2", 190, 8)), "before the previous poke: not the next one's");
        assertEquals(3, c.unmatched());
        c.copied(copy(C, "bpf_trampoline_3", 450, 6));
        assertNull(c.attached(C, "bpf_trampoline_4", 500, null, 0), "not another image's: its name");
        assertEquals(4, c.unmatched());
        assertNull(c.copied(copy(C, "bpf_trampoline_3", 480, 6)), "after the poke, not its name: left out");
        c.copied(copy(C, "bpf_trampoline_5", 600, 7));    // never attached
        c.end();
        assertEquals(7, c.unmatched(), "with the build after the first poke to A, which no poke took");
        assertEquals(2, c.matched());
        assertEquals(1, c.late());
        assertTrue(c.summary().endsWith("7 unmatched"), c.summary());
        assertTrue(c.summary().startsWith("2 in-kernel copies at the attach poke (1 came after the loop passed it)"),
                c.summary());
    }

    /**
     * The loop ahead of the consumer (guest 6.12 beside the BPF churn: 122 of 300 copies came after the loop's wait):
     * the loop does not wait, and the copy, whichever thread gets there first, is the poke's version exactly once,
     * at the poke or as it comes.
     */
    @Test
    void aCopyAfterTheLoopPassedItsPokeIsStillItsVersion() throws Exception {
        Random rnd = new Random(2912);
        for (int round = 0; round < 200; round++) {
            TrampolineCopies c = new TrampolineCopies();
            List<Object> got = Collections.synchronizedList(new ArrayList<>());
            Thread consumer = new Thread(() -> {
                for (int i = 0; i < 20; i++) {
                    if (rnd.nextInt(4) == 0) Thread.yield();
                    TrampolineCopies.Late l = c.copied(copy(A + 64L * i, "bpf_trampoline_" + i, 1000L * i + 500, i));
                    if (l != null) got.add(l);
                }
            });
            consumer.start();
            for (int i = 0; i < 20; i++) {
                TrampolineCopies.Copy v = c.attached(A + 64L * i, "bpf_trampoline_" + i, 1000L * i + 900, null, 0);
                if (v != null) got.add(v);
            }
            consumer.join();
            assertEquals(20, got.size(), c.summary());
            assertEquals(20, c.matched(), c.summary());
            assertEquals(0, c.unmatched(), c.summary());
            for (Object o : got) {
                TrampolineCopies.Copy k = o instanceof TrampolineCopies.Late l ? l.copy() : (TrampolineCopies.Copy) o;
                int i = (int) ((k.image() - A) / 64);
                assertArrayEquals(image(i), k.bytes());
                if (o instanceof TrampolineCopies.Late l) assertEquals(1000L * i + 900, l.pokeNs());
            }
        }
    }

    /**
     * Builds and attach pokes at three addresses reused over and over (the BPF pack's chunks), copies delivered in
     * any order and late (CPUs race into the ring, the consumer lags), some only after the loop passed their poke:
     * every poke gets its own build's bytes, at the poke or as the copy comes, and no poke gets another build's.
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
                    assertNull(v, "poke " + i + ": its copy is not there yet");
                    TrampolineCopies.Late l = c.copied(own); // arrives after the loop passed the poke
                    assertNotNull(l, "poke " + i + ": its copy, late, is still its version");
                    assertEquals(poke, l.pokeNs());
                    assertArrayEquals(image(i), l.copy().bytes(), "poke " + i + " got its own build, late");
                    late++;
                    got++;
                } else {
                    assertNotNull(v, "poke " + i);
                    assertArrayEquals(image(i), v.bytes(), "poke " + i + " got its own build");
                    got++;
                }
            }
            held.forEach(c::copied);
            c.end();
            assertEquals(got, c.matched(), c.summary());
            assertEquals(late, c.late(), c.summary());
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
        try (Archive archive = recordingArchive(dir.resolve("archive"), boot)) {
            try (ArchiveSink sink = new ArchiveSink(archive, "rec1")) {
                RegionTracker t = new RegionTracker(boot, sink);
                t.accept(new CapturedText(Hook.KERNEL_READ, A, image(0xcc), 0, 0, "bpf_trampoline_7", 10, 0, 1, 0, 0,
                        true));
                TrampolineCopies.Copy v = attach.apply(built);
                assertNotNull(v, "a copy for the attach poke");
                t.accept(new CapturedText(hook, A, v.bytes(), 0, 0, v.name(), 100, 0, 1, 0, 0, true));
                t.textPoke(A + 100, Arrays.copyOfRange(built, 100, 105), JMP, 300);
                sink.flush();
            }
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

    /**
     * 6.12's pack, as the guest had it: a program P loaded at A+72 and freed at 90, image I built at A over P's chunk
     * (KSYMBOL at 100, read then as one chunk of int3 fill), its attach poke at 120 (the loop's read there: another
     * image's bytes, or none), its retirement poke at 300 inside it (+100, also inside P's old extent), its
     * unregister at 400. The loop's records come in time order; P's FREE copy and I's build copy come through the
     * fence's ring at any point after (the consumer behind). Whatever the order, the archive has the build's bytes
     * from the attach poke, the retired image from 300 (the jump at +100 too, which P, still live in the tracker,
     * may have taken first), and P holds none of I's span from 120.
     */
    @Test
    void aLateBuildCopyRedrawsTheImagesVersions(@TempDir Path dir) throws Exception {
        byte[] built = image(2);
        built[100] = 0x0f; built[101] = 0x1f; built[102] = 0x44; built[103] = 0x00; built[104] = 0x00; // nop5
        byte[] retired = built.clone();
        System.arraycopy(JMP, 0, retired, 100, 5);
        byte[] prog = new byte[64];
        Arrays.fill(prog, (byte) 0x55);
        byte[] chunk = new byte[64];
        Arrays.fill(chunk, (byte) 0xcc);
        Random rnd = new Random(477);
        for (int round = 0; round < 60; round++) {
            String boot = "boot-" + round;
            boolean readAtPoke = rnd.nextBoolean();
            int buildAt = 1 + rnd.nextInt(4), freeAt = rnd.nextInt(5); // after which loop step each comes
            try (Archive archive = recordingArchive(dir.resolve("a" + round), boot)) {
                try (ArchiveSink sink = new ArchiveSink(archive, "rec1")) {
                    RegionTracker t = new RegionTracker(boot, sink);
                    t.freeHookActive(true);
                    t.accept(new CapturedText(Hook.LOAD, A + 72, prog, 7, 7, "bpf_prog_0000000000000007_gpure_477",
                            50, 0, 1, 0, 0, true));
                    for (int step = 0; step <= 4; step++) {
                        if (freeAt == step) t.accept(new CapturedText(Hook.FREE, A + 72, prog, 7, 7,
                                "bpf_prog_0000000000000007_gpure_477", 90, 0, 1, 0, 0, true));
                        if (buildAt == step) t.accept(new CapturedText(Hook.TRAMPOLINE_BUILD, A, built, 0, 0,
                                "bpf_trampoline_9", 120, 0, 1, 0, 0, true));
                        switch (step) {
                            case 0 -> t.accept(new CapturedText(Hook.KERNEL_READ, A, chunk, 0, 0, "bpf_trampoline_9",
                                    100, 0, 1, 0, 0, true));
                            case 1 -> {
                                t.textPoke(0xffffffff81000000L, new byte[] {(byte) 0xe8, 1, 2, 3, 4}, 120);
                                if (readAtPoke) t.accept(new CapturedText(Hook.KERNEL_READ, A, image(3), 0, 0,
                                        "bpf_trampoline_9", 120, 0, 1, 0, 0, true));
                            }
                            case 2 -> t.textPoke(A + 100, Arrays.copyOfRange(built, 100, 105), JMP, 300);
                            case 3 -> t.ksymbolUnregistered(A, "bpf_trampoline_9", 400);
                            default -> { }
                        }
                    }
                    sink.flush();
                }
                String what = "round " + round + " (read at the poke " + readAtPoke + ", build after step " + buildAt
                        + ", P's free after step " + freeAt + ")";
                archive.read(s -> {
                    assertArrayEquals(built, bytesAt(s, boot, 120), what + ": from the attach poke, the build's copy");
                    assertArrayEquals(built, bytesAt(s, boot, 299), what);
                    assertArrayEquals(retired, bytesAt(s, boot, 300), what + ": the retirement poke over it");
                    assertArrayEquals(retired, bytesAt(s, boot, 399), what);
                    for (long time : new long[] {120, 250, 300, 399}) {
                        Optional<ImageAt> p = RegionIndex.bytesAt(s, boot, A + 100, time);
                        // the image, or where no text held the jump when it came, a text_poke region of its bytes
                        assertTrue(p.isPresent() && !p.get().region().name().contains("gpure_477"),
                                what + ": P does not hold +100 at " + time);
                    }
                    assertTrue(RegionIndex.bytesAt(s, boot, A, 400).isEmpty(), what + ": ended at its unregister");
                    return null;
                });
            }
        }
    }

    /**
     * Guest 6.1: one trampoline's images at one address again and again (one name); the fence's worker delivered a
     * later image's FREE before the recorder's loop had registered that image, while the tracker still remembered an
     * older image there ended 20 s before: the FREE's bytes became a version over the whole gap. Such a FREE waits
     * for the loop to pass its time.
     */
    @Test
    void aFreeAheadOfTheLoopWaitsForItsImage(@TempDir Path dir) throws Exception {
        String boot = "boot-ahead";
        try (Archive archive = recordingArchive(dir.resolve("archive"), boot)) {
            try (ArchiveSink sink = new ArchiveSink(archive, "rec1")) {
                RegionTracker t = new RegionTracker(boot, sink);
                t.accept(new CapturedText(Hook.KERNEL_READ, A, image(1), 0, 0, "bpf_trampoline_5", 10, 0, 1, 0, 0,
                        true));
                t.ksymbolUnregistered(A, "bpf_trampoline_5", 20);
                t.textPoke(0xffffffff81000000L, new byte[] {(byte) 0xe8, 1, 2, 3, 4}, 30); // the loop at 30
                t.accept(new CapturedText(Hook.TRAMPOLINE_FREE, A, image(2), 0, 0, "bpf_trampoline_5", 45, 0, 1, 0,
                        0, true)); // the worker's, ahead
                t.sidebandTime(40);
                t.accept(new CapturedText(Hook.KERNEL_READ, A, image(2), 0, 0, "bpf_trampoline_5", 40, 0, 1, 0, 0,
                        true));
                t.ksymbolUnregistered(A, "bpf_trampoline_5", 46);
                t.closeUnfreed();
                sink.flush();
            }
            archive.read(s -> {
                assertArrayEquals(image(1), bytesAt(s, boot, 15));
                assertTrue(RegionIndex.bytesAt(s, boot, A, 30).isEmpty(), "nothing between the two images");
                assertArrayEquals(image(2), bytesAt(s, boot, 41));
                assertTrue(RegionIndex.bytesAt(s, boot, A, 46).isEmpty(), "ended at its FREE or unregister");
                return null;
            });
        }
    }

    /**
     * Guest 6.12 under an overload (kept run, 28 Nov): one trampoline's images at one address, one after the other
     * (the second a different size), each build copy and FREE copy reaching the tracker anywhere after its image's
     * KSYMBOL, the loop's records in time order: at every time the archive answers the image then in force, as
     * built, then retired; never the other image's bytes.
     */
    @Test
    void twoImagesAtOneAddressWithCopiesInAnyOrder(@TempDir Path dir) throws Exception {
        Random rnd = new Random(6442495068L);
        for (int round = 0; round < 200; round++) {
            String boot = "boot-" + round;
            byte[][] built = {sized(304, 0x21), sized(188, 0x42)};
            byte[][] retired = new byte[2][];
            for (int i = 0; i < 2; i++) {
                retired[i] = built[i].clone();
                System.arraycopy(JMP, 0, retired[i], 0x8d, 5);
            }
            long[] k = {1000, 5000}, p = {1100, 5100}, r = {2000, 6000}, u = {3000, 7000};
            // the loop's records, in time order; each image's copies join at a random step after its KSYMBOL
            List<Runnable> steps = new ArrayList<>();
            List<List<Runnable>> extra = new ArrayList<>();
            RegionTracker[] t = new RegionTracker[1];
            for (int i = 0; i < 2; i++) {
                int n = i;
                steps.add(() -> { // the KSYMBOL: the loop's read of the image's chunk, then its time (as Recorder)
                    accept(t[0], new CapturedText(Hook.KERNEL_READ, A, sized(64, 0xcc), 0, 0, "bpf_trampoline_9",
                            k[n], 0, 1, 0, 0, true));
                    sideband(t[0], k[n]);
                });
                steps.add(() -> poke(t[0], 0xffffffff81000000L, new byte[] {(byte) 0xe8, 1, 2, 3, (byte) n}, null,
                        p[n]));
                steps.add(() -> poke(t[0], A + 0x8d, JMP, Arrays.copyOfRange(built[n], 0x8d, 0x92), r[n]));
                steps.add(() -> unregistered(t[0], u[n]));
            }
            for (int i = 0; i < steps.size() + 1; i++) extra.add(new ArrayList<>());
            StringBuilder order = new StringBuilder();
            for (int i = 0; i < 2; i++) {
                int n = i;
                int b = 1 + 4 * i + rnd.nextInt(steps.size() - 4 * i), f = 1 + 4 * i + rnd.nextInt(steps.size() - 4 * i);
                order.append(" image ").append(i).append(": build before step ").append(b).append(", free before step ")
                        .append(f);
                extra.get(b).add(() -> accept(t[0], new CapturedText(
                        Hook.TRAMPOLINE_BUILD, A, built[n], 0, 0, "bpf_trampoline_9", p[n], 0, 1, 0, 0, true)));
                extra.get(f).add(() -> accept(t[0], new CapturedText(
                        Hook.TRAMPOLINE_FREE, A, retired[n], 0, 0, "bpf_trampoline_9", u[n] + 10, 0, 1, 0, 0, true)));
            }
            for (List<Runnable> e : extra) Collections.shuffle(e, rnd);
            try (Archive archive = recordingArchive(dir.resolve("a" + round), boot)) {
                try (ArchiveSink sink = new ArchiveSink(archive, "rec1")) {
                    t[0] = new RegionTracker(boot, sink);
                    t[0].freeHookActive(true);
                    for (int i = 0; i <= steps.size(); i++) {
                        extra.get(i).forEach(Runnable::run);
                        if (i < steps.size()) steps.get(i).run();
                    }
                    t[0].closeUnfreed();
                    sink.flush();
                }
                String what = "round " + round + order + " (steps: KSYMBOL, attach, retire, unregister per image)";
                archive.read(s -> {
                    for (int i = 0; i < 2; i++) {
                        assertArrayEquals(built[i], bytesAt(s, boot, p[i], what), what + ": image " + i + " as built");
                        assertArrayEquals(built[i], bytesAt(s, boot, r[i] - 1), what + ": image " + i);
                        assertArrayEquals(retired[i], bytesAt(s, boot, r[i]), what + ": image " + i + " retired");
                        assertArrayEquals(retired[i], bytesAt(s, boot, u[i] - 1), what + ": image " + i);
                    }
                    return null;
                });
            }
        }
    }

    private static byte[] sized(int length, int fill) {
        byte[] b = new byte[length];
        Arrays.fill(b, (byte) fill);
        return b;
    }

    private static void accept(RegionTracker t, CapturedText c) {
        try {
            t.accept(c);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void sideband(RegionTracker t, long time) {
        try {
            t.sidebandTime(time);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void unregistered(RegionTracker t, long time) {
        try {
            t.ksymbolUnregistered(A, "bpf_trampoline_9", time);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void poke(RegionTracker t, long at, byte[] bytes, byte[] old, long time) {
        try {
            if (old == null) t.textPoke(at, bytes, time);
            else t.textPoke(at, old, bytes, time);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** An archive at {@code dir} with recording "rec1" of {@code boot} registered, for a tracker's sink. */
    static Archive recordingArchive(Path dir, String boot) throws java.io.IOException {
        Archive archive = Archive.open(dir);
        archive.write(b -> {
            Recordings.register(b, Recording.started("rec1", "", boot, 0));
            return null;
        });
        return archive;
    }

    private static byte[] bytesAt(ptfence.store.Snapshot s, String boot, long time) {
        return bytesAt(s, boot, time, "");
    }

    private static byte[] bytesAt(ptfence.store.Snapshot s, String boot, long time, String what) {
        Optional<ImageAt> at = RegionIndex.bytesAt(s, boot, A, time);
        assertTrue(at.isPresent(), what + ": a version at " + time);
        return at.get().bytes();
    }
}

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
        String boot = "boot-t29";
        byte[] built = image(2);
        built[100] = 0x0f; built[101] = 0x1f; built[102] = 0x44; built[103] = 0x00; built[104] = 0x00; // nop5
        byte[] retired = built.clone();
        byte[] jmp = {(byte) 0xe9, 0x10, 0, 0, 0};
        System.arraycopy(jmp, 0, retired, 100, 5);
        try (Archive archive = Archive.open(dir.resolve("archive"))) {
            archive.write(b -> {
                Recordings.register(b, Recording.started("rec1", "", boot, 0));
                return null;
            });
            TrampolineCopies c = new TrampolineCopies();
            try (ArchiveSink sink = new ArchiveSink(archive, "rec1")) {
                RegionTracker t = new RegionTracker(boot, sink);
                t.accept(new CapturedText(Hook.KERNEL_READ, A, image(0xcc), 0, 0, "bpf_trampoline_7", 10, 0, 1, 0, 0,
                        true));
                c.copied(copy(A, "bpf_trampoline_7", 60, 0));
                c.copied(new TrampolineCopies.Copy(A, "bpf_trampoline_7", 80, built));
                TrampolineCopies.Copy v = c.attached(A, "bpf_trampoline_7", 100, image(0xcc), 0);
                t.accept(new CapturedText(Hook.TRAMPOLINE_BUILD, A, v.bytes(), 0, 0, v.name(), 100, 0, 1, 0, 0,
                        true));
                t.textPoke(A + 100, Arrays.copyOfRange(built, 100, 105), jmp, 300);
                sink.flush();
            }
            archive.read(s -> {
                assertArrayEquals(image(0xcc), bytesAt(s, boot, 50), "before the attach: the KSYMBOL's read");
                assertArrayEquals(built, bytesAt(s, boot, 100), "from the attach poke: the build's copy");
                assertArrayEquals(built, bytesAt(s, boot, 299));
                assertArrayEquals(retired, bytesAt(s, boot, 300), "the retirement poke over the build's copy");
                return null;
            });
        }
    }

    private static byte[] bytesAt(ptfence.store.Snapshot s, String boot, long time) {
        Optional<ImageAt> at = RegionIndex.bytesAt(s, boot, A, time);
        assertTrue(at.isPresent(), "a version at " + time);
        return at.get().bytes();
    }
}

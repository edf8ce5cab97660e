package ptfence.fence;

import org.junit.jupiter.api.Test;
import ptfence.region.Region;
import ptfence.region.RegionKind;
import ptfence.store.ContentKey;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Module text reaches the tracker on the module fence's thread, its jump-label flips (TEXT_POKE records) on the
 * recorder's, and either can be seconds behind the other. The rule the archive must keep, whatever the order they
 * arrive in: a copy read at time C holds every poke made before C and none made after; each poke after C and before
 * the module's free is applied exactly once, in time order; the free's copy (read at F) ends the text at F. Checked
 * against the kernel's bytes at each time (the ground truth the test made), through what a decoder sees: the newest
 * region valid at an address and time, which must be unambiguous.
 */
class ModuleTextOrderTest {
    private static final long BASE = 0xffffffffc02f3000L;
    private static final byte NOP = 0x66, JMP = (byte) 0xeb;

    /** The tracker's writes as the archive keeps them: a region's id names it (an id opened twice is one region). */
    static final class Archive implements RegionTracker.RegionWriter {
        final Map<Long, Region> regions = new HashMap<>();
        final Map<ContentKey, byte[]> images = new HashMap<>();
        final Set<Long> reopened = new HashSet<>();

        @Override public synchronized void opened(Region r, byte[] bytes) {
            assertEquals(ContentKey.of(bytes), r.key());
            images.put(r.key(), bytes.clone());
            Region stored = regions.get(r.id());
            if (stored != null) {
                // RegionIndex.add keeps the stored region: a second version with its id is lost
                reopened.add(r.id());
                if (stored.isOpen() && !r.isOpen()) regions.put(r.id(), stored.closedAt(r.validTo()));
                return;
            }
            regions.put(r.id(), r);
        }

        @Override public synchronized void closed(Region r) {
            Region stored = regions.get(r.id());
            assertNotNull(stored, "closing a region never opened: " + r);
            if (stored.isOpen()) regions.put(r.id(), stored.closedAt(r.validTo()));
        }

        /** As RegionIndex.redraw: the stored region takes this end, closed already or not. */
        @Override public synchronized void redrawn(Region r) {
            Region stored = regions.get(r.id());
            assertNotNull(stored, "redrawing a region never opened: " + r);
            regions.put(r.id(), stored.closedAt(r.validTo()));
        }

        /** The byte a decoder gets at this address and time; fails where the newest regions disagree. */
        Byte at(long address, long time) {
            long newest = Long.MIN_VALUE;
            List<Region> best = new ArrayList<>();
            for (Region r : regions.values()) {
                if (!r.contains(address) || !r.validAt(time)) continue;
                if (r.validFrom() > newest) {
                    newest = r.validFrom();
                    best.clear();
                }
                if (r.validFrom() == newest) best.add(r);
            }
            if (best.isEmpty()) return null;
            Set<Byte> seen = new HashSet<>();
            for (Region r : best) seen.add(images.get(r.key())[(int) (address - r.address())]);
            assertEquals(1, seen.size(), "regions valid at 0x" + Long.toHexString(address) + " at " + time
                    + " from the same time disagree: " + best);
            return seen.iterator().next();
        }

        List<Region> module(String name) {
            return regions.values().stream().filter(r -> r.kind() == RegionKind.MODULE && r.name().equals(name))
                    .toList();
        }
    }

    private static CapturedText text(Hook h, String name, long ns, byte[] bytes) {
        return new CapturedText(h, BASE, bytes.clone(), 0, 0, name, ns, 0, 2, 0, 0, true);
    }

    private static byte[] poke(byte b) { return new byte[] {b}; }

    /**
     * Debian 6.1 in the guest (stop 38): nbd's text, copied at load, flipped by the static-key churn; rmmod's copy
     * (all sites back to nops) reached the tracker while the recorder was still ~5 s behind, before the flips it
     * already held. The free closed the module then and left a second version over the last one's whole span with
     * the free's bytes (the site of a key still on read as a nop: 2 of 1270 kcore copies differed), and the late
     * flips became TEXT_POKE regions of their own, open after the module was gone.
     */
    @Test
    void aModuleFreeAheadOfItsLastFlipsWaitsForThem() throws Exception {
        Archive w = new Archive();
        RegionTracker t = new RegionTracker("boot", w);
        long a = BASE + 2, b = BASE + 5;
        byte[] load = {1, 2, NOP, 4, 5, NOP, 7, 8};
        t.accept(text(Hook.MODULE_LOAD, "[nbd]", 100, load), null);
        assertTrue(t.textPoke(a, poke(JMP), 150));  // header_sent on
        assertTrue(t.textPoke(b, poke(JMP), 160));  // another key on
        // the module fence's copy at rmmod, all keys off again, before the recorder got to the flips at 170, 180
        t.accept(text(Hook.MODULE_FREE, "[nbd]", 200, load), null);
        t.textPoke(a, poke(NOP), 170);
        t.textPoke(b, poke(NOP), 180);
        t.textPoke(0xffffffff81000000L, poke(JMP), 210); // the recorder's stream passes the free
        assertEquals(JMP, w.at(a, 155));
        assertEquals(JMP, w.at(a, 165), "a key still on at 165 (guest: header_sent's jmp read as a nop)");
        assertEquals(JMP, w.at(b, 165));
        assertEquals(NOP, w.at(a, 175));
        assertEquals(JMP, w.at(b, 175));
        assertEquals(NOP, w.at(b, 190));
        assertNull(w.at(a, 205), "nothing at the module's sites after its free");
        assertNull(w.at(b, 205));
        assertTrue(w.module("[nbd]").stream().noneMatch(Region::isOpen), "the module ends at its free");
        assertEquals(200, w.module("[nbd]").stream().mapToLong(Region::validTo).max().orElseThrow());
        assertTrue(w.reopened.isEmpty(), "no version lost to a reused id");
    }

    /**
     * The other way round: the recorder ahead of the module fence — jump labels set while the module came up (before
     * the load hook's copy) reach the tracker after the copy. They are in the copy already; a site set and set back
     * before the read must not make versions (the last, the copy's own bytes from the copy's own start, has the
     * id of the first and is lost in the archive).
     */
    @Test
    void flipsMadeBeforeAModulesCopyAreInItsBytesWhenTheyComeAfterIt() throws Exception {
        Archive w = new Archive();
        RegionTracker t = new RegionTracker("boot", w);
        long a = BASE + 2;
        byte[] load = {1, 2, NOP, 4};
        t.accept(text(Hook.MODULE_LOAD, "[m]", 100, load), null);
        t.textPoke(a, poke(JMP), 90);
        t.textPoke(a, poke(NOP), 95);
        assertEquals(NOP, w.at(a, 100));
        assertEquals(NOP, w.at(a, 150));
        assertEquals(1, w.module("[m]").size(), "no versions for flips the copy holds: " + w.module("[m]"));
        t.textPoke(a, poke(JMP), 120);
        assertEquals(NOP, w.at(a, 110));
        assertEquals(JMP, w.at(a, 130));
        assertTrue(w.reopened.isEmpty(), "no version lost to a reused id");
    }

    /**
     * A module unloaded and loaded again at the same address (the guest's dummy/veth rounds) while the recorder is
     * behind both: the first load's last flips still belong to it, the second load's copy already holds them.
     */
    @Test
    void aReloadAtTheSameAddressBeforeTheOldFreesFlipsArrive() throws Exception {
        Archive w = new Archive();
        RegionTracker t = new RegionTracker("boot", w);
        long a = BASE + 1;
        t.accept(text(Hook.MODULE_LOAD, "[dummy]", 100, new byte[] {1, NOP, 3}), null);
        t.accept(text(Hook.MODULE_FREE, "[dummy]", 200, new byte[] {1, JMP, 3}), null);
        t.accept(text(Hook.MODULE_LOAD, "[dummy]", 300, new byte[] {1, NOP, 3}), null);
        t.textPoke(a, poke(JMP), 150);  // the first load's, made before its free
        t.textPoke(a, poke(JMP), 350);  // the second load's
        t.textPoke(a, poke(NOP), 380);
        t.accept(text(Hook.MODULE_FREE, "[dummy]", 400, new byte[] {1, NOP, 3}), null);
        t.closeUnfreed(); // the recording ends
        assertEquals(NOP, w.at(a, 120));
        assertEquals(JMP, w.at(a, 170));
        assertNull(w.at(a, 250), "between the loads");
        assertEquals(NOP, w.at(a, 320));
        assertEquals(JMP, w.at(a, 360));
        assertEquals(NOP, w.at(a, 390));
        assertNull(w.at(a, 450));
        assertEquals(0, t.liveRegions());
        assertTrue(w.reopened.isEmpty());
    }

    /**
     * The race as a loop: a module's jump-label sites flipped at random times between a load and a free, the copies'
     * and the flips' arrival interleaved at random (either thread ahead, by any number of records), a poke elsewhere
     * now and then. Every site at every time between the load and the free must read as the kernel held it.
     */
    @Test
    void everyInterleavingOfCopiesAndFlipsGivesTheKernelsBytes() throws Exception {
        Random rnd = new Random(29);
        for (int round = 0; round < 250; round++) {
            Archive w = new Archive();
            RegionTracker t = new RegionTracker("boot", w);
            int sites = 1 + rnd.nextInt(4), length = 16;
            long copy = 1_000, free = 2_000;
            byte[] mem = new byte[length];
            for (int i = 0; i < length; i++) mem[i] = (byte) (0x10 + i);
            long[] site = new long[sites];
            for (int s = 0; s < sites; s++) {
                site[s] = BASE + 1 + 3L * s;
                mem[(int) (site[s] - BASE)] = NOP;
            }
            // the kernel's history: flips from before the copy (the module coming up) to before the free
            record Flip(long address, byte value, long time) {}
            List<Flip> flips = new ArrayList<>();
            long time = copy - 50;
            while (time < free - 30) {
                time += 1 + rnd.nextInt(60);
                int s = rnd.nextInt(sites);
                byte v = rnd.nextBoolean() ? JMP : NOP;
                flips.add(new Flip(site[s], v, time));
            }
            Map<Long, byte[]> truth = new HashMap<>(); // bytes from each flip's time on
            byte[] now = mem.clone();
            for (Flip f : flips) {
                if (f.time() > copy) break;
                now[(int) (f.address() - BASE)] = f.value();
            }
            byte[] atCopy = now.clone();
            truth.put(copy, now.clone());
            for (Flip f : flips) {
                if (f.time() <= copy || f.time() >= free) continue;
                now[(int) (f.address() - BASE)] = f.value();
                truth.put(f.time(), now.clone());
            }
            byte[] atFree = now.clone();
            // arrival: the recorder's stream in time order (flips, now and then a record elsewhere), the module
            // fence's load then free, merged at random points
            List<Runnable> stream = new ArrayList<>();
            for (Flip f : flips) {
                stream.add(() -> poke(t, f.address(), f.value(), f.time()));
                if (rnd.nextInt(5) == 0) {
                    long other = f.time() + 1;
                    stream.add(() -> poke(t, 0xffffffff81000000L, JMP, other));
                }
            }
            stream.add(() -> poke(t, 0xffffffff81000000L, NOP, free + 100));
            int loadAt = rnd.nextInt(stream.size() + 1), freeAt = loadAt + rnd.nextInt(stream.size() + 1 - loadAt);
            for (int i = 0; i <= stream.size(); i++) {
                if (i == loadAt) accept(t, text(Hook.MODULE_LOAD, "[m]", copy, atCopy));
                if (i == freeAt) accept(t, text(Hook.MODULE_FREE, "[m]", free, atFree));
                if (i < stream.size()) stream.get(i).run();
            }
            t.closeUnfreed();
            String why = "round " + round + ": load after " + loadAt + ", free after " + freeAt + " of "
                    + stream.size() + " stream records; flips " + flips;
            List<Long> times = new ArrayList<>(truth.keySet());
            times.sort(null);
            for (int i = 0; i < times.size(); i++) {
                long from = times.get(i), to = i + 1 < times.size() ? times.get(i + 1) : free;
                byte[] expect = truth.get(from);
                for (long probe : new long[] {from, (from + to) / 2, to - 1}) {
                    if (probe >= to && to > from) continue;
                    for (long s : site) {
                        assertEquals(Byte.valueOf(expect[(int) (s - BASE)]), w.at(s, probe),
                                "site 0x" + Long.toHexString(s) + " at " + probe + "; " + why);
                    }
                    assertEquals(Byte.valueOf(expect[0]), w.at(BASE, probe), why);
                }
            }
            assertTrue(w.module("[m]").stream().noneMatch(Region::isOpen), "ended at its free: " + why);
            assertTrue(w.reopened.isEmpty(), "no version lost to a reused id: " + why);
        }
    }

    private static void poke(RegionTracker t, long address, byte value, long time) {
        try {
            t.textPoke(address, poke(value), time);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void accept(RegionTracker t, CapturedText c) {
        try {
            t.accept(c, null);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}

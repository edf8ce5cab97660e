package ptfence.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A piece answers for every address and time inside it exactly as a fresh lookup would: a decoder that keeps it asks
 * again exactly when the code changes (a text_poke version, a program loaded over part of it).
 */
class TimedSectionsTest {

    private static Section section(String name, long address, int size, long from, long to) {
        byte[] b = new byte[size];
        new Random(name.hashCode()).nextBytes(b);
        return Section.of(name, address, b).during(from, to);
    }

    /** The case: a poke at t=500 of 5 bytes in a program valid from 0: a piece asked at t=100 ends at 500. */
    @Test
    void aPieceEndsWhenANewerVersionOfItsCodeBegins() {
        TimedSections ts = new TimedSections();
        Section prog = ts.add(section("prog", 0x1000, 0x100, 0, Long.MAX_VALUE)).sections().get(0);
        ts.add(section("prog (text_poke)", 0x1040, 5, 500, Long.MAX_VALUE));
        Image.Piece before = ts.find(0x1042, 100);
        assertSame(prog, before.section);
        assertEquals(500, before.validTo(), "the unpoked bytes answer until the poke");
        Image.Piece beside = ts.find(0x1010, 100);
        assertEquals(Long.MAX_VALUE, beside.validTo(), "beside the poke, the bytes never change...");
        assertEquals(0x1040, beside.end, "... up to where the poked bytes begin");
        Image.Piece after = ts.find(0x1010, 600);
        assertSame(prog, after.section);
        assertEquals(0x1040, after.end, "after the poke, the old section stops where the poked bytes begin");
        assertEquals("prog (text_poke)", ts.find(0x1042, 600).section.name());
        Image.Piece tail = ts.find(0x1050, 600);
        assertEquals(0x1045, tail.start);
        assertNull(ts.find(0x1100, 600));
    }

    /** Property: over random histories, whatever a piece covers is what a fresh lookup finds there and then. */
    @Test
    void everyPieceAgreesWithFreshLookupsEverywhereInside() {
        Random rnd = new Random(21);
        for (int round = 0; round < 300; round++) {
            TimedSections ts = new TimedSections();
            int n = 1 + rnd.nextInt(12);
            for (int i = 0; i < n; i++) {
                long addr = 0x1000 + rnd.nextInt(0x200);
                long from = rnd.nextInt(4) == 0 ? Long.MIN_VALUE : rnd.nextInt(1000);
                long to = rnd.nextInt(4) == 0 ? Long.MAX_VALUE : from == Long.MIN_VALUE ? rnd.nextInt(1000)
                        : from + 1 + rnd.nextInt(1000);
                ts.add(section("s" + round + "_" + i, addr, 1 + rnd.nextInt(0x100), from, to));
            }
            for (int q = 0; q < 200; q++) {
                long addr = 0x1000 + rnd.nextInt(0x300);
                long time = rnd.nextInt(2100) - 50;
                Image.Piece p = ts.find(addr, time);
                Section fresh = ts.section(addr, time);
                if (fresh == null) {
                    assertNull(p);
                    continue;
                }
                assertNotNull(p);
                assertSame(fresh, p.section);
                assertTrue(p.covers(addr, time), "the piece holds what it was asked for");
                for (int k = 0; k < 60; k++) {
                    long a = p.start + (long) rnd.nextInt((int) (p.end - p.start));
                    long lo = Math.max(p.validFrom(), -100), hi = Math.min(p.validTo(), 2200);
                    long t = lo + (long) (rnd.nextDouble() * (hi - lo));
                    if (t < p.validFrom() || t >= p.validTo()) {
                        continue;
                    }
                    assertSame(p.section, ts.section(a, t), String.format(
                            "round %d: piece of %s [%x, %x) x [%d, %d) answers for %x at %d, a lookup finds %s",
                            round, p.section.name(), p.start, p.end, p.validFrom(), p.validTo(), a, t,
                            ts.section(a, t) == null ? "nothing" : ts.section(a, t).name()));
                }
            }
        }
    }
}

package ptfence.packet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The counting decoder's fast steps over timing packets ({@link PacketCursor#skipTiming},
 * {@link PacketCursor#nextTntAfterTiming}) against {@link PacketCursor#next()}, the one parser: on random mixes of
 * PAD, MTC, CYC of every length, TNT-8 and other packets, with and without SKD007 (whose 2-byte CYC + 0xf3 is an
 * OVF), the packets they stop at, their offsets and the MTCs they pass are the parser's.
 */
class TimingLaneTest {
    private static final Errata SKD007 = new Errata(false, false, true, false, false, false, false, false, false, false);

    /** One non-timing packet as a reader sees it: offset, type, TNT payload, and whether an MTC came just before. */
    record Seen(long offset, int type, long payload, boolean mtcBefore) {}

    @Test
    void laneAndSkipStopWhereTheParserDoes() {
        for (long seed = 1; seed <= 40; seed++) {
            byte[] trace = stream(new Random(seed), 3000);
            for (Errata e : new Errata[] {Errata.NONE, SKD007}) {
                List<Seen> expected = byParser(trace, e);
                assertTrue(expected.size() > 300, "seed " + seed);
                List<Seen> lane = byLane(trace, e);
                int n = Math.min(expected.size(), lane.size());
                for (int i = 0; i < n; i++) {
                    assertEquals(expected.get(i), lane.get(i), "seed " + seed + " skd007 " + e.skd007() + ", packet " + i);
                }
                assertEquals(expected.size(), lane.size(), "seed " + seed + " skd007 " + e.skd007());
            }
        }
    }

    /** Every packet through next(); timing packets only mark whether an MTC came before the next other packet. */
    private static List<Seen> byParser(byte[] trace, Errata e) {
        return read(trace, e, false);
    }

    /** The lane where it takes a TNT; else skipTiming and next(), as the flow's input does. */
    private static List<Seen> byLane(byte[] trace, Errata e) {
        return read(trace, e, true);
    }

    private static List<Seen> read(byte[] trace, Errata e, boolean lane) {
        PacketCursor c = new PacketCursor(TraceSource.of(ByteBuffer.wrap(trace)), e);
        List<Seen> out = new ArrayList<>();
        boolean mtc = false;
        while (true) {
            if (lane) {
                long before = c.position();
                int r = c.nextTntAfterTiming();
                if (r >= 0) {
                    out.add(new Seen(c.offset(), PacketCursor.TNT_8, c.tntBits(), mtc || r == 2));
                    mtc = false;
                    continue;
                }
                assertEquals(before, c.position(), "a lane that fails moves nothing");
                if ((c.skipTiming() & 2) != 0) {
                    mtc = true;
                }
            }
            int t = c.next();
            if (t == PacketCursor.END) {
                return out;
            }
            if (t == PacketCursor.MTC) {
                mtc = true;
            } else if (t != PacketCursor.CYC && t != PacketCursor.PAD) {
                out.add(new Seen(c.offset(), t, t == PacketCursor.TNT_8 ? c.tntBits() : 0, mtc));
                mtc = false;
            }
        }
    }

    /** Valid packets, mostly timing runs and TNT-8, with TIPs, TSCs and SKD007's OVF look-alike among them. */
    private static byte[] stream(Random rnd, int packets) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (int i = 0; i < packets; i++) {
            int k = rnd.nextInt(100);
            if (k < 25) {
                o.write((rnd.nextInt(63) + 2) << 1); // TNT-8: an even byte >= 4
            } else if (k < 35) {
                o.write(0x00);
            } else if (k < 50) {
                o.write(0x59);
                o.write(rnd.nextInt(256));
            } else if (k < 65) {
                o.write(rnd.nextInt(32) << 3 | 3); // one-byte CYC
            } else if (k < 85) {
                int len = 2 + rnd.nextInt(rnd.nextInt(10) == 0 ? 8 : 2); // 2..9 bytes
                o.write(rnd.nextInt(32) << 3 | 7);
                for (int j = 1; j < len; j++) {
                    int cont = j < len - 1 ? 1 : 0;
                    o.write(rnd.nextInt(128) << 1 | cont);
                }
            } else if (k < 88) {
                // A 2-byte CYC with payload byte 0x02, then 0xf3: under SKD007 an OVF that lost its 0x02; else that
                // CYC and a one-byte CYC.
                o.write(0x07);
                o.write(0x02);
                o.write(0xf3);
            } else if (k < 95) {
                o.write(0x0d); // TIP, IP suppressed
            } else {
                o.write(0x19); // TSC
                for (int j = 0; j < 7; j++) {
                    o.write(rnd.nextInt(256));
                }
            }
        }
        return o.toByteArray();
    }
}

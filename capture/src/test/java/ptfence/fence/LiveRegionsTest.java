package ptfence.fence;

import org.junit.jupiter.api.Test;
import ptfence.fence.RegionTracker.Key;
import ptfence.fence.RegionTracker.Live;
import ptfence.region.Region;
import ptfence.region.RegionKind;
import ptfence.store.ContentKey;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

class LiveRegionsTest {
    /**
     * Random opens, ends and new versions of poke sites and other regions (kernel addresses: negative as longs, one
     * near the bottom of the address space): every query gives exactly the regions a scan of all of them gives.
     */
    @Test
    void aPokeFindsTheRegionsAScanOfEveryRegionFinds() {
        for (long seed = 1; seed <= 20; seed++) {
            Random rnd = new Random(seed);
            LiveRegions live = new LiveRegions();
            Map<Key, Live> all = new HashMap<>();
            long[] bases = {0xffffffff81000000L, 0xffffffffc0020000L, Long.MIN_VALUE + 8, 0x400000L};
            for (int op = 0; op < 4000; op++) {
                long base = bases[rnd.nextInt(bases.length)];
                int r = rnd.nextInt(10);
                if (r < 4) {
                    boolean site = rnd.nextBoolean();
                    long address = base + rnd.nextInt(8192);
                    int length = site ? 1 + rnd.nextInt(rnd.nextInt(10) == 0 ? 300 : 16) : 1 + rnd.nextInt(4096);
                    Key k = new Key(address, site ? "text_poke@0x" + Long.toHexString(address) : "r" + rnd.nextInt(50));
                    Live was = all.get(k);
                    RegionKind kind = was != null ? was.region().kind()
                            : site ? RegionKind.TEXT_POKE : RegionKind.BPF_PROG;
                    Live l = live(address, length, kind, op);
                    live.put(k, l);
                    all.put(k, l);
                } else if (r < 6 && !all.isEmpty()) {
                    Key k = all.keySet().stream().skip(rnd.nextInt(all.size())).findFirst().orElseThrow();
                    if (rnd.nextBoolean()) {
                        assertSame(all.remove(k), live.remove(k));
                        assertNull(live.get(k));
                    } else { // a new version, as a poke gives one
                        Live l = live(k.address(), (int) all.get(k).region().length(), all.get(k).region().kind(), op);
                        live.entry(k).setValue(l);
                        all.put(k, l);
                    }
                } else {
                    long address = base + rnd.nextInt(8400) - 100;
                    int length = 1 + rnd.nextInt(8);
                    Set<String> want = new TreeSet<>();
                    all.forEach((k, l) -> {
                        long off = address - l.region().address();
                        if (off >= 0 && off + length <= l.region().length()) want.add(k + "=" + l.region().validFrom());
                    });
                    Set<String> got = live.holding(address, length).stream()
                            .map(e -> e.getKey() + "=" + e.getValue().region().validFrom())
                            .collect(Collectors.toCollection(TreeSet::new));
                    assertEquals(want, got, "seed " + seed + ", op " + op + ", 0x" + Long.toHexString(address));
                }
                assertEquals(all.size(), live.size());
            }
        }
    }

    private static Live live(long address, int length, RegionKind kind, long from) {
        byte[] bytes = new byte[length];
        bytes[0] = (byte) from;
        Region r = new Region("boot", address, length, from, Region.OPEN, kind, "r", ContentKey.of(bytes), null);
        return new Live(r, bytes, false, Long.MIN_VALUE, from);
    }
}

package ptfence.fence;

import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import ptfence.fence.RegionTracker.Key;
import ptfence.fence.RegionTracker.Live;
import ptfence.region.Region;
import ptfence.region.RegionKind;

/**
 * The tracker's open regions, by key, and for a poke those that hold its bytes. A TEXT_POKE region is opened for
 * each poked site no other region holds, and stays open: a tracer put on every function makes ~40k of them (guest,
 * 6.1: a trace instance whose filter did not take, 83,716 pokes in 8 rounds), and a scan of every open region per
 * poke made the tracker quadratic (ptrec 950 s behind the churn at its end). So the poke sites are found by address;
 * the other regions (programs, trampoline images, modules: hundreds) are few enough to scan.
 */
final class LiveRegions {
    private final Map<Key, Live> byKey = new HashMap<>();
    /** TEXT_POKE regions by address, and the longest of them (a bound on how far below a poke one can start). */
    private final NavigableMap<Long, List<Key>> pokeSites = new TreeMap<>();
    private long longestPokeSite;
    private final Set<Key> others = new LinkedHashSet<>();

    Live get(Key key) {
        return byKey.get(key);
    }

    boolean containsKey(Key key) {
        return byKey.containsKey(key);
    }

    int size() {
        return byKey.size();
    }

    void put(Key key, Live live) {
        Live was = byKey.put(key, live);
        boolean site = live.region().kind() == RegionKind.TEXT_POKE;
        if (site) longestPokeSite = Math.max(longestPokeSite, live.region().length());
        if (was != null) return; // a key's kind never changes: indexed already
        if (site) pokeSites.computeIfAbsent(key.address(), a -> new ArrayList<>(1)).add(key);
        else others.add(key);
    }

    Live remove(Key key) {
        Live was = byKey.remove(key);
        if (was == null) return null;
        if (was.region().kind() != RegionKind.TEXT_POKE) {
            others.remove(key);
        } else {
            List<Key> at = pokeSites.get(key.address());
            at.remove(key);
            if (at.isEmpty()) pokeSites.remove(key.address());
        }
        return was;
    }

    /** The entry of an open region; its {@code setValue} replaces the region's live state here. */
    Map.Entry<Key, Live> entry(Key key) {
        Live live = byKey.get(key);
        if (live == null) return null;
        return new AbstractMap.SimpleEntry<>(key, live) {
            @Override
            public Live setValue(Live value) {
                byKey.put(key, value);
                return super.setValue(value);
            }
        };
    }

    /** The open regions holding {@code [address, address + length)}, as {@link #entry} gives them. */
    List<Map.Entry<Key, Live>> holding(long address, int length) {
        List<Map.Entry<Key, Live>> out = new ArrayList<>();
        for (Key k : others) {
            if (holds(byKey.get(k).region(), address, length)) out.add(entry(k));
        }
        long from = address - longestPokeSite;
        if (from > address) from = Long.MIN_VALUE; // below the lowest address
        for (List<Key> ks : pokeSites.subMap(from, true, address, true).values()) {
            for (Key k : ks) {
                if (holds(byKey.get(k).region(), address, length)) out.add(entry(k));
            }
        }
        return out;
    }

    static boolean holds(Region r, long address, int length) {
        long off = address - r.address();
        return off >= 0 && off + length <= r.length();
    }
}

package ptfence.fence;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The BTF objects the LOAD hook sent, by BTF id, least recently used first out: the hook sends an object once and
 * later programs of the same object refer to it by id. Bounded by count and by bytes.
 */
final class BtfCache {
    private final int maxEntries;
    private final long maxBytes;
    private long bytes;
    private final LinkedHashMap<Integer, byte[]> byId = new LinkedHashMap<>(64, 0.75f, true);

    BtfCache(int maxEntries, long maxBytes) {
        this.maxEntries = maxEntries;
        this.maxBytes = maxBytes;
    }

    synchronized void put(int id, byte[] btf) {
        byte[] old = byId.put(id, btf);
        bytes += btf.length - (old == null ? 0 : old.length);
        var it = byId.entrySet().iterator();
        while ((byId.size() > maxEntries || bytes > maxBytes) && it.hasNext()) {
            Map.Entry<Integer, byte[]> e = it.next();
            if (e.getKey() == id) continue;
            bytes -= e.getValue().length;
            it.remove();
        }
    }

    /** The object's bytes, or null if it was never sent or has been dropped. */
    synchronized byte[] get(int id) {
        return byId.get(id);
    }
}

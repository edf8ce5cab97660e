package ptfence.perfdata;

import java.util.List;

/** One event of a recording: its attr and the sample ids the kernel gave its instances (one per CPU/thread). */
public record AttrIds(EventAttr attr, List<Long> ids) {
    public AttrIds {
        ids = List.copyOf(ids);
    }
}

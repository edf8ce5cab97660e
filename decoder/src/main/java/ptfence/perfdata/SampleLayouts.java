package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Finds the attr a record belongs to, the way perf does (evlist id_pos/is_pos): when all attrs share one
 * sample_type the first one serves; otherwise the sample id is read at the position the sample_type gives
 * (IDENTIFIER first in samples and last in trailers, else ID) and looked up.
 */
final class SampleLayouts {
    private final EventAttr first;
    private final boolean uniform;
    private final Map<Long, EventAttr> byId = new HashMap<>();

    SampleLayouts(List<AttrIds> attrs) {
        first = attrs.isEmpty() ? null : attrs.get(0).attr();
        boolean same = true;
        for (AttrIds a : attrs) {
            if (a.attr().sampleType() != first.sampleType() || a.attr().sampleIdAll() != first.sampleIdAll()) {
                same = false;
            }
            for (Long id : a.ids()) {
                byId.putIfAbsent(id, a.attr());
            }
        }
        uniform = same;
    }

    /** The attr of a PERF_RECORD_SAMPLE; null when there are no attrs. */
    EventAttr forSample(ByteBuffer body) {
        if (uniform || first == null) {
            return first;
        }
        long st = first.sampleType();
        int pos;
        if ((st & SampleType.IDENTIFIER) != 0) {
            pos = 0;
        } else if ((st & SampleType.ID) != 0) {
            pos = Long.bitCount(st & (SampleType.IP | SampleType.TID | SampleType.TIME | SampleType.ADDR));
        } else {
            return first;
        }
        return lookup(body, body.position() + pos * 8);
    }

    /** The attr whose sample_id_all trailer ends a non-sample kernel record. */
    EventAttr forOther(ByteBuffer body) {
        if (uniform || first == null) {
            return first;
        }
        long st = first.sampleType();
        int fromEnd;
        if ((st & SampleType.IDENTIFIER) != 0) {
            fromEnd = 1;
        } else if ((st & SampleType.ID) != 0) {
            fromEnd = 1 + Long.bitCount(st & (SampleType.STREAM_ID | SampleType.CPU));
        } else {
            return first;
        }
        return lookup(body, body.limit() - fromEnd * 8);
    }

    private EventAttr lookup(ByteBuffer body, int at) {
        if (at < body.position() || at + 8 > body.limit()) {
            return first;
        }
        EventAttr a = byId.get(body.getLong(at));
        return a != null ? a : first;
    }
}

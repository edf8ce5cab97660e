package ptfence.image;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Many sections, each valid for a time range, looked up by (address, time) in logarithmic time: a recording's
 * dynamic kernel text (thousands of BPF programs, several versions at one address) next to the core kernel.
 * Where sections overlap at one time the one that became valid last wins, as a load after an unload does.
 * Asked with {@link CodeSpace#ANY_TIME} (a trace without timing), the newest section at the address answers.
 */
public final class TimedSections implements CodeSpace {
    private final List<Section> pending = new ArrayList<>();
    private Section[] sorted = new Section[0];
    private long[] maxEnd = new long[0];
    private boolean dirty;

    public TimedSections add(Section s) {
        if (s.size() > 0) {
            pending.add(s);
            dirty = true;
        }
        return this;
    }

    public boolean isEmpty() {
        return pending.isEmpty();
    }

    public List<Section> sections() {
        return List.copyOf(pending);
    }

    private void index() {
        sorted = pending.toArray(new Section[0]);
        // stable: among equal addresses, later additions stay later (and win ties)
        Arrays.sort(sorted, Comparator.comparingLong(s -> s.address() ^ Long.MIN_VALUE));
        maxEnd = new long[sorted.length];
        long m = Long.MIN_VALUE;
        for (int i = 0; i < sorted.length; i++) {
            long e = sorted[i].end() ^ Long.MIN_VALUE;
            m = Math.max(m, e);
            maxEnd[i] = m;
        }
        dirty = false;
    }

    @Override
    public Image.Piece find(long addr, long time) {
        Section s = section(addr, time);
        return s == null ? null : Image.Piece.of(s, s.address(), s.end(), time == ANY_TIME ? Long.MIN_VALUE
                : s.validFrom(), time == ANY_TIME ? Long.MAX_VALUE : s.validTo());
    }

    /** The section holding {@code addr} at {@code time}, or null. */
    public synchronized Section section(long addr, long time) {
        if (dirty) {
            index();
        }
        long key = addr ^ Long.MIN_VALUE;
        int lo = 0;
        int hi = sorted.length - 1;
        int last = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if ((sorted[mid].address() ^ Long.MIN_VALUE) <= key) {
                last = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        Section best = null;
        for (int i = last; i >= 0 && maxEnd[i] > key; i--) {
            Section s = sorted[i];
            if (!s.covers(addr, time == ANY_TIME ? s.validFrom() : time)) {
                continue;
            }
            if (best == null || s.validFrom() > best.validFrom()) {
                best = s;
            }
        }
        return best;
    }

    @Override
    public boolean timed() {
        return true;
    }
}

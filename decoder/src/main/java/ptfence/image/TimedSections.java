package ptfence.image;

import java.util.ArrayList;
import java.util.List;

/**
 * Many sections, each valid for a time range, looked up by (address, time) in logarithmic time: a recording's
 * dynamic kernel text (thousands of BPF programs, several versions at one address) next to the core kernel.
 * Where sections overlap at one time the one that became valid last wins, as a load after an unload does.
 * Asked with {@link CodeSpace#ANY_TIME} (a trace without timing), the newest section at the address answers.
 */
public final class TimedSections implements CodeSpace {
    private final List<Section> pending = new ArrayList<>();
    private AddressRanges<Section> sorted = new AddressRanges<>(List.of(), Section::address, Section::end,
            new Section[0]);
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
        // stable: among equal addresses, later additions stay later (and win ties)
        sorted = new AddressRanges<>(pending, Section::address, Section::end, new Section[0]);
        dirty = false;
    }

    /**
     * The piece holding {@code addr} at {@code time}, answered only where and while its section is the one that
     * holds the code: cut before any other section that would win over it — a newer version of the same code
     * (TEXT_POKE) from the time it begins, a program loaded later over part of it — so a decoder that keeps the piece
     * asks again exactly when the code changes.
     */
    @Override
    public synchronized Image.Piece find(long addr, long time) {
        int w = winner(addr, time);
        if (w < 0) {
            return null;
        }
        Section s = sorted.get(w);
        if (time == ANY_TIME) {
            return Image.Piece.of(s, s.address(), s.end(), Long.MIN_VALUE, Long.MAX_VALUE);
        }
        long from = s.validFrom();
        long to = s.validTo();
        long lo = s.address();
        long hi = s.end();
        for (int i = sorted.lastBefore(hi); i >= 0 && sorted.reaches(i, lo); i--) {
            Section c = sorted.get(i);
            if (i == w || !overlaps(c, lo, hi) || !beats(i, w) || c.validTo() <= from || c.validFrom() >= to) {
                continue;
            }
            if (Long.compareUnsigned(addr - c.address(), c.size()) < 0) {
                // it holds addr but lost at this time: it is over before, or begins after
                if (c.validTo() <= time) {
                    from = Math.max(from, c.validTo());
                } else {
                    to = Math.min(to, c.validFrom());
                }
            } else if (Long.compareUnsigned(c.end(), addr) <= 0) {
                lo = c.end();
            } else {
                hi = c.address();
            }
        }
        return Image.Piece.of(s, lo, hi, from, to);
    }

    /** The section holding {@code addr} at {@code time}, or null. */
    public synchronized Section section(long addr, long time) {
        int w = winner(addr, time);
        return w < 0 ? null : sorted.get(w);
    }

    /** Whether section i wins over section w where both hold the code: it became valid later, or was added later. */
    private boolean beats(int i, int w) {
        long a = sorted.get(i).validFrom();
        long b = sorted.get(w).validFrom();
        return a > b || a == b && i > w;
    }

    private static boolean overlaps(Section c, long lo, long hi) {
        return Long.compareUnsigned(c.address(), hi) < 0 && Long.compareUnsigned(lo, c.end()) < 0;
    }

    /** Index of the section holding {@code addr} at {@code time}: the one that became valid last; -1 if none. */
    private int winner(long addr, long time) {
        if (dirty) {
            index();
        }
        int best = -1;
        for (int i = sorted.lastAtOrBefore(addr); i >= 0 && sorted.reaches(i, addr); i--) {
            Section s = sorted.get(i);
            if (!s.covers(addr, time == ANY_TIME ? s.validFrom() : time)) {
                continue;
            }
            if (best < 0 || s.validFrom() > sorted.get(best).validFrom()) {
                best = i;
            }
        }
        return best;
    }

    @Override
    public boolean timed() {
        return true;
    }
}

package ptfence.image;

import java.util.ArrayList;
import java.util.List;

/**
 * The code visible to a traced program: sections placed at addresses, the newest section winning where
 * they overlap. As in libipt, adding a section cuts the parts of older sections it covers (when its time
 * range covers theirs); sections whose time ranges only partly overlap stay, and a lookup prefers the newer.
 */
public final class Image implements CodeSpace {
    /** A contiguous part of a section that is still visible. */
    public static final class Piece {
        public final Section section;
        /** Visible address range [start, end). */
        public final long start;
        public final long end;
        final long seq;
        private final long validFrom;
        private final long validTo;

        Piece(Section section, long start, long end, long seq) {
            this(section, start, end, seq, section.validFrom(), section.validTo());
        }

        private Piece(Section section, long start, long end, long seq, long validFrom, long validTo) {
            this.section = section;
            this.start = start;
            this.end = end;
            this.seq = seq;
            this.validFrom = validFrom;
            this.validTo = validTo;
        }

        /** A piece of {@code section} visible at [start, end) during [validFrom, validTo), for a code space. */
        public static Piece of(Section section, long start, long end, long validFrom, long validTo) {
            return new Piece(section, start, end, 0, validFrom, validTo);
        }

        /** The same piece, answered only for [from, to) (a space narrows it to a process's lifetime). */
        public Piece during(long from, long to) {
            return new Piece(section, start, end, seq, Math.max(from, validFrom), Math.min(to, validTo));
        }

        /** First time the piece answers for. */
        public long validFrom() {
            return validFrom;
        }

        /** First time it no longer does (exclusive). */
        public long validTo() {
            return validTo;
        }

        public boolean covers(long addr, long time) {
            return Long.compareUnsigned(addr - start, end - start) < 0
                    && time >= validFrom && time < validTo;
        }
    }

    private final List<Piece> pieces = new ArrayList<>();
    private long seq;

    public Image add(Section s) {
        if (s.size() == 0) {
            return this;
        }
        place(s, s.address(), s.end());
        return this;
    }

    /**
     * Places what {@code other} shows on top of this image, oldest piece first (libipt's pt_image_copy: a
     * forked process starts with its parent's mappings).
     */
    public Image addAll(Image other) {
        List<Piece> byAge = new ArrayList<>(other.pieces);
        byAge.sort((a, b) -> Long.compare(a.seq, b.seq));
        for (Piece p : byAge) {
            place(p.section, p.start, p.end);
        }
        return this;
    }

    /** Makes [from, to) of {@code s} the newest piece there, cutting what it covers out of older ones. */
    private void place(Section s, long from, long to) {
        List<Piece> kept = new ArrayList<>(pieces.size() + 2);
        for (Piece p : pieces) {
            boolean addressOverlap = Long.compareUnsigned(p.start, to) < 0 && Long.compareUnsigned(from, p.end) < 0;
            boolean timeCovered = s.validFrom() <= p.section.validFrom() && s.validTo() >= p.section.validTo();
            if (!addressOverlap || !timeCovered) {
                kept.add(p);
                continue;
            }
            if (Long.compareUnsigned(p.start, from) < 0) {
                kept.add(new Piece(p.section, p.start, from, p.seq));
            }
            if (Long.compareUnsigned(to, p.end) < 0) {
                kept.add(new Piece(p.section, to, p.end, p.seq));
            }
        }
        kept.add(new Piece(s, from, to, seq++));
        pieces.clear();
        pieces.addAll(kept);
    }

    public Image addAll(SectionSource source) {
        source.sections().forEach(this::add);
        return this;
    }

    /** The newest piece mapping {@code addr} at {@code time}, or null. */
    @Override
    public Piece find(long addr, long time) {
        Piece best = null;
        for (Piece p : pieces) {
            if (p.covers(addr, time) && (best == null || p.seq > best.seq)) {
                best = p;
            }
        }
        return best;
    }

    public List<Piece> pieces() {
        return List.copyOf(pieces);
    }

    public boolean isEmpty() {
        return pieces.isEmpty();
    }
}

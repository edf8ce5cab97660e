package ptfence.image;

import java.util.ArrayList;
import java.util.List;

/**
 * The code visible to a traced program: sections placed at addresses, the newest section winning where
 * they overlap. As in libipt, adding a section cuts the parts of older sections it covers (when its time
 * range covers theirs); sections whose time ranges only partly overlap stay, and a lookup prefers the newer.
 */
public final class Image {
    /** A contiguous part of a section that is still visible. */
    public static final class Piece {
        public final Section section;
        /** Visible address range [start, end). */
        public final long start;
        public final long end;
        final long seq;

        Piece(Section section, long start, long end, long seq) {
            this.section = section;
            this.start = start;
            this.end = end;
            this.seq = seq;
        }

        public boolean covers(long addr, long time) {
            return Long.compareUnsigned(addr - start, end - start) < 0
                    && time >= section.validFrom() && time < section.validTo();
        }
    }

    private final List<Piece> pieces = new ArrayList<>();
    private long seq;

    public Image add(Section s) {
        if (s.size() == 0) {
            return this;
        }
        List<Piece> kept = new ArrayList<>(pieces.size() + 2);
        for (Piece p : pieces) {
            boolean addressOverlap = Long.compareUnsigned(p.start, s.end()) < 0 && Long.compareUnsigned(s.address(), p.end) < 0;
            boolean timeCovered = s.validFrom() <= p.section.validFrom() && s.validTo() >= p.section.validTo();
            if (!addressOverlap || !timeCovered) {
                kept.add(p);
                continue;
            }
            if (Long.compareUnsigned(p.start, s.address()) < 0) {
                kept.add(new Piece(p.section, p.start, s.address(), p.seq));
            }
            if (Long.compareUnsigned(s.end(), p.end) < 0) {
                kept.add(new Piece(p.section, s.end(), p.end, p.seq));
            }
        }
        kept.add(new Piece(s, s.address(), s.end(), seq++));
        pieces.clear();
        pieces.addAll(kept);
        return this;
    }

    public Image addAll(SectionSource source) {
        source.sections().forEach(this::add);
        return this;
    }

    /** The newest piece mapping {@code addr} at {@code time}, or null. */
    public Piece find(long addr, long time) {
        Piece best = null;
        for (Piece p : pieces) {
            if (p.covers(addr, time) && (best == null || p.seq > best.seq)) {
                best = p;
            }
        }
        return best;
    }

    /**
     * Copies up to {@code len} bytes starting at {@code addr}, following adjacent sections; returns how
     * many bytes were mapped (0 if none).
     */
    public int read(long addr, long time, byte[] dst, int off, int len) {
        int done = 0;
        while (done < len) {
            Piece p = find(addr + done, time);
            if (p == null) {
                break;
            }
            long a = addr + done;
            int from = (int) (a - p.section.address());
            int n = (int) Math.min(len - done, p.end - a);
            System.arraycopy(p.section.bytes(), from, dst, off + done, n);
            done += n;
        }
        return done;
    }

    public List<Piece> pieces() {
        return List.copyOf(pieces);
    }

    public boolean isEmpty() {
        return pieces.isEmpty();
    }
}

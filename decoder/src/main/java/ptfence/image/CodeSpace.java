package ptfence.image;

/**
 * Where a decoder reads code: an address (and, for a recording, a time) to the bytes that were there.
 * {@link Image} is the fixed case; a recording's code map answers differently as the trace's time moves on
 * (programs loaded and unloaded, text poked, processes switched).
 */
public interface CodeSpace {
    /**
     * The piece mapping {@code addr} at {@code time}, or null. A decoder may keep using the piece, without asking
     * again, for addresses inside it while the time stays inside {@link Image.Piece#validFrom()} ..
     * {@link Image.Piece#validTo()}.
     */
    Image.Piece find(long addr, long time);

    /** Copies up to {@code len} bytes at {@code addr}, following adjacent pieces; returns how many were mapped. */
    default int read(long addr, long time, byte[] dst, int off, int len) {
        int done = 0;
        while (done < len) {
            Image.Piece p = find(addr + done, time);
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

    /**
     * True if the answer depends on time; the decoder then asks with the trace's current TSC, so times in the
     * space must be TSC values. A space that does not depend on time is asked with {@link #ANY_TIME}.
     */
    default boolean timed() {
        return false;
    }

    /** The time an untimed space is asked with. */
    long ANY_TIME = Long.MIN_VALUE + 1;
}

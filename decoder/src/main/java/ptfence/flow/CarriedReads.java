package ptfence.flow;

/**
 * The flow's part of a PSB segment's guessed starting state, where tracing is off at its PSB (the IP tracing was
 * disabled at, the last instruction emitted: the PSB+ restates neither), and what the segment's decode read of it. The
 * decode runs ahead of its turn from the guess; when its turn comes the real state (the one the segment before reached
 * the PSB with) is settled: if a read so far would have gone differently the segment is decoded again, else later reads
 * take the real state. So the guess only needs to be right where the decode reads it before its turn.
 */
final class CarriedReads {
    private final boolean resumedMatters;
    private final long guessIp;
    // Guarded by this:
    private SeamState real;
    private boolean ipErrorRead;
    private boolean emitRead;
    private boolean resumeRead;
    private long resumeIp;

    /**
     * @param guess the starting state the decode uses
     * @param resumedMatters whether "resumed" is printed (a count or coverage does not show it)
     */
    CarriedReads(SeamState guess, boolean resumedMatters) {
        this.guessIp = guess.resumeIp;
        this.resumedMatters = resumedMatters;
    }

    /** A start that is already the real state (a segment decoded again, or the sequential start). */
    static CarriedReads settled(SeamState real) {
        CarriedReads c = new CarriedReads(real, true);
        c.real = real;
        return c;
    }

    /** Coordinator: the real state; false if a read so far differs (the segment must be decoded again). */
    synchronized boolean settle(SeamState actual) {
        if (emitRead && actual.emitted) {
            // the guess has none emitted: an error printed 0 where the sequential decode prints the next IP
            return false;
        }
        if (actual.resumeIp != guessIp) {
            if (ipErrorRead) {
                return false;
            }
            if (resumeRead && resumedMatters && (resumeIp == guessIp) != (resumeIp == actual.resumeIp)) {
                return false;
            }
        }
        real = actual;
        return true;
    }

    /** The real state if settled, else null. */
    synchronized SeamState real() {
        return real;
    }

    /** Worker: an enable at {@code at} compares it with the carried IP; returns the IP to compare with. */
    synchronized long resume(long at) {
        if (real != null) {
            return real.resumeIp;
        }
        resumeRead = true;
        resumeIp = at;
        return guessIp;
    }

    /** Worker: an error reports the carried IP; returns the IP to report. */
    synchronized long errorIp() {
        if (real != null) {
            return real.resumeIp;
        }
        ipErrorRead = true;
        return guessIp;
    }

    /** Worker: an error reports the IP after the last instruction, none emitted yet: the real state, or null (guess). */
    synchronized SeamState emitted() {
        if (real != null) {
            return real;
        }
        emitRead = true;
        return null;
    }
}

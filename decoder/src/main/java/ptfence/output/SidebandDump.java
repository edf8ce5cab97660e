package ptfence.output;

/**
 * Sideband records printed between packets, ordered by time: ptdump calls this after every timing
 * update with the current TSC estimate, and once at the end with the largest time.
 */
public interface SidebandDump {
    /** Prints every pending record whose time is at most {@code tsc} (unsigned). */
    void dumpUntil(long tsc, TextSink out);
}

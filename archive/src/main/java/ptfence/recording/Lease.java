package ptfence.recording;

/**
 * A live capture's hold on everything it archives: gc keeps every image and region touched since the
 * lease's generation while the lease has not expired. A capture renews its lease well before expiry;
 * a crashed capture's lease simply runs out.
 *
 * @param id             lease id
 * @param holder         who holds it (e.g. "ptrec pid 1234 on host")
 * @param fromGeneration the archive generation the lease was opened in
 * @param startedMillis  wall time it was opened
 * @param expiresMillis  wall time it runs out unless renewed
 * @param recording      the recording this lease keeps live ("" for none): gc never drops it while the lease
 *                       holds, whatever {@code --keep} or its perf.data say
 */
public record Lease(String id, String holder, long fromGeneration, long startedMillis, long expiresMillis,
        String recording) {
    public Lease {
        recording = recording == null ? "" : recording;
    }

    /** Whether the lease still holds at this wall time. */
    public boolean liveAt(long nowMillis) {
        return nowMillis < expiresMillis;
    }
}

package ptfence.recording;

import java.util.Objects;

/**
 * A capture registered in the archive: a root for gc, and the list of regions it needs to be decoded.
 *
 * @param id            recording id, unique in the archive (ptrec uses a UUID or the perf.data name)
 * @param perfDataPath  absolute path of its perf.data ("" if none to check); gc drops a recording whose
 *                      perf.data is gone, unless it is pinned (a relative path is never checked)
 * @param bootId        boot id of the recording host
 * @param startTime     first perf timestamp (ns, in the clock of the recording's records)
 * @param endTime       last perf timestamp, or {@link #RUNNING} while the capture runs
 * @param createdMillis wall-clock creation time (ms since epoch); {@code gc --keep} ages recordings by it
 */
public record Recording(String id, String perfDataPath, String bootId, long startTime, long endTime,
        long createdMillis) {
    /** endTime of a capture still running. */
    public static final long RUNNING = Long.MAX_VALUE;

    public Recording {
        Objects.requireNonNull(id, "id");
        perfDataPath = perfDataPath == null ? "" : perfDataPath;
        Objects.requireNonNull(bootId, "bootId");
        if (id.isEmpty() || id.indexOf('\0') >= 0 || id.length() > 200) {
            throw new IllegalArgumentException("recording id must be 1..200 characters without NUL: '" + id + "'");
        }
    }

    /** A new running recording created now. */
    public static Recording started(String id, String perfDataPath, String bootId, long startTime) {
        return new Recording(id, perfDataPath, bootId, startTime, RUNNING, System.currentTimeMillis());
    }

    /** The same recording with its end time set. */
    public Recording finishedAt(long time) {
        return new Recording(id, perfDataPath, bootId, startTime, time, createdMillis);
    }

    /** The same recording with another perf.data path (after import, or when the file moved). */
    public Recording withPath(String path) {
        return new Recording(id, path, bootId, startTime, endTime, createdMillis);
    }

    /** The same recording, created at another wall time. */
    public Recording createdAt(long millis) {
        return new Recording(id, perfDataPath, bootId, startTime, endTime, millis);
    }
}

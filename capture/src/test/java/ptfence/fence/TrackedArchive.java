package ptfence.fence;

import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.store.Archive;

import java.nio.file.Path;

/**
 * An archive written as ptrec writes it: recording {@code rec1} of a boot registered, then texts and changes put
 * through a {@link RegionTracker} into an {@link ArchiveSink}, flushed.
 */
final class TrackedArchive {
    /** What a test puts through the tracker. */
    interface Changes {
        void apply(RegionTracker tracker) throws Exception;
    }

    private TrackedArchive() {}

    /** The archive at {@code dir} (made if absent) with {@code changes} written; open, for the caller to close. */
    static Archive write(Path dir, String boot, Changes changes) throws Exception {
        Archive archive = Archive.open(dir);
        try {
            archive.write(b -> {
                Recordings.register(b, Recording.started("rec1", "", boot, 0));
                return null;
            });
            try (ArchiveSink sink = new ArchiveSink(archive, "rec1")) {
                changes.apply(new RegionTracker(boot, sink));
                sink.flush();
            }
            return archive;
        } catch (Exception | Error e) {
            archive.close();
            throw e;
        }
    }
}

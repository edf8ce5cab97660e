package ptfence.bundle;

import java.nio.file.Path;

/**
 * A file a bundle carries besides the archive's content, so the recording decodes on a machine that has none of it:
 * the recording's perf.data, and the user-space binaries it maps (as {@code perf archive} packs them by build id).
 *
 * @param role         {@link #PERF_DATA} or {@link #BINARY}
 * @param recordedPath the path the recording names it by
 * @param buildId      its GNU build id (may be empty)
 * @param local        where it is on this machine (export), or where import wrote it
 */
public record BundleFile(int role, String recordedPath, byte[] buildId, Path local) {
    public static final int PERF_DATA = 1, BINARY = 2;

    public BundleFile {
        buildId = buildId == null ? new byte[0] : buildId.clone();
    }

    @Override
    public byte[] buildId() {
        return buildId.clone();
    }
}

package ptfence.region;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * Where a file-backed region came from (a module's .ko, a user executable or library).
 *
 * @param path       path on the recording machine
 * @param fileOffset offset in the file of the region's first byte
 * @param buildId    GNU build id (raw bytes; may be empty)
 */
public record FileMetadata(String path, long fileOffset, byte[] buildId) implements RegionMetadata {
    public FileMetadata {
        buildId = buildId == null ? new byte[0] : buildId.clone();
    }

    @Override
    public byte[] buildId() {
        return buildId.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof FileMetadata f && path.equals(f.path) && fileOffset == f.fileOffset
                && Arrays.equals(buildId, f.buildId);
    }

    @Override
    public int hashCode() {
        return path.hashCode() * 31 + Long.hashCode(fileOffset) * 17 + Arrays.hashCode(buildId);
    }

    @Override
    public String toString() {
        return "FileMetadata[path=" + path + ", fileOffset=" + fileOffset + ", buildId="
                + HexFormat.of().formatHex(buildId) + "]";
    }
}

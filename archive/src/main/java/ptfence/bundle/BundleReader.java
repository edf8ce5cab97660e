package ptfence.bundle;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import ptfence.cli.BadInputException;
import ptfence.cli.Progress;
import ptfence.recording.Lease;
import ptfence.recording.Recording;
import ptfence.recording.RecordingCodec;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionCodec;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

/**
 * The one parser of bundles. {@link #check} reads a bundle through and verifies it without touching any
 * archive; {@link #importInto} checks first, then imports in short write transactions (images, then
 * regions, then the recording and its links, so an interrupted import leaves nothing that points at
 * something missing), holding a lease so a concurrent gc cannot take what it has put so far.
 */
public final class BundleReader {
    private static final int BATCH_BYTES = 16 << 20;
    private static final int BATCH_ENTRIES = 1000;

    private BundleReader() {}

    /** Verifies a bundle (magic, version, every entry, count, checksum, every region's image present). */
    public static BundleSummary check(Path bundle) {
        List<BundleFile> files = new ArrayList<>();
        Recording[] rec = new Recording[1];
        long[] counts = new long[3];
        Set<ContentKey> keys = new HashSet<>();
        List<Region> regions = new ArrayList<>();
        read(bundle, (type, payload, offset) -> {
            switch (type) {
                case BundleFormat.RECORDING -> rec[0] = RecordingCodec.decode(payload, where(bundle, offset));
                case BundleFormat.IMAGE -> {
                    keys.add(ContentKey.of(payload));
                    counts[0]++;
                    counts[2] += payload.length;
                }
                case BundleFormat.FILE -> files.add(fileHeader(payload, bundle, offset).file());
                case BundleFormat.FILE_DATA -> { }
                default -> {
                    regions.add(RegionCodec.decode(payload, where(bundle, offset)));
                    counts[1]++;
                }
            }
        });
        for (Region r : regions) {
            for (ContentKey k : r.contentKeys()) {
                if (!keys.contains(k)) {
                    throw new BadInputException("bundle " + bundle + ": region " + r.name() + " needs "
                            + (k.equals(r.key()) ? "image " : "BTF ") + k.hex() + " which the bundle does not hold");
                }
            }
        }
        return new BundleSummary(rec[0].id(), counts[0], counts[1], counts[2], 0, 0, files, List.of());
    }

    /** A FILE entry's header: the file and its size. */
    private record FileHeader(BundleFile file, long size) {}

    private static FileHeader fileHeader(byte[] payload, Path bundle, long offset) {
        try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(payload))) {
            int role = in.readUnsignedByte();
            String path = in.readUTF();
            int n = in.readInt();
            if (n < 0 || n > in.available()) {
                throw new IOException("build id of " + n + " bytes");
            }
            byte[] id = in.readNBytes(n);
            long size = in.readLong();
            if (size < 0 || in.available() != 0 || role != BundleFile.PERF_DATA && role != BundleFile.BINARY) {
                throw new IOException("role " + role + ", size " + size);
            }
            return new FileHeader(new BundleFile(role, path, id, null), size);
        } catch (IOException e) {
            throw new BadInputException(where(bundle, offset) + ": malformed file entry (" + e.getMessage() + ")");
        }
    }

    /**
     * Imports a bundle. Idempotent: importing it again adds nothing. The imported recording keeps its id
     * and times; its perf.data path becomes {@code perfDataPath} ("" when the perf.data is not on this
     * machine, so gc ages it by {@code --keep} only), and its creation time is the import time.
     */
    public static BundleSummary importInto(Archive archive, Path bundle, String perfDataPath) {
        return importInto(archive, bundle, perfDataPath, Progress.NONE);
    }

    /** {@link #importInto(Archive, Path, String)}, counting entries on {@code progress}. */
    public static BundleSummary importInto(Archive archive, Path bundle, String perfDataPath, Progress progress) {
        return importInto(archive, bundle, perfDataPath, progress, null);
    }

    /**
     * {@link #importInto(Archive, Path, String, Progress)}, writing the files the bundle carries into
     * {@code filesDir} (null: leave them): its perf.data and the binaries side by side, each under its own name (a
     * second binary of the same name, another build, goes under a directory named by its build id), where a decode
     * of that perf.data finds them. Without {@code perfDataPath} the recording's perf.data becomes the one written.
     */
    public static BundleSummary importInto(Archive archive, Path bundle, String perfDataPath, Progress progress,
            Path filesDir) {
        progress.phase("checking the bundle", 0);
        BundleSummary checked = check(bundle);
        List<BundleFile> written = new ArrayList<>();
        if (filesDir != null && !checked.files().isEmpty()) {
            written = writeFiles(bundle, filesDir, checked.files());
            if (perfDataPath == null || perfDataPath.isEmpty()) {
                for (BundleFile f : written) {
                    if (f.role() == BundleFile.PERF_DATA) {
                        perfDataPath = f.local().toAbsolutePath().toString();
                    }
                }
            }
        }
        BundleSummary imported = importChecked(archive, bundle, perfDataPath, progress, checked);
        return new BundleSummary(imported.recordingId(), imported.images(), imported.regions(),
                imported.imageBytes(), imported.newImages(), imported.newRegions(),
                filesDir == null ? checked.files() : written, List.of());
    }

    /**
     * Streams the bundle's files into {@code dir}, each through a temporary file linked under its name when whole. A
     * different file already there under that name is never replaced: the new one goes under the next free name (a
     * binary first under a directory named by its build id, as two builds of one name in a bundle do; then
     * {@code NAME.1}, {@code NAME.2}, ... as for a second perf.data); the same bytes there already are shared, so an
     * import repeated into one directory adds nothing. Everything is done relative to a handle on {@code dir} and
     * never through a symbolic link in it.
     */
    private static List<BundleFile> writeFiles(Path bundle, Path dir, List<BundleFile> carried) {
        for (BundleFile f : carried) {
            String why = unusableName(f.recordedPath());
            if (why != null) {
                throw new BadInputException("bundle " + bundle + ": carried file '" + printable(f.recordedPath())
                        + "' has no usable file name (" + why + "); nothing imported");
            }
        }
        List<BundleFile> out = new ArrayList<>();
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new BadInputException(dir + ": cannot create the directory for the bundle's files: " + e.getMessage());
        }
        java.nio.channels.FileChannel[] current = {null};
        String[] tmp = {null};
        long[] left = {0};
        FileHeader[] header = {null};
        try (ptfence.dir.DirHandle root = ptfence.dir.DirHandle.open(dir)) {
            try {
                read(bundle, (type, payload, offset) -> {
                    try {
                        if (type == BundleFormat.FILE) {
                            header[0] = fileHeader(payload, bundle, offset);
                            tmp[0] = ".import-" + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current()
                                    .nextLong()) + ".tmp";
                            current[0] = root.createNew(tmp[0]);
                            left[0] = header[0].size();
                        } else if (type == BundleFormat.FILE_DATA) {
                            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(payload);
                            while (b.hasRemaining()) {
                                current[0].write(b);
                            }
                            left[0] -= payload.length;
                        }
                        if (current[0] != null && left[0] == 0) {
                            current[0].close();
                            current[0] = null;
                            BundleFile f = header[0].file();
                            Path placed = place(root, tmp[0], f);
                            root.delete(tmp[0]);
                            tmp[0] = null;
                            out.add(new BundleFile(f.role(), f.recordedPath(), f.buildId(), placed));
                        }
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
            } finally {
                try {
                    if (current[0] != null) current[0].close();
                    if (tmp[0] != null) root.delete(tmp[0]);
                } catch (IOException e) {
                    // the temporary file of a file not written whole: nothing more to do
                }
            }
        } catch (UncheckedIOException e) {
            throw new BadInputException(dir + ": writing the bundle's files: " + reason(e.getCause()));
        } catch (IOException e) {
            throw new BadInputException(dir + ": writing the bundle's files: " + reason(e));
        }
        return out;
    }

    /** Why a carried file's recorded path gives no file name to write under, or null when it gives one. */
    static String unusableName(String recordedPath) {
        if (recordedPath.indexOf('\0') >= 0) {
            return "it holds a NUL byte";
        }
        String name = recordedPath.substring(recordedPath.lastIndexOf('/') + 1);
        if (name.isEmpty()) {
            return recordedPath.isEmpty() ? "its name is empty" : "it ends in '/'";
        }
        if (name.equals(".") || name.equals("..")) {
            return "it names a directory ('" + name + "')";
        }
        return null;
    }

    private static String printable(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            b.append(c < 0x20 || c == 0x7f ? String.format("\\x%02x", (int) c) : String.valueOf(c));
        }
        return b.toString();
    }

    private static String reason(IOException e) {
        if (e instanceof java.nio.file.FileSystemException f) {
            return (f.getFile() == null ? "" : f.getFile() + ": ") + (f.getReason() == null
                    ? (e instanceof java.nio.file.AccessDeniedException ? "permission denied" : "failed")
                    : f.getReason());
        }
        String m = e.getMessage() == null ? "input/output error" : e.getMessage();
        return m.isEmpty() ? m : Character.toLowerCase(m.charAt(0)) + m.substring(1);
    }

    /**
     * Links the temporary file {@code tmp} (in {@code root}) under the first name that is free or holds the same
     * bytes, and returns where it is (for messages and the recording's perf.data path).
     */
    private static Path place(ptfence.dir.DirHandle root, String tmp, BundleFile f) throws IOException {
        String name = f.recordedPath().substring(f.recordedPath().lastIndexOf('/') + 1);
        if (placedAt(root, tmp, root, name)) {
            return root.shown(name);
        }
        if (f.role() == BundleFile.BINARY && f.buildId().length > 0) {
            String id = java.util.HexFormat.of().formatHex(f.buildId());
            try (ptfence.dir.DirHandle sub = root.child(id, true, 0777)) {
                if (placedAt(root, tmp, sub, name)) {
                    return sub.shown(name);
                }
            } catch (java.nio.file.FileSystemException e) {
                // not a directory (a file or a symlink of that name): the numbered names below
            }
        }
        for (int n = 1; n < 10_000; n++) {
            if (placedAt(root, tmp, root, name + "." + n)) {
                return root.shown(name + "." + n);
            }
        }
        throw new java.nio.file.FileSystemException(root.shown(name).toString(), null,
                "and 9,999 numbered names after it hold other files");
    }

    /** True if {@code tmp} is now at {@code dir/name}: linked there, or the same bytes were there already. */
    private static boolean placedAt(ptfence.dir.DirHandle root, String tmp, ptfence.dir.DirHandle dir, String name)
            throws IOException {
        if (root.linkTo(tmp, dir, name)) {
            return true;
        }
        java.nio.file.attribute.BasicFileAttributes there = dir.attributes(name);
        if (there == null || !there.isRegularFile() || there.size() != root.attributes(tmp).size()) {
            return false; // a directory, a symlink (never followed), or another file
        }
        try (java.nio.channels.FileChannel a = root.read(tmp); java.nio.channels.FileChannel b = dir.read(name)) {
            java.nio.ByteBuffer x = java.nio.ByteBuffer.allocate(1 << 16), y = java.nio.ByteBuffer.allocate(1 << 16);
            while (true) {
                x.clear();
                y.clear();
                int n = a.read(x), m = b.read(y);
                if (n != m) {
                    return false;
                }
                if (n < 0) {
                    return true;
                }
                if (!x.flip().equals(y.flip())) {
                    return false;
                }
            }
        } catch (java.nio.file.FileSystemException e) {
            return false; // replaced by a symlink meanwhile: not the same file
        }
    }

    private static BundleSummary importChecked(Archive archive, Path bundle, String perfDataPath, Progress progress,
            BundleSummary checked) {
        progress.phase("importing images and regions", checked.images() + checked.regions());
        // the lease names the recording: from its registration on, gc keeps it until the import is done
        Lease lease = Recordings.openLease(archive, "import of " + bundle, Duration.ofHours(6), checked.recordingId());
        try {
            Recording[] rec = new Recording[1];
            long[] fresh = new long[2];
            List<byte[]> pendingImages = new ArrayList<>();
            List<Region> pendingRegions = new ArrayList<>();
            List<Long> regionIds = new ArrayList<>();
            long[] pendingBytes = {0};
            read(bundle, (type, payload, offset) -> {
                progress.add(type == BundleFormat.RECORDING ? 0 : 1);
                switch (type) {
                    case BundleFormat.RECORDING -> rec[0] = RecordingCodec.decode(payload, where(bundle, offset));
                    case BundleFormat.FILE, BundleFormat.FILE_DATA -> { }
                    case BundleFormat.IMAGE -> {
                        pendingImages.add(payload);
                        pendingBytes[0] += payload.length;
                        if (pendingImages.size() >= BATCH_ENTRIES || pendingBytes[0] >= BATCH_BYTES) {
                            fresh[0] += putImages(archive, pendingImages);
                            pendingImages.clear();
                            pendingBytes[0] = 0;
                        }
                    }
                    default -> {
                        if (!pendingImages.isEmpty()) {
                            fresh[0] += putImages(archive, pendingImages);
                            pendingImages.clear();
                        }
                        pendingRegions.add(RegionCodec.decode(payload, where(bundle, offset)));
                        if (pendingRegions.size() >= BATCH_ENTRIES) {
                            fresh[1] += addRegions(archive, pendingRegions, regionIds);
                            pendingRegions.clear();
                        }
                    }
                }
            });
            if (!pendingImages.isEmpty()) {
                fresh[0] += putImages(archive, pendingImages);
            }
            fresh[1] += addRegions(archive, pendingRegions, regionIds);
            Recording imported = rec[0].withPath(perfDataPath == null ? "" : perfDataPath)
                    .createdAt(System.currentTimeMillis());
            for (int i = 0; i < regionIds.size() || i == 0; i += BATCH_ENTRIES) {
                List<Long> chunk = regionIds.subList(i, Math.min(regionIds.size(), i + BATCH_ENTRIES));
                archive.write(b -> {
                    if (Recordings.get(b, imported.id()).isEmpty()) {
                        Recordings.register(b, imported);
                    }
                    Recordings.linkAll(b, imported.id(), chunk);
                    return null;
                });
            }
            return new BundleSummary(checked.recordingId(), checked.images(), checked.regions(),
                    checked.imageBytes(), fresh[0], fresh[1]);
        } finally {
            Recordings.closeLease(archive, lease.id());
        }
    }

    private static long putImages(Archive archive, List<byte[]> images) {
        return archive.write(b -> {
            long n = 0;
            for (byte[] img : images) {
                if (!b.hasImage(ContentKey.of(img))) {
                    n++;
                }
                b.put(img);
            }
            return n;
        });
    }

    private static long addRegions(Archive archive, List<Region> regions, List<Long> ids) {
        if (regions.isEmpty()) {
            return 0;
        }
        long[] fresh = {0};
        List<Long> added = archive.write(b -> {
            List<Long> out = new ArrayList<>();
            fresh[0] = 0;
            for (Region r : regions) {
                if (RegionIndex.get(b, r.id()).isEmpty()) {
                    fresh[0]++;
                }
                out.add(RegionIndex.add(b, r));
            }
            return out;
        });
        ids.addAll(added);
        return fresh[0];
    }

    @FunctionalInterface
    private interface EntryHandler {
        void entry(int type, byte[] payload, long offset);
    }

    private static String where(Path bundle, long offset) {
        return "bundle " + bundle + " at offset " + offset;
    }

    /** Streams a bundle's entries to the handler, checking its whole structure and checksum. */
    private static void read(Path bundle, EntryHandler handler) {
        long size;
        if (Files.isDirectory(bundle)) {
            throw new BadInputException("bundle " + bundle + ": is a directory, not a bundle file");
        }
        try {
            size = Files.size(bundle);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        MessageDigest sha = BundleWriter.sha256();
        long offset = 0;
        try (InputStream file = Files.newInputStream(bundle);
                DataInputStream in = new DataInputStream(new DigestInputStream(new BufferedInputStream(file, 1 << 16),
                        sha))) {
            byte[] magic = new byte[BundleFormat.MAGIC.length];
            in.readFully(magic);
            if (!Arrays.equals(magic, BundleFormat.MAGIC)) {
                throw new BadInputException("bundle " + bundle + ": not a ptfence bundle (no PTFBUNDL magic at offset 0)");
            }
            int version = in.readInt();
            if (version != BundleFormat.VERSION && version != 1) {
                throw new BadInputException("bundle " + bundle + ": format version " + version
                        + " is unknown (this build reads versions 1 to " + BundleFormat.VERSION + ")");
            }
            long fileLeft = 0;
            offset = 12;
            long entries = 0;
            boolean sawRecording = false;
            while (true) {
                int type = in.readUnsignedByte();
                int length = in.readInt();
                long at = offset;
                offset += 5;
                if (fileLeft > 0 && type != BundleFormat.FILE_DATA) {
                    throw new BadInputException(where(bundle, at) + ": a carried file is " + fileLeft
                            + " bytes short");
                }
                if (type == BundleFormat.END) {
                    if (length != BundleFormat.END_LENGTH) {
                        throw new BadInputException(where(bundle, at) + ": malformed end record");
                    }
                    long count = in.readLong();
                    byte[] expected = sha.digest();
                    byte[] stored = new byte[32];
                    in.readFully(stored);
                    if (!MessageDigest.isEqual(expected, stored)) {
                        throw new BadInputException("bundle " + bundle + ": checksum mismatch (the file was altered "
                                + "or damaged); nothing imported");
                    }
                    if (count != entries) {
                        throw new BadInputException(where(bundle, at) + ": end record counts " + count
                                + " entries, found " + entries);
                    }
                    if (in.read() != -1) {
                        throw new BadInputException(where(bundle, at + 45) + ": stray bytes after the end record");
                    }
                    if (!sawRecording) {
                        throw new BadInputException("bundle " + bundle + ": holds no recording");
                    }
                    return;
                }
                boolean fileEntry = type == BundleFormat.FILE || type == BundleFormat.FILE_DATA;
                if (type != BundleFormat.RECORDING && type != BundleFormat.IMAGE && type != BundleFormat.REGION
                        && !(fileEntry && version >= 2)) {
                    throw new BadInputException(where(bundle, at) + ": unknown entry type " + type);
                }
                if (length < 0 || length > BundleFormat.MAX_ENTRY || offset + length > size) {
                    throw new BadInputException(where(bundle, at) + ": entry of " + (length & 0xffffffffL)
                            + " bytes runs past the end of the file (" + size + " bytes): cut short or damaged");
                }
                if ((type == BundleFormat.RECORDING) == (entries != 0)) {
                    throw new BadInputException(where(bundle, at) + ": the recording must be the first entry, and only it");
                }
                sawRecording |= type == BundleFormat.RECORDING;
                byte[] payload = new byte[length];
                in.readFully(payload);
                if (type == BundleFormat.FILE) {
                    fileLeft = fileHeader(payload, bundle, at).size();
                } else if (type == BundleFormat.FILE_DATA) {
                    if (length == 0 || length > fileLeft) {
                        throw new BadInputException(where(bundle, at) + ": file data of " + length
                                + " bytes where " + fileLeft + " are left of its file");
                    }
                    fileLeft -= length;
                }
                offset += length;
                entries++;
                handler.entry(type, payload, at);
            }
        } catch (EOFException e) {
            throw new BadInputException("bundle " + bundle + ": cut short at offset " + size + " (no end record)");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

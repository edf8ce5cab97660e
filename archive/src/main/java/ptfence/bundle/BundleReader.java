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
            written = writeFiles(bundle, filesDir);
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

    /** Streams the bundle's files into {@code dir} (each through a temporary file renamed when whole). */
    private static List<BundleFile> writeFiles(Path bundle, Path dir) {
        List<BundleFile> out = new ArrayList<>();
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new BadInputException(dir + ": cannot create the directory for the bundle's files: " + e.getMessage());
        }
        java.io.OutputStream[] current = {null};
        Path[] tmp = {null}, target = {null};
        long[] left = {0};
        FileHeader[] header = {null};
        try {
            read(bundle, (type, payload, offset) -> {
                try {
                    if (type == BundleFormat.FILE) {
                        header[0] = fileHeader(payload, bundle, offset);
                        target[0] = placeFor(dir, header[0].file(), out);
                        Files.createDirectories(target[0].getParent());
                        tmp[0] = Files.createTempFile(target[0].getParent(), ".import-", ".tmp");
                        current[0] = Files.newOutputStream(tmp[0]);
                        left[0] = header[0].size();
                    } else if (type == BundleFormat.FILE_DATA) {
                        current[0].write(payload);
                        left[0] -= payload.length;
                    }
                    if (current[0] != null && left[0] == 0) {
                        current[0].close();
                        current[0] = null;
                        Files.move(tmp[0], target[0], java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                        BundleFile f = header[0].file();
                        out.add(new BundleFile(f.role(), f.recordedPath(), f.buildId(), target[0]));
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (UncheckedIOException e) {
            throw new BadInputException(dir + ": writing the bundle's files: " + e.getCause().getMessage());
        } finally {
            try {
                if (current[0] != null) current[0].close();
                if (tmp[0] != null) Files.deleteIfExists(tmp[0]);
            } catch (IOException e) {
                // the temporary file of a file not written whole: nothing more to do
            }
        }
        return out;
    }

    /** Where a carried file goes: its own name in {@code dir}, or under its build id if that name is taken. */
    private static Path placeFor(Path dir, BundleFile f, List<BundleFile> placed) {
        Path name = Path.of(f.recordedPath()).getFileName();
        Path plain = dir.resolve(name == null ? "file" : name.toString());
        boolean taken = placed.stream().anyMatch(p -> p.local().equals(plain));
        if (!taken) {
            return plain;
        }
        String id = f.buildId().length > 0 ? java.util.HexFormat.of().formatHex(f.buildId())
                : Integer.toHexString(f.recordedPath().hashCode());
        return dir.resolve(id).resolve(plain.getFileName());
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

package ptfence.bundle;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import ptfence.cli.BadInputException;
import ptfence.cli.OutputFile;
import ptfence.cli.Progress;
import ptfence.recording.Recording;
import ptfence.recording.RecordingCodec;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionCodec;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

/** The one writer of bundles: exports a recording and everything it needs from one consistent snapshot. */
public final class BundleWriter {
    private BundleWriter() {}

    /**
     * Writes the bundle to {@code out} through {@link OutputFile} (a temporary file renamed on success), so a
     * bundle is whole or absent, an existing file survives a failed export, and the archive's own files are
     * refused as the output.
     */
    public static BundleSummary export(Archive archive, String recordingId, Path out) {
        return export(archive, recordingId, out, Progress.NONE);
    }

    /** {@link #export(Archive, String, Path)}, counting images on {@code progress}. */
    public static BundleSummary export(Archive archive, String recordingId, Path out, Progress progress) {
        return export(archive, recordingId, out, progress, List.of());
    }

    /**
     * {@link #export(Archive, String, Path, Progress)}, carrying {@code files} besides (their {@code local} copies;
     * one whose local copy is null is left out and listed in the summary's {@code missing}).
     */
    public static BundleSummary export(Archive archive, String recordingId, Path out, Progress progress,
            List<BundleFile> files) {
        Path dir = archive.directory();
        try (OutputFile file = OutputFile.create(out, List.of(dir.resolve("data.mdb"), dir.resolve("lock.mdb")))) {
            BundleSummary summary = archive.read(s -> {
                Recording rec = Recordings.get(s, recordingId).orElseThrow(() -> new BadInputException(
                        "archive " + dir + ": no recording '" + recordingId + "' (see 'ptarchive ls')"));
                List<Region> regions = Recordings.regions(s, recordingId);
                Set<ContentKey> keys = new LinkedHashSet<>();
                regions.forEach(r -> keys.addAll(r.contentKeys()));
                progress.phase("exporting images", keys.size());
                try {
                    return write(file.stream(), rec, regions, keys, k -> {
                        progress.add(1);
                        return s.requireImage(k);
                    }, files);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            file.commit();
            return summary;
        } catch (IOException e) {
            throw new UncheckedIOException("writing bundle " + out, e);
        }
    }

    /** Source of verified image bytes. */
    @FunctionalInterface
    interface Images {
        byte[] get(ContentKey key);
    }

    static BundleSummary write(OutputStream raw, Recording rec, List<Region> regions, Set<ContentKey> keys,
            Images images) throws IOException {
        return write(raw, rec, regions, keys, images, List.of());
    }

    static BundleSummary write(OutputStream raw, Recording rec, List<Region> regions, Set<ContentKey> keys,
            Images images, List<BundleFile> files) throws IOException {
        MessageDigest sha = sha256();
        DataOutputStream out = new DataOutputStream(new DigestOutputStream(new BufferedOutputStream(raw, 1 << 16), sha));
        out.write(BundleFormat.MAGIC);
        out.writeInt(BundleFormat.VERSION);
        long entries = 0;
        entry(out, BundleFormat.RECORDING, RecordingCodec.encode(rec));
        entries++;
        long bytes = 0;
        for (ContentKey k : keys) {
            byte[] img = images.get(k);
            entry(out, BundleFormat.IMAGE, img);
            bytes += img.length;
            entries++;
        }
        for (Region r : regions) {
            entry(out, BundleFormat.REGION, RegionCodec.encode(r));
            entries++;
        }
        List<BundleFile> carried = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        for (BundleFile f : files) {
            if (f.local() == null || !Files.isRegularFile(f.local())) {
                missing.add(f.recordedPath());
                continue;
            }
            entries += fileEntries(out, f);
            carried.add(f);
        }
        out.writeByte(BundleFormat.END);
        out.writeInt(BundleFormat.END_LENGTH);
        out.writeLong(entries);
        out.flush();
        byte[] digest = sha.digest();
        raw.write(digest);
        raw.flush();
        return new BundleSummary(rec.id(), keys.size(), regions.size(), bytes, 0, 0, carried, missing);
    }

    /** A FILE entry and the FILE_DATA entries holding its bytes; returns how many entries. */
    private static long fileEntries(DataOutputStream out, BundleFile f) throws IOException {
        long size = Files.size(f.local());
        java.io.ByteArrayOutputStream header = new java.io.ByteArrayOutputStream();
        try (DataOutputStream h = new DataOutputStream(header)) {
            h.writeByte(f.role());
            h.writeUTF(f.recordedPath());
            h.writeInt(f.buildId().length);
            h.write(f.buildId());
            h.writeLong(size);
        }
        entry(out, BundleFormat.FILE, header.toByteArray());
        long entries = 1, done = 0;
        byte[] chunk = new byte[(int) Math.min(BundleFormat.FILE_CHUNK, Math.max(1, size))];
        try (InputStream in = Files.newInputStream(f.local())) {
            while (done < size) {
                int n = in.readNBytes(chunk, 0, (int) Math.min(chunk.length, size - done));
                if (n <= 0) {
                    throw new IOException(f.local() + ": shorter than its " + size + " bytes (changed while read)");
                }
                out.writeByte(BundleFormat.FILE_DATA);
                out.writeInt(n);
                out.write(chunk, 0, n);
                done += n;
                entries++;
            }
        }
        return entries;
    }

    private static void entry(DataOutputStream out, int type, byte[] payload) throws IOException {
        out.writeByte(type);
        out.writeInt(payload.length);
        out.write(payload);
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static byte[] longBytes(long v) {
        return ByteBuffer.allocate(8).putLong(v).array();
    }
}

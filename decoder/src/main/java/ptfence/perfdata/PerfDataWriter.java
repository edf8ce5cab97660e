package ptfence.perfdata;

import java.io.Closeable;
import java.io.Flushable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Writes a file-mode perf.data that perf reads: header, attrs with their ids, the data section, and the feature
 * sections after it (with the AUXTRACE index kept for every AUXTRACE record written).
 *
 * <p>Crash safety: {@link #flush()} writes the buffered records, the feature sections and then the header, so the
 * file is complete up to that point. Before the first byte after a flush overwrites those feature sections, the
 * header is rewritten without them (same data size); so a writer killed at any moment leaves a file perf reads,
 * with every record up to the last flush.
 */
public final class PerfDataWriter implements Closeable, Flushable {
    private static final int BUFFER = 1 << 20;

    private final Path path;
    private final FileChannel channel;
    private final long dataOffset;
    private final long attrSize;
    private final long attrsOffset;
    private final int attrCount;
    private final Map<Integer, Feature> features = new TreeMap<>();
    private final List<Feature.AuxtraceIndexEntry> auxIndex = new ArrayList<>();
    private final ByteBuffer buffer = ByteBuffer.allocate(BUFFER).order(ByteOrder.LITTLE_ENDIAN);
    private long bufferStart;
    private long dataEnd;
    private long committedEnd;
    private boolean featuresLive;
    private long records;
    private boolean closed;

    private PerfDataWriter(Path path, FileChannel channel, List<AttrIds> attrs) throws IOException {
        this(path, channel, attrs, false);
    }

    private PerfDataWriter(Path path, FileChannel channel, List<AttrIds> attrs, boolean live) throws IOException {
        this.path = path;
        this.channel = channel;
        int maxAttr = EventAttr.SIZE_VER0;
        for (AttrIds a : attrs) {
            maxAttr = Math.max(maxAttr, a.attr().length());
        }
        attrSize = maxAttr + 16L;
        attrCount = attrs.size();
        // ids first, then the attrs that point at them, then data: the layout perf record uses
        Out head = new Out(4096);
        long pos = PerfDataFile.FILE_HEADER_SIZE;
        long[] idsOffsets = new long[attrs.size()];
        for (int i = 0; i < attrs.size(); i++) {
            idsOffsets[i] = pos;
            for (Long id : attrs.get(i).ids()) {
                head.u64(id);
            }
            pos += 8L * attrs.get(i).ids().size();
        }
        attrsOffset = pos;
        for (int i = 0; i < attrs.size(); i++) {
            EventAttr a = attrs.get(i).attr();
            head.bytes(a.raw()).zeros(maxAttr - a.length());
            head.u64(idsOffsets[i]).u64(8L * attrs.get(i).ids().size());
        }
        head.pad(8);
        dataOffset = PerfDataFile.FILE_HEADER_SIZE + head.length();
        try {
            channel.truncate(0);
        } catch (IOException e) {
            throw named(e);
        }
        if (live) {
            // header, attrs and a FINISHED_ROUND in one write: perf refuses a data section of size 0 ("was the
            // 'perf record' command properly terminated?"), and takes a file holding just this round marker
            ByteBuffer round = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN)
                    .putInt(RecordTypes.FINISHED_ROUND).putShort((short) 0).putShort((short) 8).flip();
            ByteBuffer all = ByteBuffer.allocate((int) dataOffset + 8).order(ByteOrder.LITTLE_ENDIAN);
            all.put(header(8, new long[4])).put(head.toBuffer()).put(round).flip();
            write(all, 0);
            dataEnd = dataOffset + 8;
        } else {
            write(head.toBuffer(), PerfDataFile.FILE_HEADER_SIZE);
            dataEnd = dataOffset;
        }
        bufferStart = dataEnd;
        committedEnd = dataEnd;
        if (!live) {
            writeHeaderWithoutFeatures(0);
        }
    }

    /** Creates (or replaces) the file and writes its header, attrs and ids; records follow. */
    public static PerfDataWriter create(Path path, List<AttrIds> attrs) throws IOException {
        FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.READ, StandardOpenOption.TRUNCATE_EXISTING);
        try {
            return new PerfDataWriter(path, ch, attrs);
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /**
     * {@link #create}, for a capture that may be killed at any moment: the file appears (renamed into place) only once
     * its header, attrs and a first FINISHED_ROUND record are written, so from its first moment on perf reads it (as an
     * empty recording until the first {@link #flush()}). A path that is not a regular file (a device) is written in
     * place.
     */
    public static PerfDataWriter createLive(Path path, List<AttrIds> attrs) throws IOException {
        if (Files.exists(path) && !Files.isRegularFile(path)) {
            FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE, StandardOpenOption.READ);
            try {
                return new PerfDataWriter(path, ch, attrs, false);
            } catch (IOException | RuntimeException e) {
                ch.close();
                throw e;
            }
        }
        Path abs = path.toAbsolutePath();
        Path temp = abs.resolveSibling("." + abs.getFileName() + "."
                + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong()) + ".tmp");
        FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                StandardOpenOption.READ);
        try {
            PerfDataWriter w = new PerfDataWriter(path, ch, attrs, true);
            Files.move(temp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return w;
        } catch (IOException | RuntimeException e) {
            ch.close();
            Files.deleteIfExists(temp);
            throw e;
        }
    }

    public Path path() {
        return path;
    }

    /** Sets (or replaces) a feature section; written at the next {@link #flush()}. */
    public synchronized void setFeature(Feature f) {
        if (f.id() == Feature.AUXTRACE) {
            throw new IllegalArgumentException("the AUXTRACE index is kept by the writer");
        }
        features.put(f.id(), f);
    }

    /** Appends a record (and, for AUXTRACE and TRACING_DATA, its payload). */
    public synchronized void write(PerfRecord r) throws IOException {
        ensureOpen();
        Out rec = RecordEncoder.encode(r);
        ByteBuffer payload = RecordEncoder.payload(r);
        if (r instanceof PerfRecord.Auxtrace) {
            auxIndex.add(new Feature.AuxtraceIndexEntry(dataEnd, rec.length()));
        }
        append(rec.toBuffer());
        if (payload != null) {
            ByteBuffer p = payload.duplicate();
            int pad = r instanceof PerfRecord.HeaderTracingData ? (8 - p.remaining() % 8) % 8 : 0;
            if (p.remaining() > buffer.remaining()) {
                drain();
                long at = dataEnd;
                dataEnd += p.remaining();
                write(p, at);
                bufferStart = dataEnd;
            } else {
                append(p);
            }
            if (pad > 0) {
                append(ByteBuffer.allocate(pad));
            }
        }
        records++;
    }

    /** Records written so far. */
    public synchronized long records() {
        return records;
    }

    /** Bytes of data section written so far (buffered included). */
    public synchronized long dataSize() {
        return dataEnd - dataOffset;
    }

    /** Makes the file a valid perf.data up to here: buffered records, feature sections, header. */
    @Override
    public synchronized void flush() throws IOException {
        ensureOpen();
        drain();
        long at = dataEnd;
        Map<Integer, Feature> all = new TreeMap<>(features);
        if (!auxIndex.isEmpty()) {
            all.put(Feature.AUXTRACE, new Feature.AuxtraceIndex(auxIndex));
        }
        Out table = new Out(16 * all.size());
        List<ByteBuffer> sections = new ArrayList<>();
        long sectionAt = at + 16L * all.size();
        for (Feature f : all.values()) {
            ByteBuffer s = FeatureCodec.encode(f);
            table.u64(sectionAt).u64(s.remaining());
            sectionAt += s.remaining();
            sections.add(s);
        }
        write(table.toBuffer(), at);
        long pos = at + table.length();
        for (ByteBuffer s : sections) {
            int n = s.remaining();
            write(s, pos);
            pos += n;
        }
        try {
            channel.truncate(pos);
        } catch (IOException e) {
            throw named(e);
        }
        committedEnd = dataEnd;
        writeBitmapHeader(all);
    }

    /** {@link #flush()}, then force the file to the device. */
    public synchronized void sync() throws IOException {
        flush();
        channel.force(true);
    }

    @Override
    public synchronized void close() throws IOException {
        if (closed) {
            return;
        }
        try {
            flush();
        } finally {
            closed = true;
            channel.close();
        }
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new IOException(path + ": writer is closed");
        }
    }

    private void append(ByteBuffer b) throws IOException {
        if (b.remaining() > buffer.remaining()) {
            drain();
        }
        if (b.remaining() > buffer.remaining()) {
            long at = dataEnd;
            dataEnd += b.remaining();
            write(b, at);
            bufferStart = dataEnd;
            return;
        }
        dataEnd += b.remaining();
        buffer.put(b);
    }

    /** Writes the buffered records (write() first takes the header off feature sections they overwrite). */
    private void drain() throws IOException {
        buffer.flip();
        write(buffer, bufferStart);
        buffer.clear();
        bufferStart = dataEnd;
    }

    private void write(ByteBuffer b, long at) throws IOException {
        if (featuresLive && at + b.remaining() > committedEnd) {
            writeHeaderWithoutFeatures(committedEnd - dataOffset);
        }
        long pos = at;
        try {
            while (b.hasRemaining()) {
                pos += channel.write(b, pos);
            }
        } catch (IOException e) {
            throw named(e);
        }
    }

    /**
     * A write error as one that names the file ({@link java.nio.file.FileSystemException}: one line, exit 2 in every
     * tool), not an internal error: {@code ptrec -o /dev/full} is a full device.
     */
    private IOException named(IOException e) {
        if (e instanceof java.nio.file.FileSystemException) {
            return e;
        }
        return new java.nio.file.FileSystemException(path.toString(), null, "writing failed: " + e.getMessage());
    }

    private void writeBitmapHeader(Map<Integer, Feature> all) throws IOException {
        long[] bits = new long[4];
        for (int id : all.keySet()) {
            bits[id / 64] |= 1L << (id % 64);
        }
        writeHeader(committedEnd - dataOffset, bits);
        featuresLive = !all.isEmpty();
    }

    private void writeHeaderWithoutFeatures(long dataSize) throws IOException {
        writeHeader(dataSize, new long[4]);
        featuresLive = false;
    }

    private void writeHeader(long dataSize, long[] bits) throws IOException {
        ByteBuffer h = header(dataSize, bits);
        try {
            while (h.hasRemaining()) {
                channel.write(h, PerfDataFile.FILE_HEADER_SIZE - h.remaining());
            }
        } catch (IOException e) {
            throw named(e);
        }
    }

    private ByteBuffer header(long dataSize, long[] bits) {
        ByteBuffer h = ByteBuffer.allocate(PerfDataFile.FILE_HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(PerfDataFile.MAGIC).putLong(PerfDataFile.FILE_HEADER_SIZE).putLong(attrSize)
                .putLong(attrsOffset).putLong(attrSize * attrCount)
                .putLong(dataOffset).putLong(dataSize)
                .putLong(0).putLong(0);
        for (long w : bits) {
            h.putLong(w);
        }
        return h.flip();
    }
}

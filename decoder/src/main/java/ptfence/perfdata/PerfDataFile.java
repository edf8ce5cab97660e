package ptfence.perfdata;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import ptfence.cli.BadInputException;

/**
 * A perf.data recording, file mode or pipe mode, memory-mapped. {@link #header()}, {@link #attrs()} and
 * {@link #features()} give the metadata; {@link #records()} iterates the data section as typed records
 * (JFR RecordingFile style: cheap, lazy, one record at a time). Damage is reported as a
 * {@link BadInputException} naming the file and the offset, after every record before it was delivered.
 */
public final class PerfDataFile implements Closeable {
    /** "PERFILE2" read as a little-endian u64. */
    public static final long MAGIC = 0x32454c4946524550L;
    public static final int FILE_HEADER_SIZE = 104;
    public static final int PIPE_HEADER_SIZE = 16;
    private static final int AUXTRACE_RECORD_SIZE = 48;

    private final Path path;
    private final FileChannel channel;
    private final FileView view;
    private final FileHeader header;
    private List<AttrIds> attrs;
    private Features features;

    private PerfDataFile(Path path, FileChannel channel, FileView view, FileHeader header) {
        this.path = path;
        this.channel = channel;
        this.view = view;
        this.header = header;
    }

    /** Opens a perf.data file (file or pipe mode) and checks its header. */
    public static PerfDataFile open(Path path) throws IOException {
        FileChannel ch = FileChannel.open(ptfence.cli.Inputs.add(path), StandardOpenOption.READ);
        try {
            long size = ch.size();
            if (size < PIPE_HEADER_SIZE) {
                throw new BadInputException(path + ": not a perf.data file: " + size + " bytes, shorter than a header");
            }
            ByteBuffer head = ByteBuffer.allocate(PIPE_HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(head, 0);
            ByteOrder order = magicOrder(path, head.getLong(0));
            FileView view = new FileView(ch, order);
            PerfDataFile f = new PerfDataFile(path, ch, view, FileHeader.read(path, view));
            return f;
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /**
     * A recording already in memory (e.g. a pipe-mode stream read from stdin); {@code name} stands for the file
     * in error messages.
     */
    public static PerfDataFile of(String name, ByteBuffer bytes) {
        Path path = Path.of(name);
        ByteBuffer b = bytes.slice().order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < PIPE_HEADER_SIZE) {
            throw new BadInputException(name + ": not a perf.data file: " + b.remaining()
                    + " bytes, shorter than a header");
        }
        ByteOrder order = magicOrder(path, b.getLong(0));
        FileView view = new FileView(b, order);
        return new PerfDataFile(path, null, view, FileHeader.read(path, view));
    }

    /** Reads a whole stream (typically a pipe-mode recording on stdin) into memory and opens it. */
    public static PerfDataFile read(java.io.InputStream in, String name) throws IOException {
        return of(name, ByteBuffer.wrap(in.readAllBytes()));
    }

    private static ByteOrder magicOrder(Path path, long magic) {
        if (magic == MAGIC) {
            return ByteOrder.LITTLE_ENDIAN;
        }
        if (magic == Long.reverseBytes(MAGIC)) {
            return ByteOrder.BIG_ENDIAN;
        }
        throw new BadInputException(path + ": not a perf.data file: magic at offset 0 is 0x"
                + Long.toHexString(magic) + ", not \"PERFILE2\"");
    }

    /** True when the file starts with the perf.data magic (either byte order); cheap, reads 8 bytes. */
    public static boolean isPerfData(Path path) {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            if (ch.read(b, 0) < 8) {
                return false;
            }
            long m = b.getLong(0);
            return m == MAGIC || m == Long.reverseBytes(MAGIC);
        } catch (IOException e) {
            return false;
        }
    }

    public Path path() {
        return path;
    }

    public FileHeader header() {
        return header;
    }

    public boolean pipeMode() {
        return header.pipeMode();
    }

    public ByteOrder byteOrder() {
        return view.order();
    }

    /** When the file was last written (perf's "captured on", from its fstat of the input). */
    public java.time.Instant lastModified() throws IOException {
        return java.nio.file.Files.getLastModifiedTime(path).toInstant();
    }

    public long fileSize() {
        return view.size();
    }

    /** The events: from the attrs section, or in pipe mode from the HEADER_ATTR records (up to any damage). */
    public synchronized List<AttrIds> attrs() {
        if (attrs == null) {
            attrs = pipeMode() ? scanPipe(true) : readAttrs();
        }
        return attrs;
    }

    /** The feature sections: from the header's table, or in pipe mode from HEADER_FEATURE records. */
    public synchronized Features features() {
        if (features == null) {
            features = pipeMode() ? new Features(pipeFeatures()) : readFeatures();
        }
        return features;
    }

    /** A new iterator over the data section, from its first record. */
    public RecordReader records() {
        return new RecordReader();
    }

    /** The records as a lazy stream; a damaged record ends it with a {@link BadInputException}. */
    public Stream<PerfRecord> stream() {
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(records(),
                Spliterator.ORDERED | Spliterator.NONNULL), false);
    }

    /** The records of one type, e.g. {@code stream(PerfRecord.Ksymbol.class)}. */
    public <T extends PerfRecord> Stream<T> stream(Class<T> type) {
        return stream().filter(type::isInstance).map(type::cast);
    }

    @Override
    public void close() throws IOException {
        if (channel != null) {
            channel.close();
        }
    }

    BadInputException bad(long offset, String what) {
        return new BadInputException(path + ": offset 0x" + Long.toHexString(offset) + ": " + what);
    }

    ByteBuffer slice(long offset, long length) {
        return view.slice(offset, length);
    }

    // ---- file mode metadata -----------------------------------------------------------------------

    private List<AttrIds> readAttrs() {
        long entry = header.attrSize();
        long n = header.attrs().size() / entry;
        List<AttrIds> out = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            long at = header.attrs().offset() + i * entry;
            try {
                ByteBuffer b = slice(at, entry);
                int declared = b.getInt(4);
                int attrLen = (int) Math.min(entry - 16, declared == 0 ? EventAttr.SIZE_VER0 : declared);
                RecordParser.checkAttrSize(attrLen);
                EventAttr attr = RecordParser.attr(b.duplicate().order(b.order()).limit(attrLen));
                long idsOff = b.getLong((int) entry - 16);
                long idsSize = b.getLong((int) entry - 8);
                if (idsOff < 0 || idsSize < 0 || idsSize % 8 != 0 || idsOff > view.size() - idsSize) {
                    throw new BadPerfData("ids section {0x" + Long.toHexString(idsOff) + ", " + idsSize
                            + "} outside the file");
                }
                ByteBuffer idb = slice(idsOff, idsSize);
                List<Long> ids = new ArrayList<>((int) (idsSize / 8));
                for (int k = 0; k < idsSize; k += 8) {
                    ids.add(idb.getLong(k));
                }
                out.add(new AttrIds(attr, ids));
            } catch (BadPerfData e) {
                throw bad(at, "attr " + i + ": " + e.getMessage());
            }
        }
        return Collections.unmodifiableList(out);
    }

    private Features readFeatures() {
        Map<Integer, Feature> out = new LinkedHashMap<>();
        long table = header.data().offset() + header.data().size();
        int k = 0;
        for (int bit = 0; bit < Feature.MAX_BITS; bit++) {
            if (!header.hasFeature(bit)) {
                continue;
            }
            long at = table + 16L * k++;
            if (at < 0 || at + 16 > view.size()) {
                throw bad(at, "feature table entry for feature " + bit + " is beyond the end of the file ("
                        + view.size() + " bytes)");
            }
            ByteBuffer e = slice(at, 16);
            long off = e.getLong(0);
            long size = e.getLong(8);
            if (off < 0 || size < 0 || off > view.size() - size || size > Integer.MAX_VALUE) {
                throw bad(at, "feature " + bit + " section {0x" + Long.toHexString(off) + ", " + size
                        + "} outside the file");
            }
            try {
                out.put(bit, FeatureCodec.parse(bit, slice(off, size)));
            } catch (BadPerfData ex) {
                throw bad(off, "feature " + bit + ": " + ex.getMessage());
            }
        }
        return new Features(out);
    }

    // ---- pipe mode metadata -----------------------------------------------------------------------

    private List<AttrIds> scanPipe(boolean wantAttrs) {
        List<AttrIds> out = new ArrayList<>();
        RecordReader r = new RecordReader();
        try {
            while (r.hasNext()) {
                PerfRecord rec = r.next();
                if (rec instanceof PerfRecord.HeaderAttr a) {
                    out.add(new AttrIds(a.attr(), a.ids()));
                }
            }
        } catch (BadInputException e) {
            // the records() iteration reports the damage where it is; the attrs before it still count
        }
        return Collections.unmodifiableList(out);
    }

    private Map<Integer, Feature> pipeFeatures() {
        Map<Integer, Feature> out = new LinkedHashMap<>();
        RecordReader r = new RecordReader();
        try {
            while (r.hasNext()) {
                if (r.next() instanceof PerfRecord.HeaderFeature f) {
                    out.put(f.feature().id(), f.feature());
                }
            }
        } catch (BadInputException e) {
            // as in scanPipe
        }
        return out;
    }

    /**
     * Iterates the data section. {@link #offset()} is the file offset of the record last returned and
     * {@link #payloadOffset()} that of the bytes following it (AUXTRACE data).
     */
    public final class RecordReader implements Iterator<PerfRecord> {
        private long pos = header.data().offset();
        private final long end = Math.min(header.data().offset() + header.data().size(), view.size());
        private SampleLayouts layouts = new SampleLayouts(pipeMode() ? List.of() : attrs());
        private final List<AttrIds> pipeAttrs = new ArrayList<>();
        private long offset = -1;
        private long payloadOffset = -1;
        private ByteBuffer raw;

        RecordReader() {}

        @Override
        public boolean hasNext() {
            if (pos >= end) {
                long declaredEnd = header.data().offset() + header.data().size();
                if (!pipeMode() && declaredEnd > view.size() && pos < declaredEnd) {
                    throw bad(pos, "file ends inside the data section, which is declared to end at 0x"
                            + Long.toHexString(declaredEnd) + " (truncated file)");
                }
                return false;
            }
            return true;
        }

        /** Offset of the last record returned. */
        public long offset() {
            return offset;
        }

        /** The bytes of the last record returned, its header's size (perf's -D prints them), read-only. */
        public ByteBuffer rawBytes() {
            return raw.asReadOnlyBuffer().order(raw.order());
        }

        /** Offset of the payload of the last record returned (AUXTRACE, TRACING_DATA), else -1. */
        public long payloadOffset() {
            return payloadOffset;
        }

        @Override
        public PerfRecord next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            if (end - pos < 8) {
                throw bad(pos, (end - pos) + " bytes left at the end of the data section, less than a record header"
                        + (end < header.data().offset() + header.data().size() || pipeMode() ? " (truncated file)" : ""));
            }
            ByteBuffer h = slice(pos, 8);
            int type = h.getInt(0);
            int size = h.getShort(6) & 0xffff;
            if (size < 8) {
                throw bad(pos, "record of type " + type + " has size " + size + ", less than its header");
            }
            if (size > end - pos) {
                throw bad(pos, RecordTypes.name(type) + " record of " + size + " bytes runs past the end of the data ("
                        + (end - pos) + " bytes left)");
            }
            ByteBuffer rec = slice(pos, size);
            long payload = 0;
            long payloadData = 0;
            if (type == RecordTypes.AUXTRACE) {
                if (size < AUXTRACE_RECORD_SIZE) {
                    throw bad(pos, "AUXTRACE record of " + size + " bytes, expected at least 48");
                }
                payload = rec.getLong(8);
                payloadData = payload;
            } else if (type == RecordTypes.HEADER_TRACING_DATA) {
                if (size < 12) {
                    throw bad(pos, "TRACING_DATA record of " + size + " bytes");
                }
                payloadData = Integer.toUnsignedLong(rec.getInt(8));
                payload = (payloadData + 7) & ~7L;
            }
            long after = pos + size;
            if (payload < 0 || payload > end - after) {
                throw bad(pos, RecordTypes.name(type) + " payload of " + Long.toUnsignedString(payload)
                        + " bytes runs past the end of the data (" + (end - after) + " bytes left)");
            }
            if (payload > Integer.MAX_VALUE) {
                throw bad(pos, RecordTypes.name(type) + " payload of " + payload + " bytes is larger than 2 GiB");
            }
            EventAttr attr = null;
            if (type == RecordTypes.SAMPLE || RecordParser.hasTrailer(type)) {
                attr = type == RecordTypes.SAMPLE ? layouts.forSample(rec.duplicate().order(rec.order()).position(8))
                        : layouts.forOther(rec.duplicate().order(rec.order()).position(8));
            }
            PerfRecord r;
            try {
                r = RecordParser.parse(rec, attr, payload > 0 || type == RecordTypes.AUXTRACE
                        ? slice(after, payloadData) : null);
            } catch (BadPerfData e) {
                throw bad(pos, RecordTypes.name(type) + " record: " + e.getMessage());
            }
            offset = pos;
            raw = rec;
            payloadOffset = payload > 0 ? after : -1;
            pos = after + payload;
            if (r instanceof PerfRecord.HeaderAttr a) {
                pipeAttrs.add(new AttrIds(a.attr(), a.ids()));
                layouts = new SampleLayouts(pipeAttrs);
            }
            return r;
        }
    }
}

package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.BitSet;
import ptfence.cli.BadInputException;

/**
 * {@code struct perf_file_header}: the sections of a file-mode perf.data, and the feature bitmap. A pipe-mode
 * stream has only magic and size (16); its data section is the rest of the file and its attrs and features come
 * as records.
 */
public record FileHeader(boolean pipeMode, long size, long attrSize, Section attrs, Section data, Section eventTypes,
        BitSet features) {

    /** {offset, size} of one part of the file. */
    public record Section(long offset, long size) {}

    public FileHeader {
        features = (BitSet) features.clone();
    }

    @Override
    public BitSet features() {
        return (BitSet) features.clone();
    }

    public boolean hasFeature(int id) {
        return features.get(id);
    }

    static FileHeader read(Path path, FileView view) {
        long fileSize = view.size();
        ByteBuffer b = view.slice(0, PerfDataFile.PIPE_HEADER_SIZE);
        long hsize = b.getLong(8);
        if (hsize == PerfDataFile.PIPE_HEADER_SIZE) {
            return new FileHeader(true, hsize, 0, new Section(0, 0),
                    new Section(PerfDataFile.PIPE_HEADER_SIZE, fileSize - PerfDataFile.PIPE_HEADER_SIZE),
                    new Section(0, 0), new BitSet());
        }
        if (hsize < PerfDataFile.FILE_HEADER_SIZE || hsize > 4096) {
            throw new BadInputException(path + ": offset 0x8: perf.data header size " + hsize + " (expected "
                    + PerfDataFile.FILE_HEADER_SIZE + ", or 16 for pipe mode)");
        }
        if (fileSize < hsize) {
            throw new BadInputException(path + ": offset 0x0: file of " + fileSize + " bytes is shorter than its "
                    + hsize + "-byte header (truncated file)");
        }
        b = view.slice(0, PerfDataFile.FILE_HEADER_SIZE);
        long attrSize = b.getLong(16);
        Section attrs = new Section(b.getLong(24), b.getLong(32));
        Section data = new Section(b.getLong(40), b.getLong(48));
        Section types = new Section(b.getLong(56), b.getLong(64));
        BitSet features = new BitSet(Feature.MAX_BITS);
        for (int w = 0; w < 4; w++) {
            long word = b.getLong(72 + 8 * w);
            for (int i = 0; i < 64; i++) {
                if ((word & (1L << i)) != 0) {
                    features.set(w * 64 + i);
                }
            }
        }
        if (attrSize < EventAttr.SIZE_VER0 + 16 || attrSize > EventAttr.SIZE_MAX + 16 || attrSize % 8 != 0) {
            throw new BadInputException(path + ": offset 0x10: attr size " + attrSize + " is not a perf_event_attr + ids");
        }
        check(path, 0x18, "attrs", attrs, fileSize, true);
        if (attrs.size() % attrSize != 0) {
            throw new BadInputException(path + ": offset 0x20: attrs section of " + attrs.size()
                    + " bytes is not a multiple of the attr size " + attrSize);
        }
        // The data section may run past the end of a truncated file: the reader delivers what is there.
        check(path, 0x28, "data", data, Long.MAX_VALUE, false);
        if (data.offset() > fileSize) {
            throw new BadInputException(path + ": offset 0x28: data section starts at 0x"
                    + Long.toHexString(data.offset()) + ", past the end of the file (" + fileSize + " bytes)");
        }
        return new FileHeader(false, hsize, attrSize, attrs, data, types, features);
    }

    private static void check(Path path, int at, String what, Section s, long fileSize, boolean inFile) {
        if (s.offset() < 0 || s.size() < 0 || s.offset() > fileSize - s.size()) {
            throw new BadInputException(path + ": offset 0x" + Integer.toHexString(at) + ": " + what + " section {0x"
                    + Long.toHexString(s.offset()) + ", " + Long.toUnsignedString(s.size()) + "} "
                    + (inFile ? "outside the file (" + fileSize + " bytes)" : "is not a valid range"));
        }
    }
}

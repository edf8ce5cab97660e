package ptfence.perfdata;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Read-only memory-mapped access to a file of any size: a small file is mapped once, a large one through
 * windows of at least {@link #WINDOW} bytes, so any slice up to 2 GiB is available without copying.
 */
final class FileView {
    static final long WINDOW = 256L << 20;

    private final FileChannel channel;
    private final long size;
    private final ByteOrder order;
    private final ByteBuffer memory;
    private MappedByteBuffer window;
    private long windowStart;

    /** A view of bytes already in memory (a pipe read to its end, a test's mutated copy). */
    FileView(ByteBuffer bytes, ByteOrder order) {
        this.channel = null;
        this.size = bytes.remaining();
        this.order = order;
        this.window = null;
        this.memory = bytes.slice();
    }

    FileView(FileChannel channel, ByteOrder order) throws IOException {
        this.memory = null;
        this.channel = channel;
        this.size = channel.size();
        this.order = order;
        if (size <= Integer.MAX_VALUE) {
            window = channel.map(FileChannel.MapMode.READ_ONLY, 0, size);
            windowStart = 0;
        }
    }

    long size() {
        return size;
    }

    ByteOrder order() {
        return order;
    }

    /** The bytes [offset, offset+length) in the file's byte order; the caller has checked the range. */
    ByteBuffer slice(long offset, long length) {
        if (offset < 0 || length < 0 || length > Integer.MAX_VALUE || offset + length > size) {
            throw new IllegalArgumentException("slice " + offset + "+" + length + " outside file of " + size);
        }
        if (memory != null) {
            return memory.duplicate().position((int) offset).limit((int) (offset + length)).slice().order(order);
        }
        if (window == null || offset < windowStart || offset + length > windowStart + window.capacity()) {
            long start = offset & ~0xfffL;
            long len = Math.min(size - start, Math.max(WINDOW, offset + length - start));
            try {
                window = channel.map(FileChannel.MapMode.READ_ONLY, start, len);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            windowStart = start;
        }
        int at = (int) (offset - windowStart);
        return window.duplicate().position(at).limit(at + (int) length).slice().order(order);
    }
}

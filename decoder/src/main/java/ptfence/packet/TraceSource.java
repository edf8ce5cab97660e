package ptfence.packet;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import ptfence.cli.BadInputException;

/**
 * The bytes of one raw Intel PT trace: a whole file, a byte range of a file, or a buffer.
 *
 * <p>Files are memory-mapped in windows of at most {@link #DEFAULT_WINDOW} bytes, so any size works,
 * including files over 2 GiB; {@link PacketCursor} moves its window as it goes and packets may straddle
 * window boundaries. Offsets are always relative to the start of the source (for {@code FILE:from-to}
 * that is {@code from}), which is what ptdump prints too.
 *
 * <p>Range syntax is ptdump's: {@code FILE:from} or {@code FILE:from-to} with C integer literals
 * (decimal, {@code 0x} hex, leading-zero octal); {@code to} is exclusive. If the text after the last
 * colon is not a range, the colon belongs to the file name.
 */
public final class TraceSource implements AutoCloseable {
    /**
     * Largest window mapped at once: well below Integer.MAX_VALUE so a ByteBuffer can index it, and small
     * enough that a cursor walking a huge file keeps little of it mapped (it unmaps windows it is done with).
     */
    public static final int DEFAULT_WINDOW = 1 << 28;

    private final String name;
    private final FileChannel channel;
    private final long fileOffset;
    private final long size;
    private final int windowSize;
    private ByteBuffer cached;
    private long cachedStart = -1;

    private TraceSource(String name, FileChannel channel, long fileOffset, long size, int windowSize, ByteBuffer buffer) {
        this.name = name;
        this.channel = channel;
        this.fileOffset = fileOffset;
        this.size = size;
        this.windowSize = windowSize;
        if (buffer != null) {
            this.cached = buffer;
            this.cachedStart = 0;
        }
    }

    /** The whole file. */
    public static TraceSource open(Path file) {
        return open(file, 0, -1);
    }

    /**
     * Bytes {@code [from, to)} of {@code file}; {@code to < 0} means up to the end of the file.
     *
     * @throws BadInputException if the file is missing or the range lies outside it (one line, says which)
     */
    public static TraceSource open(Path file, long from, long to) {
        return open(file, from, to, DEFAULT_WINDOW);
    }

    /** As {@link #open(Path, long, long)} with a custom window size (tests use small windows). */
    static TraceSource open(Path file, long from, long to, int windowSize) {
        if (windowSize < 256) {
            throw new IllegalArgumentException("window too small: " + windowSize);
        }
        FileChannel ch;
        try {
            ch = FileChannel.open(ptfence.cli.Inputs.add(file), StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new BadInputException("no such file: " + file);
        } catch (IOException e) {
            throw new BadInputException("cannot open " + file + ": " + e.getMessage());
        }
        try {
            if (Files.isDirectory(file)) {
                throw new BadInputException("not a file: " + file);
            }
            long fsize = ch.size();
            if (fsize == 0) {
                throw new BadInputException(file + ": empty file, no trace in it");
            }
            if (from < 0 || from >= fsize) {
                throw new BadInputException("bad offset 0x" + Long.toHexString(from) + " into " + file
                        + " (size 0x" + Long.toHexString(fsize) + ")");
            }
            long end = fsize;
            if (to >= 0) {
                if (to <= from) {
                    throw new BadInputException("bad range 0x" + Long.toHexString(from) + "-0x"
                            + Long.toHexString(to) + " in " + file + ": end not after start");
                }
                if (to > fsize) {
                    throw new BadInputException("bad range 0x" + Long.toHexString(to) + " in " + file
                            + " (size 0x" + Long.toHexString(fsize) + ")");
                }
                end = to;
            }
            return new TraceSource(file.toString(), ch, from, end - from, windowSize, null);
        } catch (IOException e) {
            closeQuietly(ch);
            throw new BadInputException("cannot read " + file + ": " + e.getMessage());
        } catch (RuntimeException e) {
            closeQuietly(ch);
            throw e;
        }
    }

    /** Parses ptdump's {@code FILE[:from[-to]]} and opens it. */
    public static TraceSource parse(String spec) {
        Range r = Range.parse(spec);
        return open(Path.of(r.file()), r.from(), r.to());
    }

    /** The remaining bytes of {@code buffer} (position to limit); the buffer is not modified. */
    public static TraceSource of(ByteBuffer buffer) {
        ByteBuffer b = buffer.slice().order(ByteOrder.LITTLE_ENDIAN);
        return new TraceSource("<buffer>", null, 0, b.remaining(), Integer.MAX_VALUE, b);
    }

    /** A copy-free view of {@code bytes}, called {@code name} in messages (e.g. "stdin"). */
    public static TraceSource of(byte[] bytes, String name) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        return new TraceSource(name, null, 0, b.remaining(), Integer.MAX_VALUE, b);
    }

    /** A copy-free view of {@code bytes}. */
    public static TraceSource of(byte[] bytes) {
        return of(ByteBuffer.wrap(bytes));
    }

    /** The file name (or {@code <buffer>}) for messages. */
    public String name() {
        return name;
    }

    /** Number of trace bytes. */
    public long size() {
        return size;
    }

    /** Offset of byte 0 of this source in its file (the {@code from} of a range). */
    public long fileOffset() {
        return fileOffset;
    }

    /** Largest number of bytes one {@link #window(long)} covers. */
    public int windowSize() {
        return windowSize;
    }

    /**
     * A little-endian buffer whose index 0 is trace offset {@code start}, covering
     * {@code min(windowSize(), size() - start)} bytes.
     */
    public ByteBuffer window(long start) {
        if (start < 0 || start > size) {
            throw new IndexOutOfBoundsException("offset " + start + " outside trace of " + size + " bytes");
        }
        if (channel == null) {
            return cached.duplicate().position((int) start).slice().order(ByteOrder.LITTLE_ENDIAN);
        }
        long len = Math.min(windowSize, size - start);
        if (cached != null && cachedStart <= start && start + len <= cachedStart + cached.capacity()) {
            return cached.duplicate().position((int) (start - cachedStart)).slice().order(ByteOrder.LITTLE_ENDIAN);
        }
        try {
            ByteBuffer b = channel.map(FileChannel.MapMode.READ_ONLY, fileOffset + start, len);
            b.order(ByteOrder.LITTLE_ENDIAN);
            cached = b;
            cachedStart = start;
            return b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map " + name + " at 0x" + Long.toHexString(start), e);
        }
    }

    /**
     * A mapping of the window at {@code start} that belongs to the caller alone (not shared with other
     * users of this source), so the caller may {@link #release(ByteBuffer)} it when done.
     */
    ByteBuffer privateWindow(long start) {
        if (channel == null) {
            return window(start);
        }
        long len = Math.min(windowSize, size - start);
        try {
            return channel.map(FileChannel.MapMode.READ_ONLY, fileOffset + start, len).order(ByteOrder.LITTLE_ENDIAN);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map " + name + " at 0x" + Long.toHexString(start), e);
        }
    }

    /** Unmaps a buffer from {@link #privateWindow(long)} now rather than at some later GC. */
    void release(ByteBuffer privateWindow) {
        if (channel != null && privateWindow.isDirect()) {
            Unmapper.unmap(privateWindow);
        }
    }

    @Override
    public void close() {
        if (channel != null) {
            closeQuietly(channel);
        }
    }

    private static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // read-only channel: nothing was written that could be lost
        }
    }

    /** A parsed {@code FILE[:from[-to]]}; {@code to < 0} means to the end of the file. */
    public record Range(String file, long from, long to) {
        public static Range parse(String spec) {
            int colon = spec.lastIndexOf(':');
            if (colon < 0) {
                return new Range(spec, 0, -1);
            }
            String range = spec.substring(colon + 1);
            int dash = range.indexOf('-');
            long from;
            long to = -1;
            try {
                if (dash < 0) {
                    from = parseCInteger(range);
                } else {
                    from = parseCInteger(range.substring(0, dash));
                    to = parseCInteger(range.substring(dash + 1));
                }
            } catch (NumberFormatException e) {
                return new Range(spec, 0, -1);
            }
            String file = spec.substring(0, colon);
            if (dash >= 0 && Long.compareUnsigned(to, from) <= 0) {
                throw new BadInputException("bad file " + spec + ": invalid argument (range end not after start)");
            }
            return new Range(file, from, to);
        }
    }

    /**
     * C's {@code strtoull(s, 0)} for a whole string: decimal, {@code 0x} hex or leading-zero octal.
     *
     * @throws NumberFormatException if {@code s} is not entirely such a number
     */
    public static long parseCInteger(String s) {
        if (s.isEmpty()) {
            throw new NumberFormatException("empty");
        }
        if (s.startsWith("0x") || s.startsWith("0X")) {
            return Long.parseUnsignedLong(s.substring(2), 16);
        }
        if (s.length() > 1 && s.charAt(0) == '0') {
            return Long.parseUnsignedLong(s.substring(1), 8);
        }
        return Long.parseUnsignedLong(s, 10);
    }
}

package ptfence.jit;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import ptfence.cli.BadInputException;

/**
 * A jitdump file: header and records, in either byte order (the magic read as written tells which). The one
 * parser of the format; damage is one error naming the file and the offset of the record (or field) it hit.
 *
 * @param where   the file, for messages
 * @param version the header's version (1)
 * @param elfMach the code's machine (EM_X86_64 = 62)
 * @param pid     the process that wrote it
 * @param timestamp when the file was opened
 * @param flags   bit 0: timestamps are the CPU's time stamp counter (TSC on x86), else the clock perf records with
 * @param order   the file's byte order
 */
public record JitDump(String where, int version, int elfMach, int pid, long timestamp, long flags, ByteOrder order,
        List<JitRecord> records) {
    public static final int MAGIC = 0x4A695444; // "JiTD" read as the writer's native int
    public static final long FLAG_ARCH_TIMESTAMP = 1;
    /** The header's size in version 1; a later version may say more in total_size (the records start after it). */
    public static final int HEADER_SIZE = 40;
    /** The record prefix: id, total size, timestamp. */
    public static final int PREFIX_SIZE = 16;

    /** Timestamps are the TSC (the trace's own clock), not perf time. */
    public boolean archTimestamps() {
        return (flags & FLAG_ARCH_TIMESTAMP) != 0;
    }

    public static JitDump read(Path file) {
        return parse(file.toString(), ptfence.cli.Inputs.read(file, "jitdump"));
    }

    /**
     * Parses a whole file. A file cut short inside its last record (the JIT still writing, or killed) keeps the
     * records before it, as perf does; damage anywhere else is an error.
     */
    public static JitDump parse(String where, byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes.length < HEADER_SIZE) {
            throw bad(where, 0, "not a jitdump file (" + bytes.length + " bytes, shorter than its header)");
        }
        int magic = b.getInt(0);
        if (magic == Integer.reverseBytes(MAGIC)) {
            b.order(ByteOrder.BIG_ENDIAN);
        } else if (magic != MAGIC) {
            throw bad(where, 0, String.format("not a jitdump file (magic 0x%08x, expected 0x%08x 'JiTD')", magic,
                    MAGIC));
        }
        int version = b.getInt(4);
        if (version != 1) {
            throw bad(where, 4, "jitdump version " + version + " (this reader knows version 1)");
        }
        int headerSize = b.getInt(8);
        if (headerSize < HEADER_SIZE || headerSize > bytes.length) {
            throw bad(where, 8, "header size " + Integer.toUnsignedString(headerSize) + " (at least " + HEADER_SIZE
                    + ", at most the file's " + bytes.length + " bytes)");
        }
        int elfMach = b.getInt(12);
        int pid = b.getInt(20);
        long timestamp = b.getLong(24);
        long flags = b.getLong(32);
        List<JitRecord> records = new ArrayList<>();
        int off = headerSize;
        while (off + PREFIX_SIZE <= bytes.length) {
            int id = b.getInt(off);
            int size = b.getInt(off + 4);
            long ts = b.getLong(off + 8);
            if (size < PREFIX_SIZE) {
                throw bad(where, off, "record id " + id + " with size " + Integer.toUnsignedString(size)
                        + " (less than its " + PREFIX_SIZE + "-byte prefix)");
            }
            if (size > bytes.length - off) {
                break; // the last record, cut short: the JIT was still writing it
            }
            ByteBuffer r = b.slice(off, size).order(b.order());
            records.add(record(where, off, id, size, ts, r));
            off += size;
        }
        return new JitDump(where, version, elfMach, pid, timestamp, flags, b.order(), List.copyOf(records));
    }

    private static JitRecord record(String where, int off, int id, int size, long ts, ByteBuffer r) {
        try {
            r.position(PREFIX_SIZE);
            switch (id) {
                case JitRecord.CODE_LOAD -> {
                    int pid = r.getInt();
                    int tid = r.getInt();
                    long vma = r.getLong();
                    long addr = r.getLong();
                    long codeSize = r.getLong();
                    long index = r.getLong();
                    String name = cString(r, where, off);
                    if (codeSize < 0 || codeSize > r.remaining()) {
                        throw bad(where, off, "code load of '" + name + "': code size " + Long.toUnsignedString(
                                codeSize) + " past the record's end (" + r.remaining() + " bytes left)");
                    }
                    byte[] code = new byte[(int) codeSize];
                    r.get(code);
                    return new JitRecord.Load(off, ts, pid, tid, vma, addr, index, name, code);
                }
                case JitRecord.CODE_MOVE -> {
                    return new JitRecord.Move(off, ts, r.getInt(), r.getInt(), r.getLong(), r.getLong(), r.getLong(),
                            r.getLong(), r.getLong());
                }
                case JitRecord.CODE_DEBUG_INFO -> {
                    long addr = r.getLong();
                    long n = r.getLong();
                    List<JitRecord.LineEntry> entries = new ArrayList<>();
                    for (long i = 0; i < n; i++) {
                        long a = r.getLong();
                        int line = r.getInt();
                        int disc = r.getInt();
                        entries.add(new JitRecord.LineEntry(a, line, disc, cString(r, where, off)));
                    }
                    return new JitRecord.DebugInfo(off, ts, addr, List.copyOf(entries));
                }
                case JitRecord.CODE_CLOSE -> {
                    return new JitRecord.Close(off, ts);
                }
                case JitRecord.CODE_UNWINDING_INFO -> {
                    long unwindSize = r.getLong();
                    long hdrSize = r.getLong();
                    long mapped = r.getLong();
                    if (unwindSize < 0 || unwindSize > r.remaining()) {
                        throw bad(where, off, "unwinding info of " + Long.toUnsignedString(unwindSize)
                                + " bytes past the record's end");
                    }
                    byte[] data = new byte[(int) unwindSize];
                    r.get(data);
                    return new JitRecord.UnwindingInfo(off, ts, mapped, data, hdrSize);
                }
                default -> {
                    return new JitRecord.Other(off, ts, id, size);
                }
            }
        } catch (java.nio.BufferUnderflowException e) {
            throw bad(where, off, "record id " + id + " (" + size + " bytes) ends inside its fields");
        }
    }

    /** A NUL-terminated string at the buffer's position; the position moves past the NUL. */
    private static String cString(ByteBuffer r, String where, int off) {
        int start = r.position();
        int end = start;
        while (end < r.limit() && r.get(end) != 0) {
            end++;
        }
        if (end == r.limit()) {
            throw bad(where, off, "name without its terminating NUL inside the record");
        }
        byte[] s = new byte[end - start];
        r.get(s);
        r.get();
        return new String(s, StandardCharsets.UTF_8);
    }

    static BadInputException bad(String where, long off, String what) {
        return new BadInputException(where + ": offset " + off + ": " + what);
    }
}

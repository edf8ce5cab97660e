package ptfence.fence;

import ptfence.cli.BadInputException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Kernel memory from an ELF core file laid out like /proc/kcore: one PT_LOAD per kernel range, p_vaddr = kernel
 * virtual address, p_offset = where its bytes are in the (sparse) file; bytes past p_filesz read as zero.
 */
public final class KcoreReader implements KernelMemory {
    private static final int PT_LOAD = 1, ET_CORE = 4;

    /** One PT_LOAD segment. */
    public record Segment(long vaddr, long fileOffset, long fileSize, long memSize) {
        boolean contains(long addr) { return Long.compareUnsigned(addr, vaddr) >= 0
                && Long.compareUnsigned(addr - vaddr, memSize) < 0; }
    }

    private final Path path;
    private final FileChannel ch;
    private final List<Segment> segments;

    private KcoreReader(Path path, FileChannel ch, List<Segment> segments) {
        this.path = path;
        this.ch = ch;
        this.segments = List.copyOf(segments);
    }

    public static KcoreReader open(Path path) throws IOException {
        FileChannel ch = FileChannel.open(path, StandardOpenOption.READ);
        try {
            ByteBuffer eh = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, eh, 0);
            if (eh.getInt(0) != 0x464c457f) throw new BadInputException(path + ": not an ELF file (offset 0)");
            if (eh.get(4) != 2 || eh.get(5) != 1)
                throw new BadInputException(path + ": not a 64-bit little-endian ELF (offset 4)");
            if (eh.getShort(16) != ET_CORE) throw new BadInputException(path + ": ELF type " + eh.getShort(16)
                    + " is not ET_CORE (offset 16)");
            long phoff = eh.getLong(32);
            int phentsize = eh.getShort(54) & 0xffff, phnum = eh.getShort(56) & 0xffff;
            if (phentsize < 56) throw new BadInputException(path + ": program header size " + phentsize + " (offset 54)");
            ByteBuffer ph = ByteBuffer.allocate(phentsize * phnum).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, ph, phoff);
            List<Segment> segs = new ArrayList<>();
            for (int i = 0; i < phnum; i++) {
                int o = i * phentsize;
                if (ph.getInt(o) != PT_LOAD) continue;
                segs.add(new Segment(ph.getLong(o + 16), ph.getLong(o + 8), ph.getLong(o + 32), ph.getLong(o + 40)));
            }
            return new KcoreReader(path, ch, segs);
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    public List<Segment> segments() { return segments; }

    @Override
    public byte[] read(long address, int length) throws IOException {
        byte[] out = new byte[length];
        int done = 0;
        while (done < length) {
            long a = address + done;
            Segment s = segments.stream().filter(x -> x.contains(a)).findFirst().orElseThrow(() ->
                    new IOException(String.format("%s: address 0x%x is in no PT_LOAD segment", path, a)));
            long inSeg = a - s.vaddr();
            int n = (int) Math.min(length - done, s.memSize() - inSeg);
            int fromFile = (int) Math.max(0, Math.min(n, s.fileSize() - inSeg));
            if (fromFile > 0) readFully(ch, ByteBuffer.wrap(out, done, fromFile), s.fileOffset() + inSeg);
            done += n; // the rest of the segment past p_filesz stays zero
        }
        return out;
    }

    @Override
    public String backend() { return "kcore " + path; }

    @Override
    public void close() {
        try {
            ch.close();
        } catch (IOException ignored) {
            // read-only file: nothing to lose
        }
    }

    private static void readFully(FileChannel ch, ByteBuffer b, long pos) throws IOException {
        while (b.hasRemaining()) {
            int n = ch.read(b, pos);
            if (n < 0) throw new IOException("unexpected end of file at offset " + pos);
            pos += n;
        }
    }
}

package ptfence.image;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import ptfence.cli.BadInputException;

/**
 * {@code --elf FILE[:BASE]}: the executable PT_LOAD segments of an ELF file (32 or 64 bit, little
 * endian). With a BASE, the segments move so that the lowest PT_LOAD address lands at BASE, as ptxed does.
 */
public record ElfSegments(Path file, long base) implements SectionSource {
    private static final int PT_LOAD = 1;
    private static final int PF_X = 1;

    public static ElfSegments parse(String spec) {
        int colon = spec.lastIndexOf(':');
        if (colon > 0 && spec.substring(colon + 1).matches("0[xX][0-9a-fA-F]+|[0-9]+")) {
            return new ElfSegments(Path.of(spec.substring(0, colon)), Numbers.parse(spec.substring(colon + 1), "--elf " + spec));
        }
        return new ElfSegments(Path.of(spec), 0);
    }

    @Override
    public List<Section> sections() {
        byte[] all;
        all = ptfence.cli.Inputs.read(file, "--elf");
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        if (all.length < 52 || b.getInt(0) != 0x464c457f) {
            throw new BadInputException(file + ": not an ELF file");
        }
        boolean is64 = all[4] == 2;
        if (all[5] != 1) {
            throw new BadInputException(file + ": big-endian ELF is not supported");
        }
        long phoff = is64 ? b.getLong(0x20) : Integer.toUnsignedLong(b.getInt(0x1c));
        int phentsize = Short.toUnsignedInt(b.getShort(is64 ? 0x36 : 0x2a));
        int phnum = Short.toUnsignedInt(b.getShort(is64 ? 0x38 : 0x2c));
        long[][] loads = new long[phnum][];
        long minAddr = -1;
        for (int i = 0; i < phnum; i++) {
            int p = (int) (phoff + (long) i * phentsize);
            if (p < 0 || p + (is64 ? 56 : 32) > all.length) {
                throw new BadInputException(file + ": program header " + i + " at offset 0x" + Integer.toHexString(p) + " is truncated");
            }
            int type = b.getInt(p);
            if (type != PT_LOAD) {
                continue;
            }
            long flags = is64 ? b.getInt(p + 4) : b.getInt(p + 24);
            long offset = is64 ? b.getLong(p + 8) : Integer.toUnsignedLong(b.getInt(p + 4));
            long vaddr = is64 ? b.getLong(p + 16) : Integer.toUnsignedLong(b.getInt(p + 8));
            long filesz = is64 ? b.getLong(p + 32) : Integer.toUnsignedLong(b.getInt(p + 16));
            if (Long.compareUnsigned(vaddr, minAddr) < 0) {
                minAddr = vaddr;
            }
            loads[i] = new long[] {flags, offset, vaddr, filesz};
        }
        long shift = base == 0 ? 0 : base - minAddr;
        List<Section> out = new ArrayList<>();
        for (long[] l : loads) {
            if (l == null || (l[0] & PF_X) == 0 || l[3] == 0) {
                continue;
            }
            if (l[1] < 0 || l[1] + l[3] > all.length) {
                throw new BadInputException(file + ": segment at file offset 0x" + Long.toHexString(l[1]) + " runs past the end of the file");
            }
            byte[] bytes = Arrays.copyOfRange(all, (int) l[1], (int) (l[1] + l[3]));
            out.add(Section.of(file.getFileName() + "[0x" + Long.toHexString(l[1]) + "]", l[2] + shift, bytes));
        }
        if (out.isEmpty()) {
            throw new BadInputException(file + ": no executable PT_LOAD segment");
        }
        return out;
    }
}

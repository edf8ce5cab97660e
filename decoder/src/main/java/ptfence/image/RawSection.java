package ptfence.image;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import ptfence.cli.BadInputException;

/** ptxed's {@code --raw FILE[:from[-to]]:ADDR}: a file range (default: all of it) loaded at ADDR. */
public record RawSection(Path file, long from, long to, long address) implements SectionSource {

    public static RawSection parse(String spec) {
        int last = spec.lastIndexOf(':');
        if (last <= 0) {
            throw new BadInputException("--raw " + spec + ": expected FILE[:from[-to]]:ADDR");
        }
        long address = Numbers.parse(spec.substring(last + 1), "--raw " + spec + ": address");
        String rest = spec.substring(0, last);
        FileRange r = FileRange.parse(rest, "--raw");
        return new RawSection(r.file(), r.from(), r.to(), address);
    }

    @Override
    public List<Section> sections() {
        byte[] all;
        all = ptfence.cli.Inputs.read(file, "--raw");
        long end = to < 0 ? all.length : Math.min(to, all.length);
        if (from > all.length || from > end) {
            throw new BadInputException("--raw " + file + ": range 0x" + Long.toHexString(from) + "-0x"
                    + Long.toHexString(end) + " outside the file (" + all.length + " bytes)");
        }
        byte[] bytes = Arrays.copyOfRange(all, (int) from, (int) end);
        return List.of(Section.of(file.getFileName().toString(), address, bytes));
    }
}

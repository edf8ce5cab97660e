package ptfence.pmu;

import java.util.ArrayList;
import java.util.List;

/**
 * One {@code format/<term>} file of a PMU, e.g. {@code config:14-17}: which bits of which config word a term sets.
 * Split ranges ({@code config:0-1,4}) are laid out low value bits first, as perf does.
 */
public record FormatTerm(String name, String word, List<int[]> ranges) {

    public static FormatTerm parse(String name, String text, String where) {
        String t = text.trim();
        int colon = t.indexOf(':');
        if (colon <= 0) {
            throw new ptfence.cli.BadInputException(where + ": format '" + t + "' is not <config>:<bits>");
        }
        List<int[]> ranges = new ArrayList<>();
        try {
            for (String part : t.substring(colon + 1).split(",")) {
                String[] lohi = part.trim().split("-");
                int lo = Integer.parseInt(lohi[0]);
                int hi = lohi.length > 1 ? Integer.parseInt(lohi[1]) : lo;
                if (lo < 0 || hi > 63 || hi < lo) {
                    throw new NumberFormatException(part);
                }
                ranges.add(new int[] {lo, hi});
            }
        } catch (NumberFormatException e) {
            throw new ptfence.cli.BadInputException(where + ": format '" + t + "' has bad bit range " + e.getMessage());
        }
        return new FormatTerm(name, t.substring(0, colon), List.copyOf(ranges));
    }

    public int width() {
        int w = 0;
        for (int[] r : ranges) {
            w += r[1] - r[0] + 1;
        }
        return w;
    }

    /** The config mask this term covers (perf's "*_BIT" values in AUXTRACE_INFO). */
    public long mask() {
        return encode(width() == 64 ? -1L : (1L << width()) - 1);
    }

    /** Places {@code value} into the term's bits. */
    public long encode(long value) {
        long out = 0;
        int shift = 0;
        for (int[] r : ranges) {
            int n = r[1] - r[0] + 1;
            long part = (value >>> shift) & (n == 64 ? -1L : (1L << n) - 1);
            out |= part << r[0];
            shift += n;
        }
        return out;
    }

    /** The largest value the term can hold. */
    public long maxValue() {
        return width() >= 63 ? Long.MAX_VALUE : (1L << width()) - 1;
    }
}

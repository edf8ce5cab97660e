package ptfence.perfdata;

import java.util.BitSet;

/** CPU and block lists as perf prints them: "0-3,8", ranges of consecutive numbers, in order. */
final class CpuList {
    private CpuList() {
    }

    /**
     * A CPU list read and printed again (perf_cpu_map__new, then cpu_map__snprint): sorted, repeats dropped, runs
     * joined; an empty list is perf's dummy map, "-1".
     */
    static String normalize(String list) {
        BitSet cpus = new BitSet();
        for (String part : list.split(",")) {
            String p = part.trim();
            if (p.isEmpty()) {
                continue;
            }
            try {
                int dash = p.indexOf('-');
                int from = Integer.parseInt(dash < 0 ? p : p.substring(0, dash));
                int to = dash < 0 ? from : Integer.parseInt(p.substring(dash + 1));
                cpus.set(from, to + 1);
            } catch (NumberFormatException | IndexOutOfBoundsException e) {
                return list; // not a list perf reads either: shown as it is (docs/script.md)
            }
        }
        return cpus.isEmpty() ? "-1" : ranges(cpus);
    }

    /** bitmap_scnprintf: the set bits among the first {@code nbits} of {@code words}, as ranges. */
    static String bits(long[] words, long nbits) {
        BitSet b = BitSet.valueOf(words);
        if (nbits < b.length()) {
            b.clear((int) Math.max(0, nbits), b.length());
        }
        return ranges(b);
    }

    private static String ranges(BitSet b) {
        StringBuilder sb = new StringBuilder();
        for (int from = b.nextSetBit(0); from >= 0; ) {
            int to = b.nextClearBit(from) - 1;
            sb.append(sb.isEmpty() ? "" : ",").append(from);
            if (to > from) {
                sb.append('-').append(to);
            }
            from = to + 1 < 0 ? -1 : b.nextSetBit(to + 1);
        }
        return sb.toString();
    }
}

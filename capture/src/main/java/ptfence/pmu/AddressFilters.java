package ptfence.pmu;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import ptfence.cli.BadInputException;

/**
 * perf's {@code --filter} syntax for intel_pt address filters, turned into the kernel's: {@code filter|start|stop|
 * tracestop <start>[/<size>][@<file>]}, several separated by commas. A start that is a kernel symbol (no
 * {@code @file}) — including a {@code bpf_prog_<tag>_<name>} — is looked up, and its size defaults to the symbol's
 * extent; user-space starts must be numbers (offsets into the file).
 */
public final class AddressFilters {
    /** A kernel symbol's address and extent. */
    public record Symbol(long address, long size) {}

    private AddressFilters() {}

    /**
     * @param symbols resolves a kernel symbol name, null when unknown
     * @param maxRanges caps/num_address_ranges (0 = no check)
     * @return the string for PERF_EVENT_IOC_SET_FILTER
     */
    public static String toKernel(String perfSyntax, Function<String, Symbol> symbols, int maxRanges) {
        List<String> out = new ArrayList<>();
        for (String raw : perfSyntax.split(",")) {
            String f = raw.trim();
            if (f.isEmpty()) continue;
            String[] parts = f.split("\\s+", 2);
            String action = parts[0].toLowerCase(Locale.ROOT);
            if (!List.of("filter", "start", "stop", "tracestop").contains(action) || parts.length < 2) {
                throw new BadInputException("--filter '" + f + "': expected filter|start|stop|tracestop <start>[/<size>][@<file>]");
            }
            String rest = parts[1].replace(" ", "");
            String file = null;
            int at = rest.indexOf('@');
            if (at >= 0) {
                file = rest.substring(at + 1);
                rest = rest.substring(0, at);
                if (file.isEmpty()) throw new BadInputException("--filter '" + f + "': empty file after @");
            }
            String startText = rest, sizeText = null;
            int slash = rest.indexOf('/');
            if (slash >= 0) {
                startText = rest.substring(0, slash);
                sizeText = rest.substring(slash + 1);
            }
            long start, size;
            Long number = number(startText);
            if (number != null) {
                start = number;
                size = sizeText == null ? 0 : requireNumber(sizeText, f);
            } else {
                if (file != null) {
                    throw new BadInputException("--filter '" + f + "': symbols in files are not resolved; give an offset");
                }
                Symbol s = symbols.apply(startText);
                if (s == null) {
                    throw new BadInputException("--filter '" + f + "': no kernel symbol '" + startText + "' in /proc/kallsyms");
                }
                start = s.address();
                size = sizeText == null ? s.size() : requireNumber(sizeText, f);
            }
            if (action.equals("filter") || action.equals("tracestop")) {
                if (size <= 0) throw new BadInputException("--filter '" + f + "': a range needs a size");
            }
            StringBuilder k = new StringBuilder(action).append(" 0x").append(Long.toHexString(start));
            if (size > 0) k.append("/0x").append(Long.toHexString(size));
            if (file != null) k.append('@').append(file);
            out.add(k.toString());
        }
        if (maxRanges > 0 && out.size() > maxRanges) {
            throw new BadInputException("--filter: " + out.size() + " address ranges, this CPU has " + maxRanges);
        }
        return String.join(",", out);
    }

    private static Long number(String s) {
        try {
            if (s.startsWith("0x") || s.startsWith("0X")) return Long.parseUnsignedLong(s.substring(2), 16);
            if (!s.isEmpty() && Character.isDigit(s.charAt(0))) return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return null;
        }
        return null;
    }

    private static long requireNumber(String s, String filter) {
        Long n = number(s);
        if (n == null) throw new BadInputException("--filter '" + filter + "': size '" + s + "' is not a number");
        return n;
    }
}

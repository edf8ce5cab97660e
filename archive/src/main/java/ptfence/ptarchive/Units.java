package ptfence.ptarchive;

import java.time.Duration;
import java.util.Locale;
import ptfence.cli.BadInputException;

/** Parsing and printing the units the CLI speaks: durations (30d), sizes (10G), perf times, byte counts. */
final class Units {
    private Units() {}

    /** Longest duration accepted: a century, far beyond any retention, and far from overflowing a wall-clock time. */
    static final Duration MAX_DURATION = Duration.ofDays(36_525);

    /** "30d", "12h", "90m", "45s", "2w", or a bare number of days; never negative, at most {@link #MAX_DURATION}. */
    static Duration duration(String s) {
        Duration d = parseDuration(s);
        if (d.isNegative() || d.compareTo(MAX_DURATION) > 0) {
            throw new BadInputException("duration out of range: '" + s + "' (0 .. " + MAX_DURATION.toDays() + "d)");
        }
        return d;
    }

    private static Duration parseDuration(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        try {
            char unit = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
            if (Character.isDigit(unit)) {
                return Duration.ofDays(Long.parseLong(t));
            }
            long n = Long.parseLong(t.substring(0, t.length() - 1));
            return switch (unit) {
                case 'w' -> Duration.ofDays(7 * n);
                case 'd' -> Duration.ofDays(n);
                case 'h' -> Duration.ofHours(n);
                case 'm' -> Duration.ofMinutes(n);
                case 's' -> Duration.ofSeconds(n);
                default -> throw new NumberFormatException();
            };
        } catch (NumberFormatException | ArithmeticException | IndexOutOfBoundsException e) {
            throw new BadInputException("not a duration: '" + s + "' (use e.g. 30d, 12h, 90m, 45s, 2w)");
        }
    }

    /** "10G", "512M", "64K", "1T" (powers of 1024) or a bare byte count; at least one byte. */
    static long size(String s) {
        long n = parseSize(s);
        if (n < 1) {
            throw new BadInputException("size out of range: '" + s + "' (a positive size, e.g. 10G)");
        }
        return n;
    }

    private static long parseSize(String s) {
        String t = s.trim().toUpperCase(Locale.ROOT);
        if (t.endsWith("B")) {
            t = t.substring(0, t.length() - 1);
        }
        try {
            char unit = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
            int shift = switch (unit) {
                case 'K' -> 10;
                case 'M' -> 20;
                case 'G' -> 30;
                case 'T' -> 40;
                default -> 0;
            };
            String digits = shift == 0 ? t : t.substring(0, t.length() - 1);
            return Math.multiplyExact(Long.parseLong(digits), 1L << shift);
        } catch (NumberFormatException | ArithmeticException | IndexOutOfBoundsException e) {
            throw new BadInputException("not a size: '" + s + "' (use e.g. 10G, 512M, 64K or a byte count)");
        }
    }

    /** A perf time: nanoseconds, or seconds with a fraction as perf script prints them ("12345.678901234"). */
    static long perfTime(String s) {
        try {
            int dot = s.indexOf('.');
            if (dot < 0) {
                return Long.parseLong(s);
            }
            String frac = (s.substring(dot + 1) + "000000000").substring(0, 9);
            return Math.addExact(Math.multiplyExact(Long.parseLong(s.substring(0, dot)), 1_000_000_000L),
                    Long.parseLong(frac));
        } catch (NumberFormatException | ArithmeticException e) {
            throw new BadInputException("not a perf time: '" + s + "' (ns, or seconds.fraction)");
        }
    }

    /** "1.5 MiB" style. */
    static String bytes(long n) {
        if (n < 1024) {
            return n + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = n;
        int i = -1;
        while (v >= 1024 && i < units.length - 1) {
            v /= 1024;
            i++;
        }
        return String.format(Locale.ROOT, "%.1f %s", v, units[i]);
    }

    /** A perf time as seconds.nanoseconds, "open" for an open end. */
    static String time(long ns) {
        if (ns == Long.MAX_VALUE) {
            return "open";
        }
        return String.format(Locale.ROOT, "%d.%09d", ns / 1_000_000_000L, ns % 1_000_000_000L);
    }

    /** An address as 0x-prefixed hex. */
    static String address(long a) {
        return "0x" + Long.toHexString(a);
    }
}

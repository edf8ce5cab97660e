package ptfence.script;

import java.util.ArrayList;
import java.util.List;

/**
 * perf script's {@code --time}: one or more ranges of perf time, as perf reads them (tools/perf/util/time-utils.c):
 * {@code start,stop} in seconds with up to nine decimals, either end open, several separated by spaces
 * ({@code "1.5,2 3,"}); or percentages of the recording's sample time span: {@code 10%/2} (the second tenth),
 * {@code 10%/1,10%/3}, {@code 0%-10%,30%-40%}, {@code 25%}. With {@code --reltime} the times count from the first
 * sample. A sample's time decides ({@link #skip}): in a range, inclusive at both ends; of several ranges the ends but
 * the last are exclusive, as in perf, and the last may be open ({@code "1.5,2 3,"} keeps every sample from 3 on).
 */
public final class TimeRanges {
    /** perf time ns [start, end]; 0 is an open end. */
    public record Range(long start, long end) {
    }

    private final List<Range> ranges;

    private TimeRanges(List<Range> ranges) {
        this.ranges = List.copyOf(ranges);
    }

    /** No --time: every sample. */
    public static final TimeRanges ALL = new TimeRanges(List.of());

    public List<Range> ranges() {
        return ranges;
    }

    public boolean isEmpty() {
        return ranges.isEmpty();
    }

    /**
     * Parses {@code spec}. {@code first}/{@code last}: the recording's first and last sample times (perf's
     * HEADER_SAMPLE_TIME; both 0 when the recording does not say), needed by percentages and --reltime.
     */
    public static TimeRanges parse(String spec, long first, long last, boolean reltime) {
        if (spec == null) {
            return ALL;
        }
        boolean percent = spec.indexOf('%') >= 0;
        if ((percent || reltime) && first == 0 && last == 0) {
            throw new TimeStringException("--time " + spec + ": the recording does not say its first and last sample "
                    + "time (perf record's HEADER_SAMPLE_TIME), which " + (percent ? "percentages" : "--reltime")
                    + " count from");
        }
        List<Range> out = percent ? percents(spec, first, last) : absolute(spec);
        if (out == null) {
            throw new TimeStringException("--time " + spec + ": invalid time string (perf's forms: start,stop in "
                    + "seconds, either empty; several separated by spaces; 10%/2; 0%-10%,30%-40%)");
        }
        if (reltime) {
            List<Range> shifted = new ArrayList<>();
            for (Range r : out) {
                shifted.add(new Range(r.start() + first, r.end() + first));
            }
            out = shifted;
        }
        return new TimeRanges(out);
    }

    /** True if a sample at perf time {@code t} is outside every range. */
    public boolean skip(long t) {
        int n = ranges.size();
        if (n == 0) {
            return false;
        }
        if (n == 1) {
            Range r = ranges.get(0);
            if (t == 0) {
                return false;
            }
            return r.start() != 0 && Long.compareUnsigned(t, r.start()) < 0
                    || r.end() != 0 && Long.compareUnsigned(t, r.end()) > 0;
        }
        for (int i = 0; i < n; i++) {
            if (holds(ranges.get(i).start(), ranges.get(i).end(), t)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether the range from {@code start} to {@code end} (0: open) holds time {@code t}, its end included: every range
     * holds its end (perf since 5.3, perf_time__ranges_skip_sample; before, all but the last did not). Perf times or
     * TSCs alike ({@link PerfTimeFilter}'s).
     */
    static boolean holds(long start, long end, long t) {
        return Long.compareUnsigned(t, start) >= 0 && (end == 0 || Long.compareUnsigned(t, end) <= 0);
    }

    /** The earliest time a sample can be kept at (0: no lower bound). */
    public long earliest() {
        return ranges.isEmpty() ? 0 : ranges.get(0).start();
    }

    /** The latest time a sample can be kept at (Long.MAX_VALUE: no upper bound). */
    public long latest() {
        if (ranges.isEmpty()) {
            return Long.MAX_VALUE;
        }
        long e = ranges.get(ranges.size() - 1).end();
        return e == 0 ? Long.MAX_VALUE : e;
    }

    private static List<Range> absolute(String spec) {
        int commas = 0;
        for (int i = 0; i < spec.length(); i++) {
            commas += spec.charAt(i) == ',' ? 1 : 0;
        }
        if (commas == 0) {
            return null;
        }
        List<Range> out = new ArrayList<>();
        int p = 0;
        for (int i = 0; i < commas - 1; i++) {
            int start = p;
            p = spec.indexOf(',', p) + 1;
            while (p < spec.length() && Character.isWhitespace(spec.charAt(p))) {
                p++;
            }
            while (p < spec.length() && !Character.isWhitespace(spec.charAt(p))) {
                if (spec.charAt(p++) == ',') {
                    return null;
                }
            }
            Range r = one(spec.substring(start, p));
            if (r == null) {
                return null;
            }
            out.add(r);
            if (p < spec.length()) {
                p++;
            }
        }
        Range r = one(spec.substring(Math.min(p, spec.length())));
        if (r == null) {
            return null;
        }
        out.add(r);
        for (int i = 0; i + 1 < out.size(); i++) {
            if (Long.compareUnsigned(out.get(i).end(), out.get(i + 1).start()) >= 0) {
                return null;
            }
        }
        return out;
    }

    /** "start,stop" (either empty); null when malformed. */
    private static Range one(String s) {
        if (s.isEmpty()) {
            return new Range(0, 0);
        }
        int comma = s.indexOf(',');
        String a = comma < 0 ? s : s.substring(0, comma);
        String b = comma < 0 ? null : s.substring(comma + 1);
        long start = 0;
        long end = 0;
        if (!a.isEmpty()) {
            start = nsec(a);
            if (start < 0) {
                return null;
            }
        }
        if (b != null && !b.isEmpty()) {
            end = nsec(b);
            if (end < 0) {
                return null;
            }
        }
        if (end != 0 && end < start) {
            throw new TimeStringException("--time " + s + ": the end comes before the start");
        }
        return new Range(start, end);
    }

    /** "sec[.frac]" with at most nine fraction digits → ns; -1 when malformed. */
    static long nsec(String s) {
        int dot = s.indexOf('.');
        String sec = dot < 0 ? s : s.substring(0, dot);
        long secs = 0;
        for (int i = 0; i < sec.length(); i++) {
            char c = sec.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            secs = secs * 10 + (c - '0');
        }
        long ns = 0;
        if (dot >= 0) {
            String frac = s.substring(dot + 1);
            if (frac.length() > 9) {
                return -1;
            }
            for (int i = 0; i < 9; i++) {
                char c = i < frac.length() ? frac.charAt(i) : '0';
                if (c < '0' || c > '9') {
                    return -1;
                }
                ns = ns * 10 + (c - '0');
            }
        }
        return secs * 1_000_000_000L + ns;
    }

    private static List<Range> percents(String spec, long first, long last) {
        List<Range> out = new ArrayList<>();
        if (spec.indexOf('/') >= 0 || spec.indexOf('-') >= 0) {
            boolean slash = spec.indexOf('/') >= 0;
            for (String part : spec.split(",", -1)) {
                if (part.isEmpty()) {
                    break;
                }
                Range r = slash ? slash(part, first, last) : dash(part, first, last);
                if (r == null) {
                    return null;
                }
                out.add(r);
            }
            return out.isEmpty() ? null : out;
        }
        if (!spec.endsWith("%") || spec.indexOf('%') != spec.length() - 1) {
            return null;
        }
        Range r = slash(spec + "/1", first, last);
        return r == null ? null : List.of(r);
    }

    /** "a%/n": the n-th slice of a%. */
    private static Range slash(String s, long first, long last) {
        int slash = s.indexOf('/');
        if (slash < 0) {
            return null;
        }
        Double pcnt = percent(s.substring(0, slash));
        if (pcnt == null || pcnt <= 0) {
            return null;
        }
        int n;
        try {
            n = Integer.parseInt(s.substring(slash + 1));
        } catch (NumberFormatException e) {
            return null;
        }
        return percentRange(pcnt * (n - 1), pcnt * n, first, last);
    }

    /** "a%-b%". */
    private static Range dash(String s, long first, long last) {
        int dash = s.indexOf('-');
        if (dash < 0) {
            return null;
        }
        Double a = percent(s.substring(0, dash));
        Double b = percent(s.substring(dash + 1));
        if (a == null || b == null) {
            return null;
        }
        return percentRange(a, b, first, last);
    }

    private static Double percent(String s) {
        int pc = s.indexOf('%');
        if (pc < 0 || pc != s.length() - 1) {
            return null;
        }
        try {
            String num = s.substring(0, pc).trim();
            if (num.isEmpty() || !s.substring(0, pc).equals(s.substring(0, pc).stripLeading())) {
                return num.isEmpty() ? null : Double.parseDouble(num) / 100.0;
            }
            return Double.parseDouble(num) / 100.0;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static Range percentRange(double a, double b, long first, long last) {
        if (a < 0 || a > 1 || b < 0 || b > 1) {
            return null;
        }
        long total = last - first;
        long start = first + Math.round(a * total);
        long end = first + Math.round(b * total);
        if (end > start && end != last) {
            end -= 1;
        }
        return new Range(start, end);
    }
}

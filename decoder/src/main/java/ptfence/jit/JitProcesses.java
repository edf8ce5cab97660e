package ptfence.jit;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongUnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the recorded processes' JITs said about their code: per process, the functions of its jitdump (bytes and
 * names, each in its time window, in perf time) and the names of its {@code perf-PID.map}. Names are asked by
 * process, address and perf time: a jitdump function first (it knows when), then the map (which does not).
 */
public final class JitProcesses {
    /** A name for JIT code: [start, end) named {@code name}, from {@code dso} (the file that named it), during [from, to). */
    public record Named(String name, long start, long end, String dso, long from, long to) {
    }

    /** A jitdump's function in perf time ({@code from}/{@code to}); {@code dump} is the file it came from. */
    public record TimedFunction(JitCode.Function function, String dump, long from, long to) {
    }

    private static final Pattern DUMP = Pattern.compile("jit-(\\d+)\\.dump");

    private final Map<Integer, List<TimedFunction>> functions = new HashMap<>();
    private final Map<Integer, PerfMap> maps = new HashMap<>();

    /** The pid a jitdump's file name says ({@code jit-PID.dump}, as JITs name them and perf finds them), or -1. */
    public static int dumpPid(String file) {
        String base = file.substring(file.lastIndexOf('/') + 1);
        Matcher m = DUMP.matcher(base);
        return m.matches() ? Integer.parseInt(m.group(1)) : -1;
    }

    /**
     * Whether a mapping of this name is anonymous memory, whose code perf names through {@code perf-PID.map}:
     * {@code //anon}, {@code [anon:...]} (a named anonymous mapping), {@code /dev/zero}, {@code /anon_hugepage},
     * {@code /memfd:...} (a JIT's double mapping).
     */
    public static boolean anonymous(String file) {
        return file.startsWith("//anon") || file.startsWith("[anon:") || file.startsWith("/dev/zero")
                || file.startsWith("/anon_hugepage") || file.startsWith("/memfd:");
    }

    /**
     * Adds process {@code pid}'s jitdump; {@code toPerf} turns its timestamps into perf time (identity unless the
     * dump's timestamps are the TSC). Returns the dump's functions in its own clock.
     */
    public List<JitCode.Function> addDump(int pid, JitDump dump, LongUnaryOperator toPerf) {
        List<TimedFunction> l = functions.computeIfAbsent(pid, p -> new ArrayList<>());
        List<JitCode.Function> fns = JitCode.functions(dump);
        for (JitCode.Function f : fns) {
            long from = toPerf.applyAsLong(f.from());
            long to = f.to() == Long.MAX_VALUE ? Long.MAX_VALUE : toPerf.applyAsLong(f.to());
            l.add(new TimedFunction(f, dump.where(), from, to));
        }
        indexes.remove(pid);
        return fns;
    }

    public void addMap(int pid, PerfMap map) {
        maps.put(pid, map);
    }

    /** Process {@code pid}'s jitdump functions (empty if it has none). */
    public List<TimedFunction> functions(int pid) {
        return functions.getOrDefault(pid, List.of());
    }

    public Map<Integer, List<TimedFunction>> allFunctions() {
        return functions;
    }

    public Map<Integer, PerfMap> maps() {
        return maps;
    }

    public boolean isEmpty() {
        return functions.isEmpty() && maps.isEmpty();
    }

    /**
     * The name of {@code address} in process {@code pid} at perf time {@code time} (negative: any time, the newest
     * function there): its jitdump function, else its perf map's entry when {@code inAnonymous} (the address lies
     * in anonymous memory, where perf uses the map); null if neither names it.
     */
    public Named at(int pid, long address, long time, boolean inAnonymous) {
        TimedFunction best = function(pid, address, time);
        if (best != null) {
            JitCode.Function fn = best.function();
            return new Named(fn.name(), fn.address(), fn.end(), best.dump(), best.from(), best.to());
        }
        PerfMap m = inAnonymous ? maps.get(pid) : null;
        PerfMap.Entry e = m == null ? null : m.at(address);
        return e == null ? null : new Named(e.name(), e.start(), e.end(), mapName(pid), Long.MIN_VALUE,
                Long.MAX_VALUE);
    }

    /** A source line the jitdump's debug info gives {@code address} ("file:line", its range), or null. */
    public record Line(String text, long start, long end) {
    }

    public Line line(int pid, long address, long time) {
        TimedFunction f = function(pid, address, time);
        JitRecord.LineEntry e = f == null ? null : f.function().lineAt(address);
        return e == null ? null : new Line(e.file() + ":" + e.line(), e.address(), f.function().lineEnd(e));
    }

    /** The jitdump function holding {@code address} at perf time {@code time} (negative: the newest), or null. */
    private TimedFunction function(int pid, long address, long time) {
        TimedFunction best = null;
        ptfence.image.AddressRanges<TimedFunction> ix = index(pid);
        for (int i = ix == null ? -1 : ix.lastAtOrBefore(address); i >= 0 && ix.reaches(i, address); i--) {
            TimedFunction f = ix.get(i);
            JitCode.Function fn = f.function();
            if (Long.compareUnsigned(address - fn.address(), fn.code().length) < 0
                    && (time < 0 || time >= f.from() && time < f.to())
                    && (best == null || f.from() > best.from())) {
                best = f;
            }
        }
        return best;
    }

    /**
     * The name perf gives a process's anonymous memory, whether or not the map exists or was read from elsewhere
     * (--jit-dir): the path it reads the map from, {@code /tmp/perf-PID.map}.
     */
    public static String mapName(int pid) {
        return "/tmp/perf-" + pid + ".map";
    }

    private final Map<Integer, ptfence.image.AddressRanges<TimedFunction>> indexes =
            new java.util.concurrent.ConcurrentHashMap<>();

    private ptfence.image.AddressRanges<TimedFunction> index(int pid) {
        List<TimedFunction> l = functions.get(pid);
        return l == null ? null : indexes.computeIfAbsent(pid, p -> new ptfence.image.AddressRanges<>(l,
                f -> f.function().address(), f -> f.function().end(), new TimedFunction[0]));
    }

    /** The first of {@code dirs} holding {@code name} as a regular file, or null. */
    public static Path find(List<Path> dirs, String name) {
        for (Path d : dirs) {
            Path p = d.resolve(name);
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        return null;
    }
}

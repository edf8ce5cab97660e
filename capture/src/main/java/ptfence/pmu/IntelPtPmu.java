package ptfence.pmu;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.stream.Stream;
import ptfence.cli.BadInputException;

/**
 * The intel_pt PMU as sysfs describes it: its dynamic perf type, the {@code format/*} terms of its config word, the
 * {@code caps/*} of the CPU (CPUID leaf 0x14) and the top-level timing files.
 */
public record IntelPtPmu(Path directory, int type, Map<String, FormatTerm> format, Map<String, Long> caps,
                         long maxNonturboRatio, long tscArtNumerator, long tscArtDenominator, int nrAddrFilters) {

    public static final Path SYSFS_DEVICES = Path.of("/sys/bus/event_source/devices");
    public static final String NAME = "intel_pt";

    public IntelPtPmu {
        format = Collections.unmodifiableMap(new TreeMap<>(format));
        caps = Collections.unmodifiableMap(new TreeMap<>(caps));
    }

    /** Reads {@code devices/intel_pt}; a missing PMU is the one-line error the user sees on AMD or in most VMs. */
    public static IntelPtPmu discover(Path devices) {
        Path dir = devices.resolve(NAME);
        if (!Files.isDirectory(dir)) {
            throw new BadInputException("no intel_pt PMU in " + devices
                    + ": this CPU or VM does not expose Intel PT; --sideband-only still records the sideband "
                    + "(tasks, mappings, BPF events) and runs the text fence, without the trace");
        }
        try {
            int type = (int) number(dir.resolve("type"));
            Map<String, FormatTerm> format = new TreeMap<>();
            for (Path f : list(dir.resolve("format"))) {
                String name = f.getFileName().toString();
                format.put(name, FormatTerm.parse(name, Files.readString(f), f.toString()));
            }
            Map<String, Long> caps = new TreeMap<>();
            for (Path f : list(dir.resolve("caps"))) {
                caps.put(f.getFileName().toString(), number(f));
            }
            long ratio = optional(dir.resolve("max_nonturbo_ratio")).orElse(0);
            long num = 0, den = 0;
            Path art = dir.resolve("tsc_art_ratio");
            if (Files.isReadable(art)) {
                String[] nd = Files.readString(art).trim().split(":");
                if (nd.length == 2) {
                    num = parse(nd[0], art);
                    den = parse(nd[1], art);
                }
            }
            int filters = (int) optional(dir.resolve("nr_addr_filters")).orElse(caps.getOrDefault("num_address_ranges", 0L));
            return new IntelPtPmu(dir, type, format, caps, ratio, num, den, filters);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static IntelPtPmu discover() {
        return discover(SYSFS_DEVICES);
    }

    public long cap(String name) {
        return caps.getOrDefault(name, 0L);
    }

    public boolean hasTerm(String name) {
        return format.containsKey(name);
    }

    public FormatTerm term(String name) {
        FormatTerm t = format.get(name);
        if (t == null) {
            throw new BadInputException("intel_pt: this PMU has no '" + name + "' format term (" + directory.resolve("format") + ")");
        }
        return t;
    }

    /** The config mask of a term, 0 when the PMU lacks it (AUXTRACE_INFO's *_BIT words). */
    public long bit(String name) {
        FormatTerm t = format.get(name);
        return t == null ? 0 : t.mask();
    }

    private static Iterable<Path> list(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return java.util.List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().toList();
        }
    }

    private static OptionalLong optional(Path f) throws IOException {
        return Files.isReadable(f) ? OptionalLong.of(number(f)) : OptionalLong.empty();
    }

    private static long number(Path f) throws IOException {
        return parse(Files.readString(f).trim(), f);
    }

    /** sysfs writes caps in hex without prefix ("1", "249", "3f"); type and ratios in decimal. */
    private static long parse(String s, Path f) {
        try {
            String t = s.trim();
            if (t.startsWith("0x")) {
                return Long.parseLong(t.substring(2), 16);
            }
            boolean hex = f.getParent() != null && f.getParent().getFileName().toString().equals("caps");
            return Long.parseLong(t, hex ? 16 : 10);
        } catch (NumberFormatException e) {
            throw new BadInputException(f + ": '" + s + "' is not a number");
        }
    }
}

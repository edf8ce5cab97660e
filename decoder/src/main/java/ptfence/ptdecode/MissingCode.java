package ptfence.ptdecode;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The code a decode found nowhere, gathered from every CPU's decoder thread and told once at the end: one line per
 * kind (BPF programs without an image, kernel text, mapped files not found, addresses nothing maps) with how many
 * decode errors it caused, as perf warns once with a count; with {@code -v} also one line per place (a program, a
 * file, a kernel page), with what would fix it. The CPUs' threads report in any order, so what is told does not
 * depend on it: places by most errors, then by name, each with its lowest address.
 */
final class MissingCode {
    enum Kind {
        NAMED("named image", "the recording names it, but neither the archive nor a server in DEBUGINFOD_URLS gave "
                + "it (docs/fleet.md)"),
        BPF("BPF program", "record with ptrec: its text fence archives BPF code"),
        KSYM("kernel symbol", "record with ptrec, or give --kcore DIR"),
        KERNEL("kernel page", "give --kcore DIR (perf record --kcore) or --vmlinux FILE"),
        FILE("mapped file", "put the files under --sysroot DIR or next to the recording"),
        UNMAPPED("unmapped page", "the recording maps nothing there");

        final String what;
        final String fix;

        Kind(String what, String fix) {
            this.what = what;
            this.fix = fix;
        }
    }

    /** One place: how many errors it caused and the lowest address of one. */
    private static final class Place {
        long errors;
        long lowest = -1L;
    }

    private final Map<Kind, Map<String, Place>> places = new LinkedHashMap<>();

    /** An error at {@code ip} because the code of {@code place} (of {@code kind}) is nowhere. */
    synchronized void add(Kind kind, String place, long ip) {
        Place p = places.computeIfAbsent(kind, k -> new LinkedHashMap<>()).computeIfAbsent(place, x -> new Place());
        p.errors++;
        p.lowest = Long.compareUnsigned(ip, p.lowest) < 0 ? ip : p.lowest;
    }

    /** The stderr lines, without the "ptdecode: " prefix: per kind, and with {@code verbose} per place. */
    synchronized List<String> lines(boolean verbose) {
        List<String> out = new ArrayList<>();
        for (Kind k : Kind.values()) {
            Map<String, Place> m = places.get(k);
            if (m == null) {
                continue;
            }
            List<Map.Entry<String, Place>> ordered = new ArrayList<>(m.entrySet());
            ordered.sort(Map.Entry.<String, Place>comparingByValue((a, b) -> Long.compare(b.errors, a.errors))
                    .thenComparing(Map.Entry.comparingByKey()));
            long errors = m.values().stream().mapToLong(p -> p.errors).sum();
            StringBuilder sb = new StringBuilder("no code for ").append(m.size()).append(' ').append(k.what)
                    .append(m.size() == 1 ? "" : "s").append(" (").append(errors).append(errors == 1 ? " error" :
                            " errors").append("): ");
            int shown = 0;
            for (Map.Entry<String, Place> e : ordered) {
                if (shown == 3) {
                    sb.append(", ...");
                    break;
                }
                sb.append(shown++ == 0 ? "" : ", ").append(e.getKey());
            }
            out.add(sb.append("; ").append(k.fix).toString());
            if (verbose) {
                for (Map.Entry<String, Place> e : ordered) {
                    Place place = e.getValue();
                    out.add("  " + e.getKey() + ": " + place.errors + (place.errors == 1 ? " error" : " errors")
                            + ", lowest at 0x" + Long.toHexString(place.lowest));
                }
            }
        }
        return out;
    }
}

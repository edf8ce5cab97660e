package ptfence.fence;

import ptfence.region.ImageAt;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Checks a guest fence run (capture/src/test/guest/fence-churn.sh) against its independent reader: every
 * /proc/kcore copy the churn took while a region was live (kcore/index: address, length, CLOCK_MONOTONIC before and
 * after the read, file) must find, at that address and time, an archived region whose bytes equal kcore's over the
 * whole region. Run as {@code GuestFenceCheck ARCHIVE KCORE_DIR [PERF_DATA]} or through {@link #check}.
 */
public final class GuestFenceCheck {
    /** What was found: dumps whose region is archived with equal bytes, different bytes, none; regions by kind. */
    public record Result(int equal, List<String> differ, List<String> missing, Map<RegionKind, Integer> regions,
                         Map<RegionKind, Integer> closed, Map<String, Integer> equalByWhat,
                         List<String> afterUnregister, List<String> midPoke) {
        public String summary() {
            return String.format("kcore copies: %d equal to the archive %s, %d differ, %d not archived, %d read "
                    + "after their symbol's unregister, %d read mid-poke; regions %s (closed %s)", equal, equalByWhat,
                    differ.size(), missing.size(), afterUnregister.size(), midPoke.size(), regions, closed);
        }

        /** Copies equal to the archive whose file name starts with {@code what} (a module, a page's symbol). */
        public int equal(String what) {
            return equalByWhat.entrySet().stream().filter(e -> e.getKey().startsWith(what))
                    .mapToInt(Map.Entry::getValue).sum();
        }
    }

    private GuestFenceCheck() {}

    public static Result check(Path archiveDir, Path kcoreDir) throws IOException {
        return check(archiveDir, List.of(kcoreDir));
    }

    /** The same over several churns' kcore folders (each with its own index). */
    public static Result check(Path archiveDir, List<Path> kcoreDirs) throws IOException {
        return check(archiveDir, kcoreDirs, null);
    }

    /**
     * The same, with the recording's perf.data: a copy no archived region holds, read after the kernel's KSYMBOL
     * unregister of a symbol at its address (and before any new symbol there), is text the kernel had already
     * said was gone (the churn's reader races a retired image that kallsyms still lists): counted apart, in
     * {@link Result#afterUnregister}, not as missing. A copy that differs from the archived version only by INT3s,
     * each at the first byte of a TEXT_POKE the kernel recorded within {@link #POKE_WINDOW_NS} of the read, where the
     * archive holds that poke's old or new first byte, caught {@code text_poke_bp} half done: the INT3 stands from
     * before the record (one sync and the tail's write) to after it (two syncs), a state the kernel never publishes
     * as a version, and under TCG two reads in a row can both fall inside it (6.12, the kprobes lane's ftrace
     * trampoline re-poked by another ftrace user: 0xcc at +0x94, two reads 3 ms apart, the record 2 ms after):
     * counted apart, in {@link Result#midPoke}. The times are the kernel's own records', not the archive's.
     */
    public static Result check(Path archiveDir, List<Path> kcoreDirs, Path perfData) throws IOException {
        Map<Long, java.util.TreeMap<Long, Boolean>> symbols = perfData == null ? Map.of() : ksymbols(perfData);
        Map<Long, java.util.TreeMap<Long, int[]>> pokes = perfData == null ? Map.of() : pokeFirstBytes(perfData);
        List<String[]> index = new ArrayList<>(); // {line, folder}
        for (Path d : kcoreDirs) {
            if (!Files.exists(d.resolve("index"))) continue;
            for (String line : Files.readAllLines(d.resolve("index"))) index.add(new String[] {line, d.toString()});
        }
        try (Archive archive = Archive.openReadOnly(archiveDir)) {
            return archive.read(s -> {
                List<Region> all = RegionIndex.all(s, r -> true);
                Map<RegionKind, Integer> kinds = new EnumMap<>(RegionKind.class),
                        closed = new EnumMap<>(RegionKind.class);
                for (Region r : all) {
                    kinds.merge(r.kind(), 1, Integer::sum);
                    if (!r.isOpen()) closed.merge(r.kind(), 1, Integer::sum);
                }
                String boot = all.stream().filter(r -> r.kind() != RegionKind.KERNEL_TEXT).map(Region::bootId)
                        .findFirst().orElse("");
                int equal = 0;
                Map<String, Integer> byWhat = new java.util.TreeMap<>();
                List<String> differ = new ArrayList<>(), missing = new ArrayList<>(), afterUnregister = new ArrayList<>(),
                        midPoke = new ArrayList<>();
                for (String[] entry : index) {
                    Path kcoreDir = Path.of(entry[1]);
                    String[] f = entry[0].trim().split("\\s+");
                    if (f.length < 5) continue;
                    long addr = Long.parseUnsignedLong(f[0], 16), t0 = Long.parseLong(f[2]), t1 = Long.parseLong(f[3]);
                    byte[] dump;
                    try {
                        dump = Files.readAllBytes(kcoreDir.resolve(f[4]));
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                    String what = f[4] + " @0x" + f[0];
                    List<ImageAt> at0 = pieces(s, boot, addr, t0, dump.length),
                            at1 = pieces(s, boot, addr, t1, dump.length);
                    if (at0.isEmpty() && at1.isEmpty()) {
                        var last = symbols.getOrDefault(addr, new java.util.TreeMap<>()).floorEntry(t0);
                        var next = symbols.getOrDefault(addr, new java.util.TreeMap<>()).higherKey(t0);
                        if (last != null && last.getValue() && (next == null || next > t1)) {
                            afterUnregister.add(what + " read " + (t0 - last.getKey()) + " ns after its unregister");
                        } else {
                            missing.add(what);
                        }
                    } else if (matches(at0, addr, dump) || matches(at1, addr, dump)) {
                        equal++;
                        byWhat.merge(f[4].substring(0, Math.max(0, f[4].indexOf('.'))), 1, Integer::sum);
                    } else if (midPoke(at0.isEmpty() ? at1 : at0, addr, dump, pokes, t0, t1)) {
                        midPoke.add(what + " (INT3 at a TEXT_POKE's first byte)");
                    } else {
                        List<ImageAt> at = at0.isEmpty() ? at1 : at0;
                        differ.add(what + " vs " + at.stream().map(i -> i.region() + " " + differences(i, addr, dump))
                                .toList());
                    }
                }
                return new Result(equal, differ, missing, kinds, closed, byWhat, afterUnregister, midPoke);
            });
        }
    }

    /** Module init texts whose archived symbols were checked, and what was wrong with them. */
    public record InitNames(Map<String, Integer> texts, List<String> problems) {}

    /**
     * Every archived init text ({@code [module].init}) of a module the reference names must carry, in its kallsyms
     * lines, each of the reference's names for it at an address inside the text. The reference (churn-modules.py's
     * init-symbols: "MODULE NAME" lines) is the module file's own .init.text functions, read from the ELF file.
     */
    public static InitNames initNames(Path archiveDir, Path reference) throws IOException {
        Map<String, List<String>> want = new java.util.TreeMap<>();
        for (String line : Files.readAllLines(reference)) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 2) want.computeIfAbsent(f[0], m -> new ArrayList<>()).add(f[1]);
        }
        try (Archive archive = Archive.openReadOnly(archiveDir)) {
            return archive.read(s -> {
                Map<String, Integer> texts = new java.util.TreeMap<>();
                List<String> problems = new ArrayList<>();
                for (Region r : RegionIndex.all(s, r -> r.kind() == RegionKind.MODULE && r.name().endsWith("].init"))) {
                    String module = r.name().substring(1, r.name().length() - "].init".length());
                    if (!want.containsKey(module)) continue;
                    texts.merge(module, 1, Integer::sum);
                    String lines = RegionIndex.withContent(s, r).metadata() instanceof ptfence.region.KernelMetadata k
                            ? new String(k.kallsyms(), java.nio.charset.StandardCharsets.ISO_8859_1) : "";
                    for (String name : want.get(module)) {
                        boolean named = lines.lines().map(l -> l.split("[ \\t]")).anyMatch(f -> f.length >= 3
                                && f[2].equals(name) && r.contains(Long.parseUnsignedLong(f[0], 16)));
                        if (!named) problems.add(r.name() + " @0x" + Long.toHexString(r.address()) + ": no " + name);
                    }
                }
                return new InitNames(texts, problems);
            });
        }
    }

    /** Per address, the KSYMBOL records' times there: true for an unregister, false for a register. */
    private static Map<Long, java.util.TreeMap<Long, Boolean>> ksymbols(Path perfData) throws IOException {
        Map<Long, java.util.TreeMap<Long, Boolean>> out = new java.util.HashMap<>();
        try (ptfence.perfdata.PerfDataFile f = ptfence.perfdata.PerfDataFile.open(perfData)) {
            f.stream().forEach(r -> {
                if (r instanceof ptfence.perfdata.PerfRecord.Ksymbol k && k.sampleId() != null) {
                    out.computeIfAbsent(k.addr(), a -> new java.util.TreeMap<>())
                            .merge(k.sampleId().time(), k.unregister(), (a, b) -> a && b);
                }
            });
        }
        return out;
    }

    /** How far from a read a TEXT_POKE record may be for an INT3 in the copy to be that poke's (TCG's slow syncs). */
    static final long POKE_WINDOW_NS = 1_000_000_000L;

    /** Per poke address, the TEXT_POKE records' times there and their {old, new} first bytes (no bytes: -1). */
    private static Map<Long, java.util.TreeMap<Long, int[]>> pokeFirstBytes(Path perfData) throws IOException {
        Map<Long, java.util.TreeMap<Long, int[]>> out = new java.util.HashMap<>();
        try (ptfence.perfdata.PerfDataFile f = ptfence.perfdata.PerfDataFile.open(perfData)) {
            f.stream().forEach(r -> {
                if (r instanceof ptfence.perfdata.PerfRecord.TextPoke p && p.sampleId() != null) {
                    ByteBuffer o = p.oldBytes(), n = p.newBytes();
                    int[] firsts = {o.hasRemaining() ? o.get(o.position()) & 0xff : -1,
                            n.hasRemaining() ? n.get(n.position()) & 0xff : -1};
                    out.computeIfAbsent(p.addr(), a -> new java.util.TreeMap<>()).putIfAbsent(p.sampleId().time(), firsts);
                }
            });
        }
        return out;
    }

    /**
     * Whether every byte where the pieces and the dump differ is an INT3 in the dump at the first byte of a poke
     * recorded within the window of the read {@code [t0, t1]}, with the archive holding that poke's old or new byte.
     */
    private static boolean midPoke(List<ImageAt> pieces, long addr, byte[] dump,
                                   Map<Long, java.util.TreeMap<Long, int[]>> pokes, long t0, long t1) {
        if (pieces.isEmpty() || pokes.isEmpty()) return false;
        int differing = 0;
        for (ImageAt at : pieces) {
            byte[] img = at.bytes();
            long start = Math.max(addr, at.region().address());
            int from = at.offsetOf(start), d = (int) (start - addr);
            int n = Math.min(img.length - from, dump.length - d);
            for (int i = 0; i < n; i++) {
                int archived = img[from + i] & 0xff;
                if (archived == (dump[d + i] & 0xff)) continue;
                differing++;
                if (dump[d + i] != (byte) 0xcc) return false;
                var near = pokes.getOrDefault(addr + d + i, new java.util.TreeMap<>())
                        .subMap(t0 - POKE_WINDOW_NS, true, t1 + POKE_WINDOW_NS, true).values();
                if (near.stream().noneMatch(b -> b[0] == archived || b[1] == archived)) return false;
            }
        }
        return differing > 0;
    }

    /**
     * The archived versions that held {@code [addr, addr + length)} at {@code time}: the region holding addr, then
     * for a BPF dispatcher, regions of the same name after it as far as the dump reaches (its page is two halves,
     * each its own version), never a neighbour (the dump may run past the region's end into other text).
     */
    private static List<ImageAt> pieces(ptfence.store.Snapshot s, String boot, long addr, long time, int length) {
        List<ImageAt> out = new ArrayList<>();
        Optional<ImageAt> first = RegionIndex.bytesAt(s, boot, addr, time);
        if (first.isEmpty()) return out;
        out.add(first.get());
        // only a dispatcher's page is cut into pieces of one name; a trampoline dump (a page from the churn, 6.12
        // packs images in 64-byte chunks) runs on into the next image of the same function, another version's
        if (first.get().region().kind() != RegionKind.BPF_DISPATCHER) return out;
        long end = first.get().region().address() + first.get().region().length();
        while (end < addr + length) {
            Optional<ImageAt> next = RegionIndex.bytesAt(s, boot, end, time)
                    .filter(i -> i.region().name().equals(first.get().region().name()));
            if (next.isEmpty()) break;
            out.add(next.get());
            end = next.get().region().address() + next.get().region().length();
        }
        return out;
    }

    /** Every piece's bytes equal the dump's where they overlap it. */
    private static boolean matches(List<ImageAt> pieces, long addr, byte[] dump) {
        if (pieces.isEmpty()) return false;
        for (ImageAt at : pieces) {
            byte[] img = at.bytes();
            long start = Math.max(addr, at.region().address());
            int from = at.offsetOf(start), d = (int) (start - addr);
            int n = Math.min(img.length - from, dump.length - d);
            if (n <= 0 || !Arrays.equals(img, from, from + n, dump, d, d + n)) return false;
        }
        return true;
    }

    /** Where a piece's bytes and the dump's differ: dump offsets of the first and last differing byte, count. */
    static String differences(ImageAt at, long addr, byte[] dump) {
        byte[] img = at.bytes();
        long start = Math.max(addr, at.region().address());
        int from = at.offsetOf(start), d = (int) (start - addr);
        int n = Math.min(img.length - from, dump.length - d), first = -1, last = -1, count = 0;
        for (int i = 0; i < n; i++) {
            if (img[from + i] == dump[d + i]) continue;
            if (first < 0) first = d + i;
            last = d + i;
            count++;
        }
        return String.format("(%d of %d bytes differ, dump offsets 0x%x..0x%x)", count, n, first, last);
    }

    public static void main(String[] args) throws IOException {
        Result r = check(Path.of(args[0]), List.of(Path.of(args[1])), args.length > 2 ? Path.of(args[2]) : null);
        System.out.println(r.summary());
        r.differ().stream().limit(10).forEach(d -> System.out.println("  differ: " + d));
        r.missing().stream().limit(10).forEach(d -> System.out.println("  missing: " + d));
        r.afterUnregister().stream().limit(10).forEach(d -> System.out.println("  after its unregister: " + d));
        r.midPoke().stream().limit(10).forEach(d -> System.out.println("  mid-poke: " + d));
    }
}

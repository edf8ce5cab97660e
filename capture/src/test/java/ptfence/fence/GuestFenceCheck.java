package ptfence.fence;

import ptfence.region.ImageAt;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;

import java.io.IOException;
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
 * whole region. Run as {@code GuestFenceCheck ARCHIVE KCORE_DIR} or through {@link #check}.
 */
public final class GuestFenceCheck {
    /** What was found: dumps whose region is archived with equal bytes, different bytes, none; regions by kind. */
    public record Result(int equal, List<String> differ, List<String> missing, Map<RegionKind, Integer> regions,
                         Map<RegionKind, Integer> closed, Map<String, Integer> equalByWhat) {
        public String summary() {
            return String.format("kcore copies: %d equal to the archive %s, %d differ, %d not archived; regions %s "
                    + "(closed %s)", equal, equalByWhat, differ.size(), missing.size(), regions, closed);
        }

        /** Copies equal to the archive whose file name starts with {@code what} (a module, a page's symbol). */
        public int equal(String what) {
            return equalByWhat.entrySet().stream().filter(e -> e.getKey().startsWith(what))
                    .mapToInt(Map.Entry::getValue).sum();
        }
    }

    private GuestFenceCheck() {}

    public static Result check(Path archiveDir, Path kcoreDir) throws IOException {
        List<String> index = Files.exists(kcoreDir.resolve("index")) ? Files.readAllLines(kcoreDir.resolve("index"))
                : List.of();
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
                List<String> differ = new ArrayList<>(), missing = new ArrayList<>();
                for (String line : index) {
                    String[] f = line.trim().split("\\s+");
                    if (f.length < 5) continue;
                    long addr = Long.parseUnsignedLong(f[0], 16), t0 = Long.parseLong(f[2]), t1 = Long.parseLong(f[3]);
                    byte[] dump;
                    try {
                        dump = Files.readAllBytes(kcoreDir.resolve(f[4]));
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                    String what = f[4] + " @0x" + f[0];
                    Optional<ImageAt> at0 = RegionIndex.bytesAt(s, boot, addr, t0),
                            at1 = RegionIndex.bytesAt(s, boot, addr, t1);
                    if (at0.isEmpty() && at1.isEmpty()) {
                        missing.add(what);
                    } else if (matches(at0, addr, dump) || matches(at1, addr, dump)) {
                        equal++;
                        byWhat.merge(f[4].substring(0, Math.max(0, f[4].indexOf('.'))), 1, Integer::sum);
                    } else {
                        differ.add(what + " vs " + at0.or(() -> at1).get().region());
                    }
                }
                return new Result(equal, differ, missing, kinds, closed, byWhat);
            });
        }
    }

    /** The region's bytes from the dump's address on equal the dump's (as far as both reach). */
    private static boolean matches(Optional<ImageAt> at, long addr, byte[] dump) {
        if (at.isEmpty()) return false;
        byte[] img = at.get().bytes();
        int from = at.get().offsetOf(addr);
        int n = Math.min(img.length - from, dump.length);
        return n > 0 && Arrays.equals(img, from, from + n, dump, 0, n);
    }

    public static void main(String[] args) throws IOException {
        Result r = check(Path.of(args[0]), Path.of(args[1]));
        System.out.println(r.summary());
        r.differ().stream().limit(10).forEach(d -> System.out.println("  differ: " + d));
        r.missing().stream().limit(10).forEach(d -> System.out.println("  missing: " + d));
    }
}

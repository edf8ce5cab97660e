package ptfence.ptarchive;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import ptfence.cli.Json;
import ptfence.recording.Lease;
import ptfence.recording.PinTarget;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.Snapshot;

@Command(name = "ls", mixinStandardHelpOptions = true, description = "List recordings and regions, with filters.",
        footer = {"", "Examples:",
                "  ptarchive ls                                  recordings, then every region",
                "  ptarchive ls --recordings                     recordings, pins and leases only",
                "  ptarchive ls --name bpf_prog_6deef7357e7b4530_sys_enter",
                "  ptarchive ls --tag 6deef7 --kind bpf_prog --json",
                "  ptarchive ls --recording 2026-11-22T11:00-ptrec --at 12345.678901234",
                "  ptarchive ls --boot $(cat /proc/sys/kernel/random/boot_id) --address 0xffffffffc0a01000", ""})
final class LsCommand extends ArchiveSubcommand implements Callable<Integer> {
    @Option(names = "--recordings", description = "List recordings (with pins and leases), not regions.")
    boolean recordingsOnly;
    @Option(names = "--name", paramLabel = "NAME", description = "Regions with exactly this name.")
    String name;
    @Option(names = "--tag", paramLabel = "HEX", description = "BPF regions whose tag starts with these hex digits.")
    String tag;
    @Option(names = "--kind", paramLabel = "KIND", description = "Regions of this kind: ${COMPLETION-CANDIDATES}.")
    RegionKind kind;
    @Option(names = "--recording", paramLabel = "ID", description = "Regions a recording needs.")
    String recording;
    @Option(names = "--boot", paramLabel = "BOOT_ID", description = "Regions of this boot.")
    String boot;
    @Option(names = "--address", paramLabel = "ADDR", description = "Regions holding this address (hex with 0x, or decimal).")
    String address;
    @Option(names = "--at", paramLabel = "TIME", description = "Regions valid at this perf time (ns, or seconds.fraction).")
    String at;
    @Option(names = "--json", description = "One JSON object per line.")
    boolean json;

    @Override
    public Integer call() {
        PrintWriter out = out();
        try (Archive a = openArchiveReadOnly()) {
            a.read(s -> {
                boolean regionFilter = name != null || tag != null || kind != null || recording != null
                        || boot != null || address != null || at != null;
                if (recordingsOnly || !regionFilter) {
                    printRecordings(s, out);
                }
                if (!recordingsOnly) {
                    printRegions(s, out, regions(s));
                }
                return null;
            });
        }
        out.flush();
        return 0;
    }

    private List<Region> regions(Snapshot s) {
        List<Region> base;
        if (name != null) {
            base = RegionIndex.byName(s, name);
        } else if (tag != null) {
            base = RegionIndex.byTagPrefix(s, tag);
        } else if (recording != null) {
            base = Recordings.regions(s, recording);
        } else {
            base = RegionIndex.all(s, r -> true);
            base.sort(java.util.Comparator.comparing(Region::bootId).thenComparing(Region::address,
                    Long::compareUnsigned).thenComparingLong(Region::validFrom));
        }
        Long addr = address == null ? null : parseAddress(address);
        Long time = at == null ? null : Units.perfTime(at);
        java.util.Set<Long> ofRecording = recording == null ? null
                : new java.util.HashSet<>(Recordings.regionIds(s, recording));
        List<Region> out = new ArrayList<>();
        for (Region r : base) {
            if ((kind == null || r.kind() == kind) && (boot == null || r.bootId().equals(boot))
                    && (tag == null || r.tag().startsWith(tag.toLowerCase(Locale.ROOT)))
                    && (name == null || r.name().equals(name))
                    && (addr == null || r.contains(addr)) && (time == null || r.validAt(time))
                    && (ofRecording == null || ofRecording.contains(r.id()))) {
                out.add(r);
            }
        }
        return out;
    }

    static long parseAddress(String s) {
        try {
            return s.startsWith("0x") || s.startsWith("0X") ? Long.parseUnsignedLong(s.substring(2), 16)
                    : Long.parseUnsignedLong(s);
        } catch (NumberFormatException e) {
            throw new ptfence.cli.BadInputException("not an address: '" + s + "' (0x-prefixed hex or decimal)");
        }
    }

    private void printRecordings(Snapshot s, PrintWriter out) {
        List<Recording> recs = Recordings.all(s);
        List<PinTarget> pins = Recordings.pins(s);
        List<Lease> leases = Recordings.leases(s);
        if (json) {
            long now = System.currentTimeMillis();
            for (Recording r : recs) {
                out.println(new Json().field("type", "recording").field("recording", r.id())
                        .field("perf_data", r.perfDataPath()).field("boot_id", r.bootId()).field("start", r.startTime())
                        .raw("end", r.endTime() == Recording.RUNNING ? "null" : Long.toString(r.endTime()))
                        .field("created", java.time.Instant.ofEpochMilli(r.createdMillis()).toString())
                        .field("created_ms", r.createdMillis())
                        .field("regions", Recordings.regionIds(s, r.id()).size())
                        .field("pinned", pins.contains(new PinTarget(PinTarget.Type.RECORDING, r.id()))));
            }
            for (PinTarget p : pins) {
                out.println(new Json().field("type", "pin").field("target", p.toString())
                        .field("pin_type", p.type().name().toLowerCase(Locale.ROOT)).field("value", p.value()));
            }
            for (Lease l : leases) {
                out.println(new Json().field("type", "lease").field("id", l.id()).field("holder", l.holder())
                        .field("generation", l.fromGeneration()).field("started_ms", l.startedMillis())
                        .field("expires_ms", l.expiresMillis()).field("live", l.liveAt(now))
                        .field("recording", l.recording().isEmpty() ? null : l.recording()));
            }
            return;
        }
        out.printf("%d recording(s)%n", recs.size());
        for (Recording r : recs) {
            out.printf("  %-36s %s  boot %s  %s..%s  %d region(s)%s  %s%n", r.id(),
                    java.time.Instant.ofEpochMilli(r.createdMillis()), shortBoot(r.bootId()), Units.time(r.startTime()),
                    r.endTime() == Recording.RUNNING ? "running" : Units.time(r.endTime()),
                    Recordings.regionIds(s, r.id()).size(),
                    pins.contains(new PinTarget(PinTarget.Type.RECORDING, r.id())) ? "  pinned" : "",
                    r.perfDataPath());
        }
        if (!pins.isEmpty()) {
            out.printf("%d pin(s)%n", pins.size());
            pins.forEach(p -> out.println("  " + p));
        }
        if (!leases.isEmpty()) {
            long now = System.currentTimeMillis();
            out.printf("%d lease(s)%n", leases.size());
            leases.forEach(l -> out.printf("  %s  %s  %s%s%n", l.id(), l.holder(),
                    l.liveAt(now) ? "expires " + java.time.Instant.ofEpochMilli(l.expiresMillis()) : "expired",
                    l.recording().isEmpty() ? "" : "  keeps recording " + l.recording() + " live"));
        }
    }

    private void printRegions(Snapshot s, PrintWriter out, List<Region> regions) {
        if (json) {
            regions.forEach(r -> out.println(json(r)));
            return;
        }
        out.printf("%d region(s)%n", regions.size());
        if (!regions.isEmpty()) {
            out.printf("  %-16s %-17s %-8s %-18s %8s %-20s %-20s %-12s %s%n", "id", "kind", "boot", "address",
                    "length", "valid-from", "valid-to", "key", "name");
        }
        for (Region r : regions) {
            out.printf("  %-16s %-17s %-8s %-18s %8d %-20s %-20s %-12s %s%n", r.idHex(),
                    r.kind().name().toLowerCase(Locale.ROOT), shortBoot(r.bootId()), Units.address(r.address()),
                    r.length(), Units.time(r.validFrom()), Units.time(r.validTo()), r.key().shortHex(), r.name());
        }
    }

    static String json(Region r) {
        return new Json().field("type", "region").field("name", r.name()).field("kind", r.kind().name().toLowerCase(Locale.ROOT))
                .field("boot_id", r.bootId()).field("address", Units.address(r.address())).field("length", r.length())
                .field("valid_from", r.validFrom())
                .raw("valid_to", r.isOpen() ? "null" : Long.toString(r.validTo()))
                .field("content_key", r.key().hex()).field("id", r.idHex())
                .field("tag", r.tag().isEmpty() ? null : r.tag()).toString();
    }

    static String shortBoot(String boot) {
        return boot.length() > 8 ? boot.substring(0, 8) : boot;
    }
}

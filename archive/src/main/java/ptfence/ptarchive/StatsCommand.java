package ptfence.ptarchive;

import java.io.PrintWriter;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import ptfence.cli.Json;
import ptfence.recording.Recordings;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.Table;

@Command(name = "stats", mixinStandardHelpOptions = true, description = "Counts, bytes and the dedup ratio (bytes regions cover / bytes stored).",
        footer = {"", "Examples:", "  ptarchive stats", "  ptarchive stats --json", ""})
final class StatsCommand extends ArchiveSubcommand implements Callable<Integer> {
    @Option(names = "--json", description = "One JSON object.")
    boolean json;

    @Override
    public Integer call() {
        PrintWriter out = out();
        try (Archive a = openArchiveReadOnly()) {
            String text = a.read(s -> {
                long[] img = {0, 0};
                s.forEachImage((k, info) -> {
                    img[0]++;
                    img[1] += info.length();
                    return true;
                });
                Map<RegionKind, Long> byKind = new EnumMap<>(RegionKind.class);
                long[] reg = {0, 0, 0};
                RegionIndex.all(s, r -> {
                    reg[0]++;
                    reg[1] += r.length();
                    reg[2] += r.isOpen() ? 1 : 0;
                    byKind.merge(r.kind(), 1L, Long::sum);
                    return false;
                });
                long recordings = s.count(Table.RECORDINGS);
                long pins = s.count(Table.PINS);
                long now = System.currentTimeMillis();
                long leases = Recordings.leases(s).stream().filter(l -> l.liveAt(now)).count();
                double ratio = img[1] == 0 ? 1.0 : (double) reg[1] / img[1];
                long file = a.fileSize();
                if (json) {
                    Json j = new Json().field("images", img[0]).field("image_bytes", img[1]).field("regions", reg[0])
                            .field("open_regions", reg[2]).field("region_bytes", reg[1])
                            .raw("dedup_ratio", String.format(Locale.ROOT, "%.3f", ratio))
                            .field("recordings", recordings).field("pins", pins).field("live_leases", leases)
                            .field("file_bytes", file).field("generation", s.generation());
                    byKind.forEach((k, n) -> j.field("regions_" + k.name().toLowerCase(Locale.ROOT), n));
                    return j + "\n";
                }
                StringBuilder sb = new StringBuilder();
                sb.append(String.format(Locale.ROOT, "archive     %s%n", a.directory()));
                sb.append(String.format(Locale.ROOT, "images      %d (%s)%n", img[0], Units.bytes(img[1])));
                sb.append(String.format(Locale.ROOT, "regions     %d (%d open), covering %s%n", reg[0], reg[2],
                        Units.bytes(reg[1])));
                byKind.forEach((k, n) -> sb.append(String.format(Locale.ROOT, "  %-17s %d%n",
                        k.name().toLowerCase(Locale.ROOT), n)));
                sb.append(String.format(Locale.ROOT, "dedup ratio %.2f (bytes covered by regions / bytes stored)%n", ratio));
                sb.append(String.format(Locale.ROOT, "recordings  %d, pins %d, live leases %d%n", recordings, pins, leases));
                sb.append(String.format(Locale.ROOT, "on disk     %s (data.mdb; LMDB reuses freed pages, the file does not shrink)%n",
                        Units.bytes(file)));
                return sb.toString();
            });
            out.print(text);
        }
        out.flush();
        return 0;
    }

}

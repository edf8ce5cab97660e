package ptfence.ptarchive;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import ptfence.cli.Json;
import ptfence.cli.Progress;
import ptfence.gc.GarbageCollector;
import ptfence.gc.GcPolicy;
import ptfence.gc.GcReport;
import ptfence.store.Archive;

@Command(name = "gc", mixinStandardHelpOptions = true, usageHelpWidth = 120, description = {
        "Drop recordings older than --keep or whose perf.data is gone (unless pinned), then the oldest ones while "
                + "the images still referenced exceed --max-size; remove every region and image nothing kept needs.",
        "Safe while ptrec writes and ptdecode reads (short write transactions; live captures hold leases), safe to kill "
                + "at any moment, idempotent. Prints what it freed."},
        footer = {"", "Examples:",
                "  ptarchive gc                              keep 30 days",
                "  ptarchive gc --keep 7d --max-size 20G --dry-run",
                "  ptarchive gc --json",
                "",
                "--max-size counts the bytes of images kept; data.mdb does not shrink (LMDB reuses freed pages).",
                "",
                "Run it daily with systemd (docs/gc.systemd/, as root: archive /var/lib/ptfence/archive):",
                "  # /etc/systemd/system/ptfence-gc.service",
                "  [Unit]",
                "  Description=ptfence archive garbage collection (ptarchive gc)",
                "  Documentation=man:ptarchive(1)",
                "",
                "  [Service]",
                "  Type=oneshot",
                "  ExecStart=/usr/bin/ptarchive gc --keep 30d --max-size 20G",
                "  Nice=10",
                "  IOSchedulingClass=idle",
                "",
                "  # /etc/systemd/system/ptfence-gc.timer",
                "  [Unit]",
                "  Description=Run ptarchive gc daily",
                "",
                "  [Timer]",
                "  OnCalendar=daily",
                "  RandomizedDelaySec=1h",
                "  Persistent=true",
                "",
                "  [Install]",
                "  WantedBy=timers.target",
                "",
                "  systemctl daemon-reload && systemctl enable --now ptfence-gc.timer",
                "",
                "or from cron (crontab -e):",
                "  17 3 * * * /usr/bin/ptarchive gc --keep 30d --max-size 20G >>/var/log/ptfence-gc.log 2>&1", ""})
final class GcCommand extends ArchiveSubcommand implements Callable<Integer> {
    @Option(names = "--keep", paramLabel = "DURATION", defaultValue = "30d",
            description = "Drop recordings created longer ago than this (default ${DEFAULT-VALUE}; 12h, 7d, 2w...).")
    String keep;
    @Option(names = "--max-size", paramLabel = "BYTES", description = "Then drop oldest recordings while kept images exceed this (10G, 512M...).")
    String maxSize;
    @Option(names = "--dry-run", description = "Decide and report; change nothing.")
    boolean dryRun;
    @Option(names = "--json", description = "Print the report as one JSON object.")
    boolean json;
    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal).")
    Boolean progress;

    @Override
    public Integer call() {
        GcPolicy policy = new GcPolicy(Units.duration(keep), maxSize == null ? 0 : Units.size(maxSize), dryRun, 500);
        PrintWriter out = out();
        GcReport r;
        try (Archive a = openArchive();
                Progress p = Progress.start(spec.commandLine().getErr(), "gc", Progress.wanted(progress))) {
            r = GarbageCollector.run(a, policy, p);
            p.done();
        }
        if (json) {
            StringBuilder dropped = new StringBuilder("[");
            for (GcReport.Dropped d : r.droppedRecordings()) {
                dropped.append(dropped.length() > 1 ? "," : "")
                        .append(new Json().field("id", d.id()).field("reason", d.reason()));
            }
            out.println(new Json().field("dry_run", r.dryRun()).raw("dropped_recordings", dropped + "]")
                    .field("regions_freed", r.regionsFreed()).field("images_freed", r.imagesFreed())
                    .field("bytes_freed", r.bytesFreed()).field("spared", r.spared())
                    .field("leases_expired", r.leasesExpired()).field("kept_recordings", r.keptRecordings())
                    .field("kept_images", r.keptImages()).field("kept_bytes", r.keptBytes()));
        } else {
            String would = r.dryRun() ? "would " : "";
            for (GcReport.Dropped d : r.droppedRecordings()) {
                out.printf("gc: %sdrop recording %s (%s)%n", would, d.id(), d.reason());
            }
            out.printf("gc: %sfree %d region(s), %d image(s), %s; %d expired lease(s)%n", would,
                    r.regionsFreed(), r.imagesFreed(), Units.bytes(r.bytesFreed()), r.leasesExpired());
            out.printf("gc: kept %d recording(s), %d image(s), %s%s%n", r.keptRecordings(), r.keptImages(),
                    Units.bytes(r.keptBytes()),
                    r.spared() > 0 ? "; spared " + r.spared() + " touched by a capture while gc ran" : "");
        }
        out.flush();
        return 0;
    }
}

package ptfence.ptarchive;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import ptfence.cli.BadInputException;
import ptfence.cli.Json;
import ptfence.cli.Progress;
import ptfence.gc.GarbageCollector;
import ptfence.gc.GcPolicy;
import ptfence.gc.GcReport;
import ptfence.publish.PublishTree;
import ptfence.publish.TreeGc;
import ptfence.store.Archive;

@Command(name = "gc", mixinStandardHelpOptions = true, usageHelpWidth = 120, description = {
        "Drop recordings older than --keep or whose perf.data is gone (unless pinned), then the oldest ones while "
                + "the images still referenced exceed --max-size; remove every region and image nothing kept needs.",
        "A live capture's recording is never dropped: ptrec (and import) hold a lease from the capture's start to its "
                + "end, and gc keeps the recording and everything it archives meanwhile, whatever --keep says. A "
                + "recording whose perf.data is gone is dropped only once it is an hour old (an imported perf.data may "
                + "still be on its way).",
        "Safe while ptrec writes and ptdecode reads (short write transactions), safe to kill at any moment, idempotent. "
                + "It first checks the pages and records it decides by, and deletes nothing from a damaged archive "
                + "(exit 2; see 'ptarchive verify'). Prints what it freed."},
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
                "  17 3 * * * /usr/bin/ptarchive gc --keep 30d --max-size 20G >>/var/log/ptfence-gc.log 2>&1",
                "",
                "A publish tree (ptarchive publish DIR, served by debuginfod; docs/fleet.md) is collected apart, on the",
                "machine that holds it: objects no recording published within --keep names go, never anything younger",
                "than --grace (default 1d, at least 1h); publishes running meanwhile on any host lose nothing:",
                "  37 3 * * * /usr/bin/ptarchive gc --published /srv/ptfence --keep 30d", ""})
final class GcCommand extends ArchiveSubcommand implements Callable<Integer> {
    @Option(names = "--keep", paramLabel = "DURATION", defaultValue = "30d",
            description = "Drop recordings created longer ago than this (default ${DEFAULT-VALUE}; 12h, 7d, 2w...). "
                    + "0 needs --force.")
    String keep;
    @Option(names = "--force", description = "Allow --keep 0: drop every recording that is neither pinned nor live.")
    boolean force;
    @Option(names = "--max-size", paramLabel = "BYTES", description = "Then drop oldest recordings while kept images exceed this (10G, 512M...).")
    String maxSize;
    @Option(names = "--dry-run", description = "Decide and report; change nothing.")
    boolean dryRun;
    @Option(names = "--json", description = "Print the report as one JSON object.")
    boolean json;
    @Option(names = "--published", paramLabel = "DIR", description = "Collect this publish tree instead of the "
            + "archive: remove objects no recording published within --keep names.")
    java.nio.file.Path published;
    @Option(names = "--grace", paramLabel = "DURATION", description = "With --published: never remove what is "
            + "younger than this (default 1d, at least 1h; covers clock skew between publishing hosts).")
    String grace;
    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal).")
    Boolean progress;

    @Override
    public Integer call() {
        if (published != null) {
            return collectTree();
        }
        if (grace != null) {
            throw new ptfence.cli.BadInputException("--grace applies to --published only");
        }
        GcPolicy policy = new GcPolicy(Units.duration(keep), maxSize == null ? 0 : Units.size(maxSize), dryRun, 500);
        if (policy.keep().isZero() && !force && !dryRun) {
            throw new BadInputException("--keep " + keep + ": drops every recording that is neither pinned nor live, "
                    + "at once; add --force if that is what you want (or try --dry-run)");
        }
        PrintWriter out = out();
        GcReport r;
        if (dryRun) {
            // a dry run only reads, but decides by the same pages as a real run: checked as deeply
            Archive.inspect(archive.resolve(parent), true);
        }
        try (Archive a = dryRun ? openArchiveReadOnly() : openArchive();
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

    private int collectTree() {
        if (maxSize != null) {
            throw new ptfence.cli.BadInputException("--max-size applies to the archive, not to --published");
        }
        java.time.Duration g = grace == null ? TreeGc.DEFAULT_GRACE : Units.duration(grace);
        if (g.compareTo(TreeGc.MIN_GRACE) < 0) {
            throw new ptfence.cli.BadInputException("--grace " + grace + ": at least " + TreeGc.MIN_GRACE.toMinutes()
                    + "m (it covers clock skew between publishing hosts and network file systems' caches)");
        }
        TreeGc.Report r;
        try (Progress p = Progress.start(spec.commandLine().getErr(), "gc", Progress.wanted(progress));
                PublishTree tree = PublishTree.open(published)) {
            r = TreeGc.run(tree, Units.duration(keep), g, dryRun, p);
            p.done();
        }
        PrintWriter out = out();
        for (String u : r.unreadable()) {
            spec.commandLine().getErr().println("ptarchive: gc: kept unreadable manifest " + u);
        }
        if (json) {
            out.println(new Json().field("dry_run", r.dryRun()).field("manifests_kept", r.manifestsKept())
                    .field("manifests_removed", r.manifestsRemoved()).field("objects_kept", r.objectsKept())
                    .field("objects_removed", r.objectsRemoved()).field("bytes_freed", r.bytesFreed())
                    .field("spared", r.spared()).field("temps_removed", r.tempsRemoved())
                    .field("unreadable_manifests", r.unreadable().size()));
        } else {
            String would = r.dryRun() ? "would " : "";
            out.printf("gc: %sremove %d object(s) (%s), %d manifest(s), %d temporary file(s) from %s%n", would,
                    r.objectsRemoved(), Units.bytes(r.bytesFreed()), r.manifestsRemoved(), r.tempsRemoved(),
                    published.toAbsolutePath().normalize());
            out.printf("gc: kept %d object(s), %d manifest(s)%s%n", r.objectsKept(), r.manifestsKept(),
                    r.spared() > 0 ? "; spared " + r.spared() + " published while gc ran" : "");
        }
        out.flush();
        return 0;
    }
}

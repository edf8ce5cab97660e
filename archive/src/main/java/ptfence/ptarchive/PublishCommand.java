package ptfence.ptarchive;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.format.DateTimeParseException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import ptfence.cli.BadInputException;
import ptfence.cli.Json;
import ptfence.cli.Progress;
import ptfence.publish.PublishTree;
import ptfence.publish.Publisher;
import ptfence.store.Archive;

@Command(name = "publish", mixinStandardHelpOptions = true, usageHelpWidth = 120, description = {
        "Write every archived image into DIR as a small ELF object whose build id is the image's content key "
                + "(DIR/buildid/KEY/executable), and a manifest per recording (DIR/recordings/), for 'debuginfod -F DIR' "
                + "to serve: a recording made here then decodes on any machine with DEBUGINFOD_URLS pointing there.",
        "Idempotent and content-addressed: any number of hosts may publish into one tree at once; an image already "
                + "there is not written again. Only reads the archive. docs/fleet.md says how to deploy it."},
        footer = {"", "Examples:",
                "  ptarchive publish /srv/ptfence                       everything",
                "  ptarchive publish /srv/ptfence --since 2h             recordings active in the last two hours",
                "  ptarchive publish /srv/ptfence --recording REC",
                "  debuginfod -F /srv/ptfence                            serve it (port 8002)",
                "",
                "From cron on each host (crontab -e), with gc on the server:",
                "  7 * * * * /usr/local/bin/ptarchive publish /srv/ptfence --since 2h",
                "  37 3 * * * /usr/local/bin/ptarchive gc --published /srv/ptfence --keep 30d", ""})
final class PublishCommand extends ArchiveSubcommand implements Callable<Integer> {
    @Parameters(paramLabel = "DIR", description = "The publish tree (created if absent).")
    Path dir;
    @Option(names = "--since", paramLabel = "WHEN", description = "Only recordings active since then (a duration "
            + "back from now: 2h, 7d; or a date or time: 2026-11-20, 2026-11-20T10:00:00Z); running ones always.")
    String since;
    @Option(names = "--recording", paramLabel = "ID", description = "Only this recording.")
    String recording;
    @Option(names = "--no-sync", description = "Do not force each object to disk before it appears (faster; still "
            + "safe against kills, not against power loss).")
    boolean noSync;
    @Option(names = "--json", description = "Print the report as one JSON object.")
    boolean json;
    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal).")
    Boolean progress;

    @Override
    public Integer call() {
        if (since != null && recording != null) {
            throw new BadInputException("give --since or --recording, not both");
        }
        Publisher.Selection selection = recording != null ? new Publisher.Selection(Long.MIN_VALUE, recording)
                : since != null ? new Publisher.Selection(sinceMillis(since), null) : Publisher.Selection.all();
        if (dir.toString().isEmpty()) {
            // Path.of("") is the current directory: a script's unset variable must not publish into it
            throw new BadInputException("publish: DIR is an empty path (give the publish tree's directory; '.' for "
                    + "this one)");
        }
        Publisher.Report r;
        try (Archive a = openArchiveReadOnly();
                Progress p = Progress.start(spec.commandLine().getErr(), "publish", Progress.wanted(progress));
                PublishTree tree = PublishTree.create(dir, !noSync)) {
            r = Publisher.publish(a, tree, selection, hostname(), p);
            p.done();
        }
        PrintWriter out = out();
        if (json) {
            out.println(new Json().field("tree", dir.toAbsolutePath().normalize().toString())
                    .field("recordings", r.recordings()).field("images", r.images()).field("written", r.written())
                    .field("present", r.present()).field("bytes_written", r.bytes()).field("vanished", r.vanished()));
        } else {
            out.printf("published %d recording(s), %d image(s): %d written (%s), %d already there%s -> %s%n",
                    r.recordings(), r.images(), r.written(), Units.bytes(r.bytes()), r.present(),
                    r.vanished() > 0 ? ", " + r.vanished() + " removed from the archive meanwhile" : "",
                    dir.toAbsolutePath().normalize());
        }
        out.flush();
        return 0;
    }

    /** A duration back from now, a date (its midnight, local time) or an instant. */
    static long sinceMillis(String s) {
        try {
            return Instant.parse(s).toEpochMilli();
        } catch (DateTimeParseException e) {
            // not an instant
        }
        try {
            return LocalDate.parse(s).atStartOfDay(ZoneId.systemDefault()).toInstant().toEpochMilli();
        } catch (DateTimeParseException e) {
            // not a date
        }
        try {
            return System.currentTimeMillis() - Units.duration(s).toMillis();
        } catch (BadInputException e) {
            throw new BadInputException("--since " + s + ": neither a duration (2h, 7d) nor a date (2026-11-20) nor "
                    + "a time (2026-11-20T10:00:00Z)");
        }
    }

    static String hostname() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
        } catch (IOException e) {
            return "unknown";
        }
    }
}

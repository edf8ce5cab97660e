package ptfence.ptarchive;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import ptfence.cli.Progress;
import ptfence.bundle.BundleSummary;
import ptfence.bundle.BundleWriter;
import ptfence.store.Archive;

@Command(name = "export", mixinStandardHelpOptions = true, description = "Write one bundle file holding a recording and every region and image it needs, "
        + "so it decodes on another machine ('ptarchive import' there).",
        footer = {"", "Examples:", "  ptarchive export 2026-11-22T11:00-ptrec -o trace.ptfb",
                "  scp trace.ptfb perf.data other:  &&  ssh other ptarchive import trace.ptfb --perf-data perf.data", ""})
final class ExportCommand extends ArchiveSubcommand implements Callable<Integer> {
    @Parameters(paramLabel = "RECORDING", description = "Recording id (see 'ptarchive ls --recordings').")
    String recording;
    @Option(names = {"-o", "--output"}, paramLabel = "BUNDLE", required = true, description = "Bundle file to write.")
    Path output;

    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal).")
    Boolean progress;

    @Override
    public Integer call() {
        try (Archive a = openArchiveReadOnly();
                Progress p = Progress.start(spec.commandLine().getErr(), "export", Progress.wanted(progress))) {
            BundleSummary s = BundleWriter.export(a, recording, output, p);
            p.done();
            out().printf("exported %s: %d regions, %d images (%s) -> %s%n", s.recordingId(),
                    s.regions(), s.images(), Units.bytes(s.imageBytes()), output);
        }
        out().flush();
        return 0;
    }
}

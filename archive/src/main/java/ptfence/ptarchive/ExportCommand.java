package ptfence.ptarchive;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;
import ptfence.bundle.BundleSummary;
import ptfence.bundle.BundleWriter;
import ptfence.store.Archive;

@Command(name = "export", mixinStandardHelpOptions = true, description = "Write one bundle file holding a recording and every region and image it needs, "
        + "so it decodes on another machine ('ptarchive import' there).",
        footer = {"", "Examples:", "  ptarchive export 2026-11-22T11:00-ptrec -o trace.ptfb",
                "  scp trace.ptfb perf.data other:  &&  ssh other ptarchive import trace.ptfb --perf-data perf.data", ""})
final class ExportCommand implements Callable<Integer> {
    @Mixin
    ArchiveOption archive;
    @picocli.CommandLine.ParentCommand
    PtarchiveCommand parent;
    @Spec
    CommandSpec spec;
    @Parameters(paramLabel = "RECORDING", description = "Recording id (see 'ptarchive ls --recordings').")
    String recording;
    @Option(names = {"-o", "--output"}, paramLabel = "BUNDLE", required = true, description = "Bundle file to write.")
    Path output;

    @Override
    public Integer call() {
        try (Archive a = archive.open(parent)) {
            BundleSummary s = BundleWriter.export(a, recording, output);
            spec.commandLine().getOut().printf("exported %s: %d regions, %d images (%s) -> %s%n", s.recordingId(),
                    s.regions(), s.images(), Units.bytes(s.imageBytes()), output);
        }
        spec.commandLine().getOut().flush();
        return 0;
    }
}

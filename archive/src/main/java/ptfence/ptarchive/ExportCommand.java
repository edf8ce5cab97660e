package ptfence.ptarchive;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import ptfence.cli.Progress;
import ptfence.bundle.BundleFile;
import ptfence.bundle.BundleSummary;
import ptfence.bundle.BundleWriter;
import ptfence.bundle.MappedFiles;
import ptfence.cli.BadInputException;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.store.Archive;

@Command(name = "export", mixinStandardHelpOptions = true, description = "Write one bundle file holding a recording and every region and image it needs, "
        + "so it decodes on another machine ('ptarchive import' there).",
        footer = {"", "Examples:", "  ptarchive export 2026-11-22T11:00-ptrec -o trace.ptfb",
                "  scp trace.ptfb perf.data other:  &&  ssh other ptarchive import trace.ptfb --perf-data perf.data",
                "  ptarchive export ID -o all.ptfb --perf-data --binaries   # the bundle alone decodes elsewhere",
                "  ssh other ptarchive import all.ptfb --files ./rec  &&  ptdecode rec/perf.data", ""})
final class ExportCommand extends ArchiveSubcommand implements Callable<Integer> {
    @Parameters(paramLabel = "RECORDING", description = "Recording id (see 'ptarchive ls --recordings').")
    String recording;
    @Option(names = {"-o", "--output"}, paramLabel = "BUNDLE", required = true, description = "Bundle file to write.")
    Path output;

    @Option(names = "--perf-data", description = "Carry the recording's perf.data too (the file it was registered "
            + "with).")
    boolean perfData;

    @Option(names = "--binaries", description = "Carry the user-space files the recording maps, found by path and "
            + "build id (or in perf's build-id cache), as 'perf archive' does.")
    boolean binaries;

    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal).")
    Boolean progress;

    @Override
    public Integer call() {
        try (Archive a = openArchiveReadOnly();
                Progress p = Progress.start(spec.commandLine().getErr(), "export", Progress.wanted(progress))) {
            BundleSummary s = BundleWriter.export(a, recording, output, p, files(a));
            p.done();
            out().printf("exported %s: %d regions, %d images (%s)%s -> %s%n", s.recordingId(),
                    s.regions(), s.images(), Units.bytes(s.imageBytes()), s.files().isEmpty() ? ""
                            : ", " + s.files().size() + " files", output);
            for (String m : s.missing()) {
                spec.commandLine().getErr().println("ptarchive: export: " + m + ": not on this machine (by path or "
                        + "build id); not carried");
            }
        }
        out().flush();
        return 0;
    }

    /** The files to carry: the perf.data and what it maps, as asked. */
    private List<BundleFile> files(Archive a) {
        if (!perfData && !binaries) {
            return List.of();
        }
        Recording rec = a.read(s -> Recordings.get(s, recording)).orElseThrow(() -> new BadInputException(
                "archive " + a.directory() + ": no recording '" + recording + "' (see 'ptarchive ls')"));
        Path data = rec.perfDataPath().isEmpty() ? null : Path.of(rec.perfDataPath());
        if (data == null || !Files.isRegularFile(data)) {
            throw new BadInputException("recording " + recording + ": its perf.data "
                    + (data == null ? "is not known" : data + " is not there") + " (--perf-data, --binaries need it)");
        }
        List<BundleFile> out = new ArrayList<>();
        if (perfData) {
            out.add(new BundleFile(BundleFile.PERF_DATA, data.toString(), null, data));
        }
        if (binaries) {
            MappedFiles mapped = MappedFiles.find().orElseThrow(() -> new BadInputException(
                    "--binaries: no perf.data reader on the class path (run bin/ptarchive, which has the decoder)"));
            out.addAll(mapped.of(data));
        }
        return out;
    }
}

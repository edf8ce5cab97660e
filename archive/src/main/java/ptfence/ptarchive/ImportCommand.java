package ptfence.ptarchive;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import ptfence.cli.Progress;
import ptfence.bundle.BundleReader;
import ptfence.bundle.BundleFile;
import ptfence.bundle.BundleSummary;
import ptfence.store.Archive;

@Command(name = "import", mixinStandardHelpOptions = true, description = "Import a bundle written by 'ptarchive export'. The whole bundle is verified "
        + "first (a cut-short or altered bundle imports nothing); importing twice is harmless.",
        footer = {"", "The imported recording's creation time is the import time (gc --keep ages it from there).",
                "Give --perf-data (an existing file) so gc also drops it once that file is deleted (never within "
                        + "an hour of the import).", "",
                "Examples:", "  ptarchive import trace.ptfb", "  ptarchive import trace.ptfb --perf-data ./perf.data", ""})
final class ImportCommand extends ArchiveSubcommand implements Callable<Integer> {
    @Parameters(paramLabel = "BUNDLE", description = "Bundle file.")
    Path bundle;
    @Option(names = "--perf-data", paramLabel = "FILE", description = "Where the recording's perf.data is on this machine.")
    Path perfData;

    @Option(names = "--files", paramLabel = "DIR", description = "Write the files the bundle carries (perf.data, "
            + "binaries; 'ptarchive export --perf-data --binaries') into DIR, side by side, where a decode of that "
            + "perf.data finds the binaries.")
    Path files;

    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal).")
    Boolean progress;

    @Override
    public Integer call() {
        // checked before the archive is opened (and maybe created): a wrong argument changes nothing
        // (Path.of("") is the current directory: a script's unset variable must not name it)
        if (bundle.toString().isEmpty()) {
            throw new ptfence.cli.BadInputException("import: BUNDLE is an empty path (give the bundle file)");
        }
        if (files != null && files.toString().isEmpty()) {
            throw new ptfence.cli.BadInputException("import: --files is an empty path (give a directory; '.' for "
                    + "this one)");
        }
        if (perfData != null && perfData.toString().isEmpty()) {
            throw new ptfence.cli.BadInputException("import: --perf-data is an empty path (give the recording's "
                    + "perf.data, or leave --perf-data out)");
        }
        if (!java.nio.file.Files.exists(bundle)) {
            throw new ptfence.cli.BadInputException(bundle + ": no such file");
        }
        if (!java.nio.file.Files.isRegularFile(bundle)) {
            throw new ptfence.cli.BadInputException(bundle + ": not a regular file (" + (java.nio.file.Files
                    .isDirectory(bundle) ? "a directory" : "a pipe or device") + "); import reads a bundle twice, "
                    + "checking it whole before it imports anything: copy it to a file first");
        }
        if (perfData != null && !java.nio.file.Files.isRegularFile(perfData)) {
            // gc would otherwise drop the recording as "perf.data gone" at its first run
            throw new ptfence.cli.BadInputException("--perf-data " + perfData + ": " + (java.nio.file.Files
                    .exists(perfData) ? "not a regular file" : "no such file") + " (give the recording's perf.data "
                    + "as it is on this machine, or leave --perf-data out)");
        }
        try (Archive a = createArchive();
                Progress p = Progress.start(spec.commandLine().getErr(), "import", Progress.wanted(progress))) {
            BundleSummary s = BundleReader.importInto(a, bundle,
                    perfData == null ? "" : perfData.toAbsolutePath().toString(), p, files);
            p.done();
            out().printf("imported %s: %d regions (%d new), %d images (%d new, %s)%n",
                    s.recordingId(), s.regions(), s.newRegions(), s.images(), s.newImages(), Units.bytes(s.imageBytes()));
            for (BundleFile f : s.files()) {
                out().printf(files == null ? "  carries %s (not written: give --files DIR)%n" : "  wrote %s%n",
                        files == null ? f.recordedPath() : f.local());
            }
        }
        out().flush();
        return 0;
    }
}

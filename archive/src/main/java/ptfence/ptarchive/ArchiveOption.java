package ptfence.ptarchive;

import java.nio.file.Path;
import picocli.CommandLine.Option;
import ptfence.store.Archive;
import ptfence.store.ArchiveLocation;

/** The {@code --archive DIR} option every subcommand shares. */
public final class ArchiveOption {
    @Option(names = "--archive", paramLabel = "DIR",
            description = "Archive directory (default: $PTFENCE_ARCHIVE, else /var/lib/ptfence/archive for root, "
                    + "else ~/.local/share/ptfence/archive).")
    Path directory;

    /** Opens the chosen archive: this command's --archive, else the one given before the subcommand. */
    public Archive open(PtarchiveCommand parent) {
        Path chosen = directory != null ? directory : parent == null ? null : parent.archive;
        return Archive.open(ArchiveLocation.resolve(chosen));
    }
}

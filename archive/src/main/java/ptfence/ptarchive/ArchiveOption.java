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

    /** Opens the chosen archive for writing, creating it if there is none (import). */
    public Archive create(PtarchiveCommand parent) {
        return Archive.open(resolve(parent));
    }

    /** Opens the chosen existing archive for writing (gc, pin, unpin): a path holding none is an error. */
    public Archive open(PtarchiveCommand parent) {
        return Archive.openExisting(resolve(parent));
    }

    /** Opens the chosen archive for reading only: a path holding no archive is an error, never a new archive. */
    public Archive openReadOnly(PtarchiveCommand parent) {
        return Archive.openReadOnly(resolve(parent));
    }

    /** This command's --archive, else the one given before the subcommand, else the default location. */
    public Path resolve(PtarchiveCommand parent) {
        Path chosen = directory != null ? directory : parent == null ? null : parent.archive;
        return ArchiveLocation.resolve(chosen);
    }
}

package ptfence.ptarchive;

import java.io.PrintWriter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;
import ptfence.store.Archive;

/** What every ptarchive subcommand has: the --archive option (here or on ptarchive itself) and its output. */
abstract class ArchiveSubcommand {
    @Mixin
    ArchiveOption archive;
    @ParentCommand
    PtarchiveCommand parent;
    @Spec
    CommandSpec spec;

    /** For import, which fills an archive: creates it if there is none. */
    Archive createArchive() {
        return archive.create(parent);
    }

    /** For the commands that change an existing archive (gc, pin, unpin): never creates one. */
    Archive openArchive() {
        return archive.open(parent);
    }

    /** For the commands that only read: never creates an archive, works on a read-only one. */
    Archive openArchiveReadOnly() {
        return archive.openReadOnly(parent);
    }

    PrintWriter out() {
        return spec != null ? spec.commandLine().getOut() : quickOut;
    }

    /** Where a line taken without picocli ({@link QuickLs}) prints: what picocli's getOut() is in a launcher's run. */
    PrintWriter quickOut;
}

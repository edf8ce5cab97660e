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

    /** For the commands that write (import, gc, pin, unpin): creates the archive if there is none. */
    Archive openArchive() {
        return archive.open(parent);
    }

    /** For the commands that only read: never creates an archive, works on a read-only one. */
    Archive openArchiveReadOnly() {
        return archive.openReadOnly(parent);
    }

    PrintWriter out() {
        return spec.commandLine().getOut();
    }
}

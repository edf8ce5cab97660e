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

    Archive openArchive() {
        return archive.open(parent);
    }

    PrintWriter out() {
        return spec.commandLine().getOut();
    }
}

package ptfence.ptarchive;

import picocli.CommandLine.Command;
import java.util.List;
import ptfence.cli.LazySubcommands;
import ptfence.cli.Tool;

@Command(name = "ptarchive", mixinStandardHelpOptions = true, version = "ptarchive " + ptfence.cli.Version.NUMBER,
        description = "The content-addressed archive of text images that ptrec fills and ptdecode reads.",
        footer = {"", "Examples:",
                "  ptarchive ls --recordings",
                "  ptarchive show bpf_prog_6deef7357e7b4530_sys_enter --disasm",
                "  ptarchive stats",
                "  ptarchive verify",
                "  ptarchive export REC -o rec.ptfb && ptarchive --archive /tmp/a import rec.ptfb",
                "  ptarchive gc --keep 7d --dry-run",
                "  ptarchive publish /srv/ptfence --since 2h      (for debuginfod -F /srv/ptfence; docs/fleet.md)",
                "", "The archive is --archive DIR, else $PTFENCE_ARCHIVE, else /var/lib/ptfence/archive (root) or",
                "~/.local/share/ptfence/archive. Format and commands: docs/archive.md.", ""})
public final class PtarchiveCommand implements Runnable, LazySubcommands, ptfence.cli.QuickLine {
    /** The subcommand a line taken without picocli runs ({@link QuickLs}). */
    private java.util.concurrent.Callable<Integer> taken;

    @Override
    public boolean takeQuickly(String... args) {
        taken = QuickLs.take(this, args);
        return taken != null;
    }

    @Override
    public java.util.concurrent.Callable<?> taken() {
        return taken;
    }

    @Override
    public List<Subcommand> subcommands() {
        return List.of(
                new Subcommand(LsCommand.class, LsCommand::new),
                new Subcommand(ShowCommand.class, ShowCommand::new),
                new Subcommand(StatsCommand.class, StatsCommand::new),
                new Subcommand(VerifyCommand.class, VerifyCommand::new),
                new Subcommand(ExportCommand.class, ExportCommand::new),
                new Subcommand(ImportCommand.class, ImportCommand::new),
                new Subcommand(PublishCommand.class, PublishCommand::new),
                new Subcommand(GcCommand.class, GcCommand::new),
                new Subcommand(PinCommand.class, PinCommand::new),
                new Subcommand(UnpinCommand.class, UnpinCommand::new),
                new Subcommand(picocli.CommandLine.HelpCommand.class, picocli.CommandLine.HelpCommand::new));
    }

    @picocli.CommandLine.Option(names = "--archive", paramLabel = "DIR",
            description = "Archive directory, for every subcommand (default: $PTFENCE_ARCHIVE, else "
                    + "/var/lib/ptfence/archive for root, else ~/.local/share/ptfence/archive).")
    java.nio.file.Path archive;

    @Override
    public void run() {
        Tool.fullModel(this).usage(System.out);
    }

    public static void main(String[] args) {
        Tool.fewNativeCalls();
        Tool.main("ptarchive", new PtarchiveCommand(), args);
    }
}

package ptfence.ptarchive;

import picocli.CommandLine.Command;
import ptfence.cli.Tool;

@Command(name = "ptarchive", mixinStandardHelpOptions = true, version = "ptarchive 0.1.0",
        description = "The content-addressed archive of text images that ptrec fills and ptdecode reads.",
        subcommands = {})
public final class PtarchiveCommand implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        Tool.main("ptarchive", new PtarchiveCommand(), args);
    }
}

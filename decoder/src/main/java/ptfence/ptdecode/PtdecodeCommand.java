package ptfence.ptdecode;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import ptfence.cli.Tool;

@Command(name = "ptdecode", mixinStandardHelpOptions = true, version = "ptdecode 0.1.0",
        description = "Decode Intel PT traces: packets, control flow, and recordings made by ptrec or perf.",
        subcommands = {PacketsCommand.class, FlowCommand.class},
        footer = {"", "Examples:",
                "  ptdecode perf.data             # a recording's PT packets, per AUX buffer",
                "  ptdecode packets trace.pt      # a raw trace, as libipt's ptdump prints it",
                "  ptdecode packets --help        # every option of a command"})
public final class PtdecodeCommand implements Callable<Integer> {
    @Parameters(index = "0", arity = "0..1", paramLabel = "RECORDING",
            description = "A perf.data recording: prints its packets (as 'ptdecode packets RECORDING' does).")
    String recording;

    /** Where the recording's dump goes (tests replace it). */
    java.io.OutputStream stdout = new java.io.FileOutputStream(java.io.FileDescriptor.out);

    @Override
    public Integer call() {
        if (recording == null) {
            new picocli.CommandLine(this).usage(System.out);
            return Tool.EXIT_OK;
        }
        // Until the flow decoder takes over the top level, a recording prints its packets.
        PacketsCommand packets = new PacketsCommand();
        packets.trace = recording;
        packets.stdout = stdout;
        return packets.call();
    }

    public static void main(String[] args) {
        Tool.main("ptdecode", new PtdecodeCommand(), args);
    }
}

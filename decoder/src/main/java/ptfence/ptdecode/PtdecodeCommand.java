package ptfence.ptdecode;

import picocli.CommandLine.Command;
import ptfence.cli.Tool;

@Command(name = "ptdecode", mixinStandardHelpOptions = true, version = "ptdecode 0.1.0",
        description = "Decode Intel PT traces: packets, control flow, and recordings made by ptrec or perf.",
        subcommands = {PacketsCommand.class, FlowCommand.class})
public final class PtdecodeCommand implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        Tool.main("ptdecode", new PtdecodeCommand(), args);
    }
}

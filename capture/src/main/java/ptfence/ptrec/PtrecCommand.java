package ptfence.ptrec;

import picocli.CommandLine.Command;
import ptfence.cli.Tool;

@Command(name = "ptrec", mixinStandardHelpOptions = true, version = "ptrec 0.1.0",
        description = "Record Intel PT with sideband; the text fence archives every dynamic kernel text region.")
public final class PtrecCommand implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        Tool.main("ptrec", new PtrecCommand(), args);
    }
}

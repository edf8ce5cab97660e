package ptfence.ptarchive;

import java.io.PrintWriter;
import java.io.StringWriter;
import ptfence.cli.Tool;

/**
 * The child JVM of {@link KillLoopTest}: says START, runs one ptarchive command (its arguments) as the launcher
 * would, then says DONE and its exit status, so the parent knows whether its SIGKILL landed while the command ran.
 */
public final class KillChild {
    private KillChild() {}

    public static void main(String[] args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        System.out.println("START");
        System.out.flush();
        int exit = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err), args);
        System.out.println("DONE " + exit + " " + err.toString().strip().replace('\n', ' '));
        System.out.flush();
        System.exit(exit);
    }
}

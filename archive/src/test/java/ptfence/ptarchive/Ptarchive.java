package ptfence.ptarchive;

import java.io.PrintWriter;
import java.io.StringWriter;
import ptfence.cli.Tool;

/** Test helper: runs {@code ptarchive ARGS} in this JVM as the launcher would, capturing its output and exit status. */
final class Ptarchive {
    private Ptarchive() {}

    record Result(int exit, String out, String err) {}

    static Result run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err), args);
        return new Result(exit, out.toString(), err.toString());
    }
}

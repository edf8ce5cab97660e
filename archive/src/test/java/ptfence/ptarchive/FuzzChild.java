package ptfence.ptarchive;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import ptfence.cli.BadInputException;
import ptfence.cli.Tool;
import ptfence.store.Archive;

/**
 * The child JVM of {@link ArchiveFuzzTest}: runs many ptarchive commands, one per stdin line (tab-separated
 * arguments), and prints one result line each: "R exit stderr-lines first-stderr-line". Starting a JVM per
 * command would take minutes; if LMDB crashes this JVM, the parent sees it die mid-command and starts another.
 * {@code verify} runs as the real command does, minus the process boundary: the page check, then the LMDB part
 * in this same process, so a crash the page check let through kills this JVM and is counted.
 */
public final class FuzzChild {
    private FuzzChild() {}

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] a = line.split("\t");
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int exit;
            List<String> cmd = new ArrayList<>(Arrays.asList(a));
            boolean verify = cmd.contains("verify");
            exit = -1;
            if (verify) {
                cmd.add("--in-process");
                try {
                    Archive.inspect(Path.of(cmd.get(cmd.indexOf("--archive") + 1)), true);
                } catch (BadInputException e) {
                    err.write("ptarchive: " + e.getMessage() + "\n");
                    exit = Tool.EXIT_BAD_INPUT;
                }
            }
            if (exit < 0) {
                exit = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                        cmd.toArray(new String[0]));
            }
            String e = err.toString();
            String first = e.lines().findFirst().orElse("").replace('\t', ' ');
            System.out.println("R\t" + exit + "\t" + e.lines().count() + "\t" + first);
            System.out.flush();
        }
    }
}

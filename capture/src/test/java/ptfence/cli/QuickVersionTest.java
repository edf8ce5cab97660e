package ptfence.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import ptfence.ptarchive.PtarchiveCommand;
import ptfence.ptdecode.PtdecodeCommand;
import ptfence.ptrec.PtrecCommand;

/**
 * The launchers answer {@code --version} without picocli (start-up): what they print must be what picocli prints
 * from each command's {@code @Command(version)}, and every other command line must still go to picocli.
 */
class QuickVersionTest {
    @Test
    void quickVersionIsWhatPicocliPrints() {
        check("ptdecode", PtdecodeCommand::new);
        check("ptarchive", PtarchiveCommand::new);
        check("ptrec", PtrecCommand::new);
    }

    private static void check(String name, Supplier<Object> command) {
        for (String flag : new String[] {"--version", "-V"}) {
            StringWriter out = new StringWriter();
            int status = Tool.run(name, command.get(), new PrintWriter(out, true), new PrintWriter(new StringWriter()),
                    flag);
            assertEquals(Tool.EXIT_OK, status, name + " " + flag);
            assertEquals(out.toString().strip(), Tool.quickVersion(name, flag), name + " " + flag);
        }
    }

    /** What the release launcher runs for a lone --version (ptfence.cli.Version on the archive jar alone). */
    @Test
    void versionMainPrintsTheSame() {
        for (String name : new String[] {"ptdecode", "ptarchive", "ptrec"}) {
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            java.io.PrintStream was = System.out;
            System.setOut(new java.io.PrintStream(bytes, true));
            try {
                Version.main(new String[] {name});
            } finally {
                System.setOut(was);
            }
            assertEquals(Tool.quickVersion(name, "--version") + System.lineSeparator(), bytes.toString(), name);
        }
    }

    @Test
    void otherCommandLinesGoToPicocli() {
        assertNull(Tool.quickVersion("ptdecode"));
        assertNull(Tool.quickVersion("ptdecode", "--help"));
        assertNull(Tool.quickVersion("ptdecode", "--version", "x.perf"));
        assertNull(Tool.quickVersion("ptdecode", "flow", "--version"));
        assertNull(Tool.quickVersion("ptarchive", "--versions"));
    }
}

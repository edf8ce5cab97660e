package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Tool;

/** The command line: bad input is one line on stderr and exit code 2, never a stack trace. */
class FlowCommandTest {
    private record Result(int code, String err) {}

    private static Result run(String... args) {
        PrintStream old = System.err;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            int code = Tool.run("ptdecode", new PtdecodeCommand(), args);
            return new Result(code, buf.toString(StandardCharsets.UTF_8));
        } finally {
            System.setErr(old);
        }
    }

    @Test
    void missingTraceOptionIsAUsageError() {
        Result r = run("flow", "--raw", "x.bin:0x1000");
        assertEquals(Tool.EXIT_BAD_INPUT, r.code());
        assertTrue(r.err().contains("--pt"), r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
    }

    @Test
    void missingFilesAreBadInput(@TempDir Path dir) {
        Result r = run("flow", "--pt", dir.resolve("nope.pt").toString());
        assertEquals(Tool.EXIT_BAD_INPUT, r.code(), r.err());
        assertTrue(r.err().contains("nope.pt"), r.err());
    }

    @Test
    void badRawSpecAndFormatAreBadInput(@TempDir Path dir) throws Exception {
        Path pt = Files.write(dir.resolve("t.pt"), new byte[16]);
        Result raw = run("flow", "--raw", "code.bin", "--pt", pt.toString());
        assertEquals(Tool.EXIT_BAD_INPUT, raw.code(), raw.err());
        assertTrue(raw.err().contains("--raw"), raw.err());
        Result fmt = run("flow", "--format", "xml", "--pt", pt.toString());
        assertEquals(Tool.EXIT_BAD_INPUT, fmt.code(), fmt.err());
        assertTrue(fmt.err().contains("--format"), fmt.err());
        Result opt = run("flow", "--bogus", "--pt", pt.toString());
        assertEquals(Tool.EXIT_BAD_INPUT, opt.code(), opt.err());
        assertEquals(1, opt.err().strip().lines().count(), opt.err());
    }

    @Test
    void helpHasExamples() {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            assertEquals(0, Tool.run("ptdecode", new PtdecodeCommand(), "flow", "--help"));
        } finally {
            System.setOut(old);
        }
        String help = buf.toString(StandardCharsets.UTF_8);
        assertTrue(help.contains("Examples:") && help.contains("--block-decoder") && help.contains("--format"), help);
    }
}

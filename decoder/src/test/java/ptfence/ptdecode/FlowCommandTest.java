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
    void anOutputThatCannotBeWrittenIsBadInput(@TempDir Path dir) throws Exception {
        Path pt = Files.write(dir.resolve("t.pt"), new byte[16]);
        Result r = run("flow", "--pt", pt.toString(), "-o", dir.toString());
        assertEquals(Tool.EXIT_BAD_INPUT, r.code(), r.err());
        assertTrue(r.err().contains(dir.toString()), r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
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

    /**
     * --time in every format gives each instruction the same time: ptxed's column (the last event's TSC
     * estimate), the text format's column and jsonl's "tsc", on a corpus trace whose tick events move the time.
     */
    @Test
    void timeIsTheSameInEveryFormat(@TempDir Path tmp) throws Exception {
        Path dir = Path.of(System.getProperty("ptfence.data", "../fixtures/data"), "corpus/libipt/ptxed-tick");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(dir), "missing " + dir);
        String[] common = {"flow", "--block-decoder", "--raw", dir.resolve("ptxed-tick.bin") + ":0x100000",
                "--nom-freq", "4", "--event:tick", "--pt", dir.resolve("ptxed-tick.pt").toString(), "--time"};
        java.util.List<String> ptxed = timedInstructions(tmp, common, "ptxed",
                java.util.regex.Pattern.compile("^([0-9a-f]{16})  ([0-9a-f]{16})$"), false);
        java.util.List<String> text = timedInstructions(tmp, common, "text",
                java.util.regex.Pattern.compile("^([0-9a-f]{16})  ([0-9a-f]{16})  \\S.*$"), false);
        java.util.List<String> jsonl = timedInstructions(tmp, common, "jsonl",
                java.util.regex.Pattern.compile("^\\{\"type\":\"insn\",\"ip\":\"0x([0-9a-f]+)\".*\"tsc\":(\\d+)\\}$"),
                true);
        assertTrue(ptxed.size() > 2 && ptxed.stream().map(l -> l.split(" ")[0]).distinct().count() > 1,
                "instructions at several times: " + ptxed);
        assertEquals(ptxed, text);
        assertEquals(ptxed, jsonl);
    }

    /** "time ip" per instruction line, both as plain hex numbers. */
    private static java.util.List<String> timedInstructions(Path tmp, String[] common, String format,
            java.util.regex.Pattern line, boolean jsonl) throws java.io.IOException {
        Path file = tmp.resolve("out." + format);
        java.io.StringWriter err = new java.io.StringWriter();
        String[] args = java.util.Arrays.copyOf(common, common.length + 4);
        args[common.length] = "--format";
        args[common.length + 1] = format;
        args[common.length + 2] = "-o";
        args[common.length + 3] = file.toString();
        assertEquals(0, Tool.run("ptdecode", new PtdecodeCommand(), new java.io.PrintWriter(new java.io.StringWriter()),
                new java.io.PrintWriter(err), args), err.toString());
        java.util.List<String> got = new java.util.ArrayList<>();
        for (String l : Files.readAllLines(file)) {
            java.util.regex.Matcher m = line.matcher(l);
            if (m.matches()) {
                long time = jsonl ? Long.parseLong(m.group(2)) : Long.parseUnsignedLong(m.group(1), 16);
                long ip = Long.parseUnsignedLong(jsonl ? m.group(1) : m.group(2), 16);
                got.add(Long.toHexString(time) + " " + Long.toHexString(ip));
            }
        }
        return got;
    }
}

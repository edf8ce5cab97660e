package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Tool;

/** The command's contract on bad input: what was decodable is printed, one error line, exit code 2. */
class PacketsCommandTest {
    record Result(int code, String out, String err) {}

    static Result run(String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int code = Tool.run("ptdecode", new PtdecodeCommand(), args);
            System.out.flush();
            return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    static Path corpusCase(String name) {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path p = Path.of(shared, "corpus", "libipt", name, name + ".pt");
        org.junit.jupiter.api.Assertions.assertTrue(Files.exists(p), "missing " + p);
        return p;
    }

    @Test
    void truncatedTracePrintsEverythingBeforeTheCutAndFailsWithOneLine(@TempDir Path dir) throws Exception {
        byte[] full = Files.readAllBytes(corpusCase("dump-all-packets"));
        Result whole = run("packets", "--no-sync", corpusCase("dump-all-packets").toString());
        assertEquals(0, whole.code(), whole.err());
        // Cut inside the last packet (the 5-byte TRIG at 0x135).
        Path cut = dir.resolve("cut.pt");
        Files.write(cut, Arrays.copyOf(full, 0x137));
        Result r = run("packets", "--no-sync", cut.toString());
        assertEquals(Tool.EXIT_BAD_INPUT, r.code());
        String[] lines = whole.out().split("\n");
        String expected = String.join("\n", Arrays.copyOf(lines, lines.length - 1)) + "\n";
        assertEquals(expected, r.out());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().contains("0x135"), r.err());
        assertTrue(r.err().contains("truncated"), r.err());
    }

    @Test
    void corruptPacketIsReportedInlineThenDecodingResumes() {
        Result r = run("packets", corpusCase("ptdump-bad_opc-resync").toString());
        assertEquals(Tool.EXIT_BAD_INPUT, r.code());
        assertTrue(r.out().contains("[17: error decoding packet: unknown opcode]"), r.out());
        assertTrue(r.out().contains("000000000000002f  psbend"), r.out());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().contains("0x17"), r.err());
    }

    @Test
    void fileLevelErrorsAreOneLineExitTwo(@TempDir Path dir) throws Exception {
        Result missing = run("packets", dir.resolve("nope.pt").toString());
        assertEquals(Tool.EXIT_BAD_INPUT, missing.code());
        assertEquals(1, missing.err().lines().count(), missing.err());
        assertTrue(missing.err().contains("nope.pt"), missing.err());
        assertFalse(missing.err().contains("Exception"), missing.err());

        Path f = dir.resolve("t.pt");
        Files.write(f, new byte[64]);
        Result badOffset = run("packets", f + ":0x100");
        assertEquals(Tool.EXIT_BAD_INPUT, badOffset.code());
        assertTrue(badOffset.err().contains("bad offset 0x100"), badOffset.err());
        Result badRange = run("packets", f + ":0x10-0x80");
        assertEquals(Tool.EXIT_BAD_INPUT, badRange.code());
        assertTrue(badRange.err().contains("bad range 0x80"), badRange.err());
        Result both = run("packets", "--time", "--tcal", f.toString());
        assertEquals(Tool.EXIT_BAD_INPUT, both.code());
        assertEquals(1, both.err().lines().count(), both.err());
    }

    @Test
    void rangeOffsetsAreRelativeToTheRangeStart() {
        Path p = corpusCase("ptdump-bad_opc-resync");
        Result r = run("packets", p + ":0x18");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().startsWith("0000000000000000  psb\n0000000000000010  fup"), r.out());
    }

    @Test
    void jsonlHasOneObjectPerPacketWithTheResolvedIp() {
        Path p = corpusCase("ptdump-last-ip");
        Result dump = run("packets", p.toString());
        Result json = run("packets", "--format=jsonl", p.toString());
        assertEquals(0, json.code(), json.err());
        assertEquals(dump.out().lines().count(), json.out().lines().count());
        assertTrue(json.out().lines().allMatch(l -> l.startsWith("{\"offset\":") && l.endsWith("}")), json.out());
        // tip.pgd 2: ????????eeeeffff after fup 3: ffffffffddddeeee -> ffffffffeeeeffff (ptdump --lastip agrees).
        assertTrue(json.out().contains("\"type\":\"tip.pgd\",\"ipc\":2,\"payload\":\"0xeeeeffff\",\"ip\":\"0xffffffffeeeeffff\""),
                json.out());
    }
}

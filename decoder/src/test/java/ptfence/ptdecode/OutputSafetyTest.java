package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.JsonReader;
import ptfence.cli.Tool;

/**
 * Issue 12's ptdecode items: an output never overwrites an input nor an existing file when the command fails, every
 * form of the packet listing honours -o and --format, and bad arguments are one line with exit 2 that say what is
 * wrong where. The recording is HASE's real loopy perf.data.
 */
class OutputSafetyTest {
    private static final Path HASE = RecordingPacketsTest.hase("loopy-20180404T162955");
    private static final Path REC = HASE.resolve("loopy-20180404T162955.perf");

    private static Path copy(Path tmp) throws Exception {
        Path rec = tmp.resolve("rec.perf");
        Files.copy(REC, rec);
        return rec;
    }

    private static void oneLine(RecordingFlowTest.Run r, String says) {
        assertEquals(Tool.EXIT_BAD_INPUT, r.exit(), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().contains(says), r.err());
        assertFalse(r.err().contains("\tat "), "no stack trace: " + r.err());
    }

    /** Only the files the test made: no temporary file of an output left behind. */
    private static List<String> names(Path dir) throws Exception {
        try (var s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void anOutputThatIsAnInputIsRefusedBeforeAnythingIsWritten(@TempDir Path tmp) throws Exception {
        Path rec = copy(tmp);
        Path alias = tmp.resolve("alias.perf");
        Files.createLink(alias, rec); // the same inode under another name
        byte[] before = Files.readAllBytes(rec);
        oneLine(RecordingFlowTest.ptdecode("-o", rec.toString(), rec.toString()), "is also an input");
        oneLine(RecordingFlowTest.ptdecode("-o", alias.toString(), rec.toString()), "is also an input");
        oneLine(RecordingFlowTest.ptdecode("--packets", "-o", alias.toString(), rec.toString()), "is also an input");
        Path pt = tmp.resolve("t.pt");
        Files.write(pt, new byte[] {0x02, (byte) 0x82, 0x02, (byte) 0x82});
        oneLine(RecordingFlowTest.ptdecode("packets", "-o", pt.toString(), pt.toString()), "is also an input");
        oneLine(RecordingFlowTest.ptdecode("flow", "-o", pt.toString(), "--pt", pt + ":0-4", "--raw",
                rec + ":0x1000"), "is also an input");
        assertArrayEquals(before, Files.readAllBytes(rec));
        assertEquals(4, Files.size(pt));
        assertEquals(List.of("alias.perf", "rec.perf", "t.pt"), names(tmp));
    }

    @Test
    void aFailedCommandLeavesAnExistingOutputAsItWas(@TempDir Path tmp) throws Exception {
        Path rec = copy(tmp);
        Path k = tmp.resolve("k");
        Files.writeString(k, "kept");
        oneLine(RecordingFlowTest.ptdecode("-o", k.toString(), "--func", "nosuch", rec.toString()), "nosuch");
        oneLine(RecordingFlowTest.ptdecode("flow", "-o", k.toString(), "--pt", tmp.resolve("nonexistent.pt").toString(),
                "--raw", rec + ":0x1000"), "nonexistent.pt");
        assertEquals("kept", Files.readString(k));
        assertEquals(List.of("k", "rec.perf"), names(tmp));
        // and one that succeeds replaces it with exactly what stdout would have shown
        RecordingFlowTest.Run ok = RecordingFlowTest.ptdecode("-o", k.toString(), "--format", "jsonl", rec.toString());
        assertEquals(0, ok.exit(), ok.err());
        assertEquals(RecordingFlowTest.ptdecode("--format", "jsonl", rec.toString()).out(), Files.readString(k));
    }

    @Test
    void theRecordingsPacketsHonourOutputAndFormat(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("p.jsonl");
        RecordingFlowTest.Run r = RecordingFlowTest.ptdecode("--packets", "--format", "jsonl", "-o", out.toString(),
                REC.toString());
        assertEquals(0, r.exit(), r.err());
        assertEquals("", r.out(), "nothing on stdout with -o");
        String file = Files.readString(out);
        Path sub = tmp.resolve("q.jsonl");
        assertEquals(0, RecordingFlowTest.ptdecode("packets", "--format", "jsonl", "-o", sub.toString(),
                REC.toString()).exit());
        assertEquals(Files.readString(sub), file, "as the packets command lists the same recording");
        long packets = file.lines().filter(l -> l.startsWith("{")).map(JsonReader::object)
                .filter(o -> o.containsKey("type")).count();
        assertTrue(packets > 100, file.lines().limit(3).toList().toString());
        oneLine(RecordingFlowTest.ptdecode("--packets", "--format", "folded", REC.toString()), "--format folded");
    }

    @Test
    void badArgumentsSayWhatAndWhere(@TempDir Path tmp) throws Exception {
        oneLine(RecordingFlowTest.ptdecode(tmp.toString()), "is a directory");
        oneLine(RecordingFlowTest.ptdecode("flow", "--pt", tmp.toString(), "--raw", REC + ":0x1000"),
                "is a directory");
        Path empty = tmp.resolve("empty.pt");
        Files.write(empty, new byte[0]);
        oneLine(RecordingFlowTest.ptdecode("packets", empty.toString()), "empty.pt: empty file");
        oneLine(RecordingFlowTest.ptdecode("--threads", "-1", REC.toString()), "--threads -1");
        oneLine(RecordingFlowTest.ptdecode("flow", "--threads", "-1", "--pt", empty.toString(), "--raw",
                REC + ":0x1000"), "--threads -1");
        oneLine(RecordingFlowTest.ptdecode("--time", "5,1", REC.toString()), "the end comes before the start");
        oneLine(RecordingFlowTest.ptdecode("-C", "99", REC.toString()), "(it has CPUs 2)");
        oneLine(RecordingFlowTest.ptdecode("--per-thread", "--format", "perfetto", REC.toString()),
                "--per-thread is an option of the instruction listing");
        oneLine(RecordingFlowTest.ptdecode("--srcline", "--call-trace", REC.toString()),
                "--srcline is an option of the instruction listing");
    }

    /**
     * A recording cut inside an AUXTRACE record's payload, and inside a record header: the message names the offset
     * of the damage (perf report -D shows where the AUXTRACE record starts), not "no Intel PT data".
     */
    @Test
    void aRecordingCutShortNamesTheOffsetOfTheDamage(@TempDir Path tmp) throws Exception {
        byte[] all = Files.readAllBytes(REC);
        long aux = auxtraceOffset();
        for (long cut : new long[] {aux + 8, aux + 48 + 100}) {
            Path part = tmp.resolve("cut-" + cut + ".perf");
            Files.write(part, java.util.Arrays.copyOf(all, (int) cut));
            RecordingFlowTest.Run r = RecordingFlowTest.ptdecode(part.toString());
            oneLine(r, "offset 0x" + Long.toHexString(aux) + ": AUXTRACE");
            assertFalse(r.err().contains("no Intel PT data (no"), r.err());
        }
    }

    /** Where perf 6.1 says the first AUXTRACE record is, read from perf report -D. */
    private static long auxtraceOffset() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/perf")), "no perf");
        Process p = new ProcessBuilder("perf", "report", "-D", "-i", REC.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        p.waitFor();
        for (String l : out.lines().toList()) {
            if (l.contains("PERF_RECORD_AUXTRACE ") && !l.contains("INFO")) {
                return Long.decode(l.trim().split("\\s+")[2]);
            }
        }
        throw new AssertionError("perf shows no AUXTRACE record");
    }

    /**
     * A decoder thread that dies of an Error (a mapped file cut short under it throws InternalError) is reported by
     * the command, not printed by the thread's default handler while the command exits 0.
     */
    @Test
    void anErrorInADecoderThreadReachesTheCommand() throws Exception {
        RecordingDecode rd = new RecordingDecode(new RecordingDecode.Request(REC, null, false, null, null, null, null,
                null, null, "text", false, false, Long.MIN_VALUE, Long.MAX_VALUE, null, 0, false, false),
                new java.io.PrintStream(java.io.OutputStream.nullOutputStream()));
        rd.load();
        InternalError e = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(Duration.ofSeconds(30),
                () -> assertThrows(InternalError.class, () -> rd.<String>decodeMerged((t, producer) -> {
                    throw new InternalError("a fault occurred in an unsafe memory access");
                }, line -> { })));
        assertTrue(e.getMessage().contains("unsafe memory access"));
    }

    // issue 20: 'ptdecode -o loopy loopy.perf' (the ELF loopy beside the recording is read) and '--sysroot=S -o
    // S/.../loopy rec.perf' replaced the ELF with text and exited 0. Every file a decode reads is an input.
    @Test
    void anElfTheDecodeReadsIsAnInputWhereverItWasFound(@TempDir Path tmp) throws Exception {
        Path rec = copy(tmp);
        Path beside = tmp.resolve("loopy");
        Files.copy(HASE.resolve("loopy"), beside);
        byte[] elf = Files.readAllBytes(beside);
        oneLine(RecordingFlowTest.ptdecode("-o", beside.toString(), rec.toString()), beside
                + ": is also an input (" + beside + " was read)");
        assertArrayEquals(elf, Files.readAllBytes(beside));
        Files.delete(beside);
        Path sysroot = tmp.resolve("symfs");
        Path inSysroot = sysroot.resolve("home/joerg/git/angr/hase/tests/bin/loopy/loopy");
        Files.createDirectories(inSysroot.getParent());
        Files.copy(HASE.resolve("symfs/home/joerg/git/angr/hase/tests/bin/loopy/loopy"), inSysroot);
        byte[] elf2 = Files.readAllBytes(inSysroot);
        oneLine(RecordingFlowTest.ptdecode("--sysroot", sysroot.toString(), "-o", inSysroot.toString(),
                rec.toString()), "is also an input");
        assertArrayEquals(elf2, Files.readAllBytes(inSysroot));
        assertEquals(List.of("rec.perf", "symfs"), names(tmp));
        assertEquals(List.of("loopy"), names(inSysroot.getParent()), "no temporary file left");
        Path kallsyms = tmp.resolve("kallsyms");
        Files.writeString(kallsyms, "ffffffff81000000 T _stext\n");
        oneLine(RecordingFlowTest.ptdecode("--kallsyms", kallsyms.toString(), "-o", kallsyms.toString(),
                rec.toString()), "is also an input");
        assertEquals("ffffffff81000000 T _stext\n", Files.readString(kallsyms));
    }

    // issue 20: 'ptdecode --strict -o existing q.data' replaced the existing file, then exited 2
    @Test
    void aStrictDecodeWithErrorsLeavesAnExistingOutputAsItWas(@TempDir Path tmp) throws Exception {
        byte[] all = Files.readAllBytes(REC);
        long payload = auxtraceOffset() + 48;
        for (int i = 600; i < 640; i++) {
            all[(int) payload + i] ^= (byte) 0xff; // garbage in the trace: decode errors, records intact
        }
        Path bad = tmp.resolve("bad.perf");
        Files.write(bad, all);
        // the code beside it, so the errors are the damage's, and the lax decode has lines to write
        Files.copy(HASE.resolve("loopy"), tmp.resolve("loopy"));
        Path k = tmp.resolve("k");
        Files.writeString(k, "kept");
        RecordingFlowTest.Run strict = RecordingFlowTest.ptdecode("--strict", "-o", k.toString(), bad.toString());
        assertEquals(Tool.EXIT_BAD_INPUT, strict.exit(), strict.err());
        assertTrue(strict.err().contains("decode error"), strict.err());
        assertEquals("kept", Files.readString(k));
        assertEquals(List.of("bad.perf", "k", "loopy"), names(tmp));
        RecordingFlowTest.Run lax = RecordingFlowTest.ptdecode("-o", k.toString(), bad.toString());
        assertEquals(0, lax.exit(), "as perf, errors are counted and the decode goes on: " + lax.err());
        assertTrue(Files.readString(k).lines().count() > 20, lax.err() + Files.readString(k));
        // packets: a damaged trace's listing does not replace an existing file either
        Path pt = tmp.resolve("t.pt");
        Files.write(pt, new byte[] {0x02, (byte) 0x82, 0x02, (byte) 0x82, 0x02, (byte) 0x82, 0x02, (byte) 0x82,
                0x02, (byte) 0x82, 0x02, (byte) 0x82, 0x02, (byte) 0x82, 0x02, (byte) 0x82, 0x02});
        Files.writeString(k, "kept");
        assertEquals(Tool.EXIT_BAD_INPUT, RecordingFlowTest.ptdecode("packets", "-o", k.toString(), pt.toString())
                .exit());
        assertEquals("kept", Files.readString(k));
    }

    // issue 20: --strict on a truncated recording exited 0; the damage is an error
    @Test
    void strictMakesARecordingCutShortAnError(@TempDir Path tmp) throws Exception {
        byte[] all = Files.readAllBytes(REC);
        Path cut = tmp.resolve("cut.perf");
        Files.write(cut, java.util.Arrays.copyOf(all, 30_000)); // records whole, header sections cut
        Files.copy(HASE.resolve("loopy"), tmp.resolve("loopy")); // the code: the trace decodes without an error
        RecordingFlowTest.Run lax = RecordingFlowTest.ptdecode(cut.toString());
        assertEquals(0, lax.exit(), lax.err());
        assertTrue(lax.err().contains("outside the file"), lax.err());
        assertFalse(lax.err().contains("decode error"), "only the damage may fail it: " + lax.err());
        RecordingFlowTest.Run strict = RecordingFlowTest.ptdecode("--strict", cut.toString());
        assertEquals(Tool.EXIT_BAD_INPUT, strict.exit(), strict.err());
        assertEquals(lax.out(), strict.out(), "the same listing; only the status differs");
    }

    // issue 20: a closed standard output was called "disk full?"
    @Test
    void aClosedStandardOutputIsCalledSo() throws Exception {
        List<String> cmd = new java.util.ArrayList<>(ptfence.cli.JavaChild.command(List.of(),
                PtdecodeCommand.class.getName(), List.of(REC.toString())));
        StringBuilder line = new StringBuilder("exec");
        cmd.forEach(a -> line.append(" '").append(a).append("'"));
        Process p = new ProcessBuilder("/bin/sh", "-c", line + " >&-").start();
        p.getOutputStream().close();
        String err = new String(p.getErrorStream().readAllBytes());
        assertEquals(Tool.EXIT_BAD_INPUT, p.waitFor(), err);
        assertEquals("ptdecode: standard output is closed\n", err);
    }

    // issue 20: SIGINT or SIGTERM during 'ptdecode -o F' left a hidden '.F.ptfence-PID.tmp'
    @Test
    void aSignalDuringADecodeLeavesNoTemporaryFile(@TempDir Path tmp) throws Exception {
        Path f = tmp.resolve("F");
        Files.writeString(f, "kept");
        // 'packets -o F -' opens F's temporary file, then reads the trace from a stdin that stays open
        // with SIGINT at its default, as in a terminal (a CI runner's background job inherits it ignored)
        List<String> command = new java.util.ArrayList<>(List.of("env", "--default-signal=INT,TERM"));
        command.addAll(ptfence.cli.JavaChild.command(List.of(), PtdecodeCommand.class.getName(),
                List.of("packets", "-o", f.toString(), "-")));
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try {
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (names(tmp).size() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(2, names(tmp).size(), "the temporary file appeared: " + names(tmp));
            assertEquals(0, new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start().waitFor());
            assertTrue(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS));
        } finally {
            p.destroyForcibly().waitFor();
        }
        assertEquals(List.of("F"), names(tmp));
        assertEquals("kept", Files.readString(f));
    }
}

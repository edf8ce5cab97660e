package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.*;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.bpf.TestPrograms;
import ptfence.cli.Tool;
import ptfence.perfdata.BpfOutput;
import ptfence.perfdata.EventAttr;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;
import ptfence.ptdecode.PtdecodeCommand;
import ptfence.record.CpuList;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

/**
 * ptrec --bpf-output against a program that writes with bpf_perf_event_output(), live, as root: every sample the
 * program's own counter says the kernel took is in the perf.data (each sequence number once), perf 6.1 (the reference
 * reader) shows every one, and ptdecode prints perf script's lines for them, byte for byte; its jsonl flow and
 * Perfetto trace have every one too.
 */
class BpfOutputLiveTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirements() {
        PtrecLiveTest.requirements(); // root, and perf as the reference reader
    }

    /** A perf event array with an entry per possible CPU, the program's counter, and the program. */
    record Writer(BpfFd array, BpfFd counter, BpfFd prog, int mapId) implements AutoCloseable {
        static Writer load(String name) throws Exception {
            Bpf bpf = Bpf.get();
            int cpus = 0;
            for (int c : CpuList.online()) cpus = Math.max(cpus, c + 1);
            BpfFd array = bpf.mapCreate(Bpf.MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, cpus, 0, name + "_out");
            BpfFd counter = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, 1, 0, name + "_n");
            BpfFd prog = bpf.progLoad(TestPrograms.bpfOutput(name, array, counter));
            byte[] info = new byte[88];
            bpf.objGetInfo(array, info, List.of());
            return new Writer(array, counter, prog, ByteBuffer.wrap(info).order(ByteOrder.LITTLE_ENDIAN).getInt(4));
        }

        /** The program's count of samples the kernel took. */
        long written() throws Exception {
            byte[] v = new byte[8];
            assertTrue(Bpf.get().mapLookup(counter, new byte[4], v));
            return ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN).getLong();
        }

        void run(int times) throws Exception {
            Bpf.get().progTestRunData(prog, new byte[64], times);
        }

        @Override
        public void close() {
            prog.close();
            counter.close();
            array.close();
        }
    }

    @Test
    void everySampleTheProgramWroteIsRecordedAndShownAsPerfShowsIt() throws Exception {
        Path data = dir.resolve("out.data"), archive = dir.resolve("archive");
        long written;
        String err;
        try (Writer w = Writer.load("ptf_bpfout")) {
            PtrecLiveTest.Running ptrec = PtrecLiveTest.startPtrec(Map.of(), "--sideband-only", "-a", "-v", "-o",
                    data.toString(), "--archive", archive.toString(), "--bpf-output", Integer.toString(w.mapId()),
                    "--", "sleep", "600");
            // the first sample the kernel takes says ptrec's events are in the map and enabled (however long a loaded
            // machine takes to start ptrec); SIGINT ends the recording (and the command)
            long deadline = System.nanoTime() + 300_000_000_000L;
            while (w.written() == 0) {
                assertTrue(System.nanoTime() < deadline && ptrec.process().isAlive(),
                        "no sample written within 300 s: " + ptrec.log().toString());
                w.run(10);
                Thread.sleep(5);
            }
            for (int i = 0; i < 300; i++) {
                w.run(1 + i % 40);
                Thread.sleep(1);
            }
            PtrecLiveTest.signal(ptrec.process(), "INT");
            err = ptrec.waitForLog(300);
            assertEquals(0, ptrec.process().exitValue(), err);
            written = w.written();
        }
        assertTrue(written > 300, "written: " + written);


        // the recording: each sequence number once
        TreeSet<Long> seqs = new TreeSet<>();
        long samples = 0;
        try (PerfDataFile f = PerfDataFile.open(data)) {
            EventAttr out = f.attrs().stream().map(a -> a.attr()).filter(BpfOutput::isBpfOutput).findFirst()
                    .orElseThrow(() -> new AssertionError("no bpf-output event in the recording"));
            for (PerfRecord r : (Iterable<PerfRecord>) f.stream()::iterator) {
                if (!(r instanceof PerfRecord.Sample s)) continue;
                ByteBuffer raw = BpfOutput.payload(s, out).order(ByteOrder.LITTLE_ENDIAN);
                if (raw.remaining() < 16 || raw.getLong(0) != TestPrograms.BPF_OUTPUT_MAGIC) continue;
                samples++;
                assertTrue(seqs.add(raw.getLong(8)), "sequence number " + raw.getLong(8) + " twice");
            }
        }
        System.out.printf("bpf-output: written %d, recorded %d%n", written, samples);
        assertEquals(written, samples, "samples in the recording vs. the program's count; ptrec said: " + err);
        assertEquals(0L, seqs.first());
        assertEquals(written - 1, (long) seqs.last());
        assertTrue(err.contains("bpf-output: " + written + " samples"), err);

        assertKernelSymbols(data, archive);

        // perf 6.1 and ptdecode: the same lines, -F bpf-output and the default fields
        for (List<String> fields : List.of(List.of("-F", "bpf-output"), List.<String>of(), List.of("--ns"),
                List.of("-F", "comm,tid,cpu,time,event,bpf-output"), List.of("-F", "+bpf-output"),
                List.of("--show-bpf-events"))) {
            List<String> cmd = new ArrayList<>(List.of("perf", "script", "-i", data.toString()));
            cmd.addAll(fields);
            Path perfOut = dir.resolve("perf.txt");
            Process p = new ProcessBuilder(cmd).redirectOutput(perfOut.toFile())
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            assertTrue(p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS) && p.exitValue() == 0, "perf " + cmd);
            // perf writes the payload's Latin-1 bytes raw: compared as bytes
            String perf = Files.readString(perfOut, StandardCharsets.ISO_8859_1);
            String ours = ptdecode(data, null, fields); // the file alone, as perf reads it
            long shown = dumps(ours), perfShown = dumps(perf);
            System.out.printf("bpf-output %s: shown by ptdecode %d, by perf %d%n", fields, shown, perfShown);
            assertEquals(written, perfShown, "samples perf shows with " + fields);
            assertEquals(written, shown, "samples ptdecode shows with " + fields);
            assertSameLines(perf, ours, "perf script " + fields + " vs. ptdecode");
        }

        // ptdecode's own views: the jsonl flow has a record per sample, the Perfetto trace an instant per sample
        // (read back as JSON), each sequence number once
        String jsonl = view(data, List.of("--format", "jsonl"));
        TreeSet<Long> inJsonl = new TreeSet<>();
        for (String l : jsonl.lines().toList()) {
            java.util.Map<String, Object> o = ptfence.cli.JsonReader.object(l);
            if ("bpf-output".equals(o.get("event"))) {
                Long seq = sequence((String) o.get("data"));
                if (seq != null) assertTrue(inJsonl.add(seq), "sequence number " + seq + " twice in jsonl");
            }
        }
        String perfetto = view(data, List.of("--format", "perfetto"));
        TreeSet<Long> inPerfetto = new TreeSet<>();
        for (Object e : (List<?>) ptfence.cli.JsonReader.object(perfetto).get("traceEvents")) {
            java.util.Map<?, ?> ev = (java.util.Map<?, ?>) e;
            if ("i".equals(ev.get("ph"))) {
                Long seq = sequence((String) ((java.util.Map<?, ?>) ev.get("args")).get("data"));
                if (seq != null) assertTrue(inPerfetto.add(seq), "sequence number " + seq + " twice in Perfetto");
            }
        }
        System.out.printf("bpf-output: written %d, in jsonl %d, in Perfetto %d%n", written, inJsonl.size(),
                inPerfetto.size());
        assertEquals(seqs, inJsonl, "sequence numbers in ptdecode --format jsonl");
        assertEquals(seqs, inPerfetto, "sequence numbers in ptdecode --format perfetto");
    }

    /** The program's sequence number in a payload given as hex, or null if the payload is not the program's. */
    private static Long sequence(String hex) {
        if (hex == null || hex.length() < 32) return null;
        byte[] b = java.util.HexFormat.of().parseHex(hex.substring(0, 32));
        ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        return bb.getLong(0) == TestPrograms.BPF_OUTPUT_MAGIC ? bb.getLong(8) : null;
    }

    /** ptdecode's own view of the recording (not perf script's): {@code args} then the file. */
    private static String view(Path data, List<String> args) throws Exception {
        Path out = Files.createTempFile(data.getParent(), "ptdecode", ".out");
        List<String> all = new ArrayList<>(List.of("-o", out.toString()));
        all.addAll(args);
        all.add(data.toString());
        StringWriter err = new StringWriter();
        int rc = Tool.run("ptdecode", new PtdecodeCommand(), new PrintWriter(new StringWriter()), new PrintWriter(err),
                all.toArray(String[]::new));
        assertEquals(0, rc, err.toString());
        return Files.readString(out, StandardCharsets.UTF_8);
    }

    /**
     * With the archive (this boot's kallsyms in it) ptdecode names the kernel function that wrote each sample, where
     * perf 6.1 prints [unknown]: the name /proc/kallsyms gives the address.
     */
    private static void assertKernelSymbols(Path data, Path archive) throws Exception {
        String ours = ptdecode(data, archive, List.of("-F", "ip,sym"));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\s*(\\p{XDigit}+) (\\S+)$",
                java.util.regex.Pattern.MULTILINE).matcher(ours);
        assertTrue(m.find(), ours.lines().limit(3).toList().toString());
        long ip = Long.parseUnsignedLong(m.group(1), 16);
        String best = null;
        long bestAddr = 0;
        for (String l : Files.readAllLines(Path.of("/proc/kallsyms"))) {
            String[] f = l.split("\\s+");
            long a = Long.parseUnsignedLong(f[0], 16);
            if (Long.compareUnsigned(a, ip) <= 0 && Long.compareUnsigned(a, bestAddr) > 0 && "tT".contains(f[1])) {
                best = f[2];
                bestAddr = a;
            }
        }
        assertEquals(best, m.group(2), "the function at " + m.group(1));
    }

    static String ptdecode(Path data, Path archive, List<String> args) throws Exception {
        Path out = Files.createTempFile(data.getParent(), "ptdecode", ".txt");
        List<String> all = new ArrayList<>(List.of("-i", data.toString(), "-o", out.toString()));
        if (archive != null) all.addAll(List.of("--archive", archive.toString()));
        all.addAll(args);
        StringWriter err = new StringWriter();
        int rc = Tool.run("ptdecode", new PtdecodeCommand(), new PrintWriter(new StringWriter()), new PrintWriter(err),
                all.toArray(String[]::new));
        assertEquals(0, rc, err.toString());
        return Files.readString(out, StandardCharsets.ISO_8859_1);
    }

    /** Equal, or the first line that differs and where. */
    static void assertSameLines(String expected, String actual, String what) {
        if (expected.equals(actual)) return;
        List<String> e = expected.lines().toList(), a = actual.lines().toList();
        int i = 0;
        while (i < e.size() && i < a.size() && e.get(i).equals(a.get(i))) i++;
        fail(what + ": line " + (i + 1) + " of " + e.size() + "/" + a.size() + ": expected\n"
                + (i < e.size() ? e.get(i) : "(end)") + "\nbut was\n" + (i < a.size() ? a.get(i) : "(end)"));
    }

    /** The test program's samples among the lines: each dump's first line. */
    private static long dumps(String lines) {
        return lines.lines().filter(l -> l.endsWith("BPF output: 0000: 62 70 74 6f 70 75 74 21  bptoput!")).count();
    }
}

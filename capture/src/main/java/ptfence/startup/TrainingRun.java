package ptfence.startup;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import ptfence.cli.Tool;
import ptfence.perfdata.AuxTrace;
import ptfence.perfdata.PerfDataFile;
import ptfence.ptarchive.PtarchiveCommand;
import ptfence.ptdecode.PtdecodeCommand;
import ptfence.ptrec.PtrecCommand;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

/**
 * The training run the build records the start-up cache from (bin/release; docs/install.md): one JVM that runs
 * what users run, in-process, over the bundled recording (fixtures/data/hase): the recording's flow and its views,
 * {@code --func}, packets, {@code flow} on the raw trace and on an empty one, and the archive commands on a
 * throw-away archive. The JVM records which classes load and link and how the hot methods behave; the cache made
 * from it lets every later process start with them.
 *
 * <p>It lives in the shipped jars because the cache is only valid for the class path it was recorded with. It
 * never touches the machine's archive or a perf_event: ptrec is trained on its option parsing only.
 *
 * <p>Usage: {@code TrainingRun RECORDING BINARY WORKDIR [COMMAND]} (the binary lies next to the recording, where
 * ptdecode finds it). With COMMAND (ptdecode, ptarchive or ptrec) only that command's part runs: bin/release makes
 * one cache per command, since the JVM loads every class of its cache at start (a shared cache made {@code
 * ptarchive ls} load the decoder's classes too). What the commands print goes to standard output as it would for a user (the build sends it to
 * /dev/null); one line per command goes to stderr, and the exit status is non-zero when a command that must succeed
 * did not (a cache trained on error paths would be the wrong cache).
 */
public final class TrainingRun {
    /** Decodes of the recording repeated so that the decoder's hot loops get profiles, not just loaded classes. */
    private static final int DECODE_ROUNDS = 12;
    /** Copies of the raw trace in the long decode. */
    private static final int LONG_DECODE_REPEATS = 4000;

    private final Path recording;
    private final Path binary;
    private final Path work;
    /** The command to train, or null for all three. */
    private final String only;
    private int failures;

    private TrainingRun(Path recording, Path binary, Path work, String only) {
        this.recording = recording;
        this.binary = binary;
        this.work = work;
        this.only = only;
    }

    private boolean trains(String command) {
        return only == null || only.equals(command);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3 && !(args.length == 4 && List.of("ptdecode", "ptarchive", "ptrec").contains(args[3]))) {
            System.err.println("usage: TrainingRun RECORDING BINARY WORKDIR [ptdecode|ptarchive|ptrec]");
            System.exit(2);
        }
        TrainingRun t = new TrainingRun(Path.of(args[0]), Path.of(args[1]), Path.of(args[2]),
                args.length == 4 ? args[3] : null);
        if (t.only != null && !t.only.equals("ptrec")) {
            // as their main()s do: jnr-ffi's reflective binding, so that its classes are the ones cached
            Tool.fewNativeCalls();
        }
        t.run();
        System.exit(t.failures == 0 ? 0 : 1);
    }

    private void run() throws IOException {
        Files.createDirectories(work);
        String rec = recording.toString();
        Path archive = work.resolve("archive");
        Path archive2 = work.resolve("archive2");
        String recId = fillArchive(archive);
        if (trains("ptdecode")) {
            ptdecodeTraining(rec, archive);
        }
        if (trains("ptarchive")) {
            ptarchiveTraining(archive, archive2, recId);
        }
        if (trains("ptrec")) {
            run("ptrec", new PtrecCommand(), true, "--help");
            run("ptrec", new PtrecCommand(), true, "--version");
        }
    }

    private void ptdecodeTraining(String rec, Path archive) throws IOException {
        // the lines taken without picocli, as the launcher runs them (what they print goes to stdout)
        for (int i = 0; i < DECODE_ROUNDS; i++) {
            quick("ptdecode", new PtdecodeCommand(), rec);
            quick("ptdecode", new PtdecodeCommand(), "--itrace=i0ns", "-F", "ip,sym", rec);
        }
        for (int i = 0; i < DECODE_ROUNDS; i++) {
            ptdecode(true, rec);
        }
        ptdecode(true, "--format", "jsonl", rec);
        ptdecode(true, "--srcline", "--per-thread", rec);
        ptdecode(true, "--call-trace", rec);
        ptdecode(true, "--call-ret-trace", rec);
        ptdecode(true, "--branches", rec);
        ptdecode(true, "--branches", "--format", "jsonl", rec);
        ptdecode(true, "--format", "perfetto", rec);
        ptdecode(true, "--format", "folded", rec);
        ptdecode(true, "--archive", archive.toString(), "--threads", "1", rec);
        for (String view : List.of("", "--summary", "--format=jsonl", "--format=perfetto")) {
            List<String> a = new ArrayList<>(List.of("--func", "again"));
            if (!view.isEmpty()) {
                a.add(view);
            }
            a.add(rec);
            ptdecode(true, a.toArray(String[]::new));
        }
        ptdecode(true, "--packets", rec);
        ptdecode(true, "--packets", "--format", "jsonl", rec);

        Path raw = work.resolve("loopy.pt");
        AuxTrace aux = AuxTrace.extract(PerfDataFile.open(recording));
        Files.write(raw, aux.concatenated(aux.buffers().get(0).idx()));
        Path empty = work.resolve("empty.pt");
        Files.write(empty, new byte[0]);
        ptdecode(true, "packets", raw.toString());
        ptdecode(true, "packets", "--format", "jsonl", raw.toString());
        ptdecode(true, "packets", "--time", "--lastip", raw.toString());
        for (int i = 0; i < DECODE_ROUNDS; i++) {
            ptdecode(true, "flow", "--elf", binary.toString(), "--pt", raw.toString());
        }
        // One long decode (the trace 4000 times over: 5.6 MB, 4000 PSB segments, 228,000 instructions), on one
        // thread and on the default threads: the packet and flow loops run long enough for C2 to compile them in
        // the training run, so the cache keeps their full method profiles and a big decode's C2 starts from them
        // instead of profiling anew (issue 30: the JIT warm-up on a big decode's critical path).
        Path longTrace = work.resolve("loopy-x4000.pt");
        byte[] once = Files.readAllBytes(raw);
        try (OutputStream o = Files.newOutputStream(longTrace)) {
            for (int i = 0; i < LONG_DECODE_REPEATS; i++) {
                o.write(once);
            }
        }
        ptdecode(true, "flow", "--quiet", "--stat", "--threads", "1", "--elf", binary.toString(), "--pt",
                longTrace.toString());
        ptdecode(true, "flow", "--quiet", "--stat", "--elf", binary.toString(), "--pt", longTrace.toString());
        ptdecode(true, "flow", "--format", "text", "--elf", binary.toString(), "--pt", raw.toString());
        ptdecode(true, "flow", "--block-decoder", "--elf", binary.toString(), "--pt", raw.toString());
        ptdecode(true, "flow", "--quiet", "--stat", "--threads", "1", "--elf", binary.toString(), "--pt",
                raw.toString());
        ptdecode(true, "flow", "--edges", "--elf", binary.toString(), "--pt", raw.toString());
        ptdecode(true, "flow", "--pt", empty.toString());
        ptdecode(true, "--help");
        ptdecode(true, "flow", "--help");
        ptdecode(true, "--version");
        ptdecode(false, "--no-such-option");
        ptdecode(false, work.resolve("missing.perf").toString());
    }

    private void ptarchiveTraining(Path archive, Path archive2, String recId) {
        String a = "--archive=" + archive;
        for (int i = 0; i < 3; i++) {
            quick("ptarchive", new PtarchiveCommand(), a, "ls");
            quick("ptarchive", new PtarchiveCommand(), a, "ls", "--json");
        }
        ptarchive(true, a, "ls");
        ptarchive(true, a, "ls", "--json");
        ptarchive(true, a, "ls", "--recordings");
        ptarchive(true, a, "show", "loopy");
        ptarchive(true, a, "show", "loopy", "--disasm");
        ptarchive(true, a, "stats");
        ptarchive(true, a, "verify", "--in-process");
        Path bundle = work.resolve("rec.ptfb");
        ptarchive(true, a, "export", recId, "-o", bundle.toString());
        ptarchive(true, "--archive=" + archive2, "import", bundle.toString());
        ptarchive(true, a, "pin", recId);
        ptarchive(true, a, "unpin", recId);
        ptarchive(true, a, "gc", "--dry-run");
        ptarchive(true, a, "gc", "--json", "--keep", "3650d");
        ptarchive(true, "ls", "--help");
        ptarchive(true, "--help");
        ptarchive(false, a, "show", "no_such_region");
    }

    /** A line the command takes without picocli (ptfence.cli.QuickLine), run as Tool.main runs it. */
    private void quick(String name, ptfence.cli.QuickLine command, String... args) {
        long t0 = System.nanoTime();
        boolean taken = command.takeQuickly(args);
        int status = taken ? Tool.runTaken(name, command.taken()) : -1;
        boolean ok = status == Tool.EXIT_OK;
        if (!ok) {
            failures++;
        }
        System.err.printf("%s %s %s (quick): %s, %d ms%n", ok ? "ok  " : "FAIL", name, String.join(" ", args),
                taken ? "exit " + status : "not taken", (System.nanoTime() - t0) / 1_000_000);
    }

    /** One image, one region and one recording (the bundled one), so that every archive command has work. */
    private String fillArchive(Path dir) throws IOException {
        byte[] text = Files.readAllBytes(binary);
        String id = "training-loopy";
        try (Archive arch = Archive.open(dir)) {
            arch.write(b -> {
                ContentKey key = b.put(text);
                Region r = new Region("training-boot", 0x400000, text.length, 0, Region.OPEN, RegionKind.MODULE,
                        "loopy", key, null);
                long regionId = RegionIndex.add(b, r);
                Recordings.register(b, Recording.started(id, recording.toAbsolutePath().toString(),
                        "training-boot", 0).finishedAt(1));
                Recordings.link(b, id, regionId);
                return null;
            });
        }
        return id;
    }

    private void ptdecode(boolean mustSucceed, String... args) {
        run("ptdecode", new PtdecodeCommand(), mustSucceed, args);
    }

    private void ptarchive(boolean mustSucceed, String... args) {
        run("ptarchive", new PtarchiveCommand(), mustSucceed, args);
    }

    private void run(String name, Object command, boolean mustSucceed, String... args) {
        StringWriter err = new StringWriter();
        long t0 = System.nanoTime();
        int status = Tool.run(name, command, new PrintWriter(OutputStream.nullOutputStream(), false,
                StandardCharsets.UTF_8), new PrintWriter(err), args);
        boolean ok = mustSucceed == (status == Tool.EXIT_OK);
        if (!ok) {
            failures++;
        }
        System.err.printf("%s %s %s: exit %d, %d ms%s%n", ok ? "ok  " : "FAIL", name, String.join(" ", args),
                status, (System.nanoTime() - t0) / 1_000_000, ok ? "" : " " + err.toString().strip());
    }
}

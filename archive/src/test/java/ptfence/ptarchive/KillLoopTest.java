package ptfence.ptarchive;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.bundle.BundleFile;
import ptfence.bundle.BundleWriter;
import ptfence.cli.Progress;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.Verifier;

/**
 * {@code ptarchive import}, {@code gc} and {@code publish} SIGKILLed at random moments while they run, 30 times each:
 * the archive is verify-clean after every kill, a killed import leaves no half file in {@code --files DIR} and a
 * killed publish no half object. Each kill is checked to have landed mid-run: the child said it started the command
 * and had not said it finished, and died of the signal (rounds whose command finished first are run again; the
 * count is reported). The delays are drawn over the command's own duration, measured first.
 */
class KillLoopTest {
    static final int ROUNDS = 30;
    static final int MAX_ATTEMPTS = 90;

    @TempDir
    Path tmp;

    /** A child's round: whether the kill landed mid-run, and the child's DONE line if it finished first. */
    record Round(boolean landed, String done, long commandMs) {}

    /**
     * lmdbjava's native library, copied once where the children load it from: left to itself, each child extracts
     * its own copy into /tmp and a killed one never removes it (the release launcher passes its own copy so too).
     */
    private static Path lmdbLibrary;

    static synchronized List<String> lmdbOption() throws IOException {
        if (lmdbLibrary == null) {
            try (var in = KillLoopTest.class.getClassLoader().getResourceAsStream("org/lmdbjava/x86_64-linux-gnu.so")) {
                if (in == null) {
                    return List.of(); // another platform: lmdbjava's own extraction
                }
                Path dir = Files.createTempDirectory("ptfence-killloop-lmdb");
                dir.toFile().deleteOnExit();
                lmdbLibrary = dir.resolve("liblmdb.so");
                Files.copy(in, lmdbLibrary);
                lmdbLibrary.toFile().deleteOnExit();
            }
        }
        return List.of("-Dlmdbjava.native.lib=" + lmdbLibrary);
    }

    static List<String> command(String... args) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = System.getProperty("surefire.test.class.path");
        List<String> cmd = new ArrayList<>(List.of(java, "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED", "-Xshare:auto", "-XX:TieredStopAtLevel=1"));
        cmd.addAll(lmdbOption());
        cmd.addAll(List.of("-cp", cp != null ? cp
                : System.getProperty("java.class.path").replace(':', File.pathSeparatorChar), KillChild.class.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Runs the command in a child; SIGKILLs it {@code delayMs} after it starts the command (never, if negative). */
    static Round run(long delayMs, String... args) throws Exception {
        Process p = new ProcessBuilder(command(args)).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line = out.readLine();
            assertEquals("START", line, "the child did not start");
            long started = System.nanoTime();
            long[] ended = {0};
            CompletableFuture<String> done = CompletableFuture.supplyAsync(() -> {
                try {
                    String l = out.readLine();
                    ended[0] = System.nanoTime();
                    return l == null ? "" : l;
                } catch (IOException e) {
                    return "";
                }
            });
            if (delayMs < 0) {
                String d = done.get(300, TimeUnit.SECONDS);
                long ms = (System.nanoTime() - started) / 1_000_000;
                assertTrue(p.waitFor(60, TimeUnit.SECONDS));
                return new Round(false, d, ms);
            }
            Thread.sleep(delayMs);
            boolean alive = p.isAlive() && !done.isDone();
            // fails (and the round does not count) when the child finished meanwhile
            boolean sent = new ProcessBuilder("kill", "-KILL", Long.toString(p.pid())).start().waitFor() == 0;
            alive &= sent;
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            String d = done.get(60, TimeUnit.SECONDS);
            // a command that finished first says how long it took this time (the machine's load varies)
            return new Round(alive && p.exitValue() == 137 && d.isEmpty(), d,
                    d.isEmpty() ? -1 : (ended[0] - started) / 1_000_000);
        } finally {
            p.destroyForcibly();
        }
    }

    /** The command's duration from START to DONE in a child, run to the end (exit 0). */
    static long calibrate(String... args) throws Exception {
        Round r = run(-1, args);
        assertTrue(r.done().startsWith("DONE 0"), r.done());
        return r.commandMs();
    }

    /** What verify checks, from the pages up: the page check, then every image, region, index entry and link. */
    static void assertVerifyClean(Path archive, String when) {
        Archive.inspect(archive, true);
        List<String> problems = new ArrayList<>();
        try (Archive a = Archive.openReadOnly(archive)) {
            a.read(s -> {
                Verifier.images(s, problems::add);
                RegionIndex.check(s, problems::add);
                Recordings.check(s, problems::add);
                return null;
            });
        }
        assertEquals(List.of(), problems, when);
    }

    /** Adds a recording of {@code n} random images of a few KB to {@code archive}, in one commit. */
    static void record(Path archive, String id, long seed, int n, long createdMillis) {
        Random rnd = new Random(seed);
        try (Archive a = Archive.open(archive)) {
            a.write(b -> {
                Recordings.register(b, new Recording(id, "", "boot-k", 0, 1, createdMillis));
                for (int i = 0; i < n; i++) {
                    byte[] img = new byte[2000 + rnd.nextInt(8000)];
                    rnd.nextBytes(img);
                    Recordings.link(b, id, RegionIndex.add(b, new Region("boot-k", 0xffffffffc0000000L
                            + (seed << 24) + ((long) i << 14), img.length, 0, Region.OPEN, RegionKind.BPF_PROG,
                            String.format("bpf_prog_%016x_k", seed * 10_000 + i), b.put(img), null)));
                }
                return null;
            });
        }
    }

    /** One attempt: runs the command, kills it, checks what it left. */
    interface Attempt {
        Round run(int attempt, long commandMs, Random rnd) throws Exception;
    }

    /** Attempts until {@link #ROUNDS} kills landed mid-run (at most {@link #MAX_ATTEMPTS}); returns the attempts. */
    static int loop(String what, long commandMs, Attempt attempt) throws Exception {
        Random rnd = new Random(Long.getLong("ptfence.seed", System.nanoTime()));
        int landed = 0, attempts = 0;
        List<String> early = new ArrayList<>();
        long ms = commandMs;
        while (landed < ROUNDS && attempts < MAX_ATTEMPTS) {
            Round r = attempt.run(attempts++, ms, rnd);
            if (r.landed()) {
                landed++;
            } else {
                early.add(r.done());
                if (r.commandMs() > 0) {
                    ms = Math.min(ms, r.commandMs()); // it ran faster than measured: draw over its new length
                }
            }
        }
        System.out.printf("%s SIGKILL: kill landed mid-run %d/%d (%d attempts), verify-clean after every one%n",
                what, landed, ROUNDS, attempts);
        assertEquals(ROUNDS, landed, what + ": kills that did not land mid-run: " + early);
        return attempts;
    }

    /** A delay over the command's run, as measured: its first 90 %. */
    static long delay(Random rnd, long total) {
        return rnd.nextInt((int) Math.max(1, total * 9 / 10));
    }

    @Test
    void importKilledMidRunLeavesAVerifyCleanArchiveAndNoHalfFile() throws Exception {
        Path src = tmp.resolve("src");
        int bundles = 8;
        Map<String, byte[]> perfData = new HashMap<>();
        List<Path> files = new ArrayList<>();
        Random rnd = new Random(3);
        for (int i = 0; i < bundles; i++) {
            record(src, "rec-" + i, i + 1, 100, System.currentTimeMillis());
            byte[] data = new byte[512 << 10];
            rnd.nextBytes(data);
            perfData.put("rec-" + i, data);
            Path d = Files.write(tmp.resolve("perf-" + i + ".data"), data);
            Path b = tmp.resolve("b" + i + ".ptfb");
            try (Archive a = Archive.openReadOnly(src)) {
                BundleWriter.export(a, "rec-" + i, b, Progress.NONE,
                        List.of(new BundleFile(BundleFile.PERF_DATA, d.toString(), null, d)));
            }
            files.add(b);
        }
        Path archive = tmp.resolve("archive");
        Archive.open(archive).close(); // made beforehand: a kill before the child made it would leave none to check
        Path dir = tmp.resolve("files");
        long total = calibrate("--archive", tmp.resolve("calibration").toString(), "import", files.get(0).toString(),
                "--files", tmp.resolve("calibration-files").toString());
        Set<String> whole = new HashSet<>();
        perfData.values().forEach(v -> whole.add(java.util.HexFormat.of().formatHex(
                ptfence.store.ContentKey.sha256(v))));
        loop("import", total, (attempt, ms, r) -> {
            Path bundle = files.get(attempt % bundles);
            // a new --files DIR now and then: the carried perf.data is written in some rounds, shared in others
            Round round = run(delay(r, ms), "--archive", archive.toString(), "import", bundle.toString(),
                    "--files", dir.resolve("d" + attempt % 3).toString());
            assertVerifyClean(archive, "after import kill " + attempt);
            try (Stream<Path> s = Files.walk(dir)) {
                for (Path f : s.filter(Files::isRegularFile).toList()) {
                    if (!f.getFileName().toString().startsWith(".")) {
                        assertTrue(whole.contains(java.util.HexFormat.of().formatHex(
                                ptfence.store.ContentKey.sha256(Files.readAllBytes(f)))), "a half file: " + f);
                    }
                }
            } catch (java.nio.file.NoSuchFileException e) {
                // killed before it made the directory
            }
            return round;
        });
        // every bundle imported to the end afterwards: each recording there, whole
        for (Path b : files) {
            assertEquals(0, Ptarchive.run("--archive", archive.toString(), "import", b.toString()).exit());
        }
        assertVerifyClean(archive, "after the imports finished");
        try (Archive a = Archive.openReadOnly(archive)) {
            assertEquals(bundles, a.read(Recordings::all).size());
        }
    }

    @Test
    void gcKilledMidRunLeavesAVerifyCleanArchive() throws Exception {
        Path archive = tmp.resolve("archive");
        record(archive, "keep-me", 1, 200, System.currentTimeMillis());
        record(tmp.resolve("calibration"), "old", 2, 1000, 0);
        long total = calibrate("--archive", tmp.resolve("calibration").toString(), "gc", "--keep", "1d");
        loop("gc", total, (attempt, ms, r) -> {
            record(archive, "old-" + attempt, 100 + attempt, 1000, 0); // a recording gc --keep 1d drops
            Round round = run(delay(r, ms), "--archive", archive.toString(), "gc", "--keep", "1d");
            assertVerifyClean(archive, "after gc kill " + attempt);
            return round;
        });
        try (Archive a = Archive.openReadOnly(archive)) {
            assertEquals(200, a.read(s -> Recordings.regionIds(s, "keep-me")).size(), "the kept recording whole");
        }
        assertEquals(0, Ptarchive.run("--archive", archive.toString(), "gc", "--keep", "1d").exit());
        assertVerifyClean(archive, "after a gc run to the end");
        try (Archive a = Archive.openReadOnly(archive)) {
            assertEquals(List.of("keep-me"), a.read(Recordings::all).stream().map(Recording::id).toList());
        }
    }

    @Test
    void publishKilledMidRunLeavesAVerifyCleanArchiveAndNoHalfObject() throws Exception {
        Path archive = tmp.resolve("archive");
        record(archive, "rec", 1, 300, System.currentTimeMillis());
        Path reference = tmp.resolve("reference");
        long total = calibrate("--archive", archive.toString(), "publish", reference.toString());
        Map<String, byte[]> expected = objects(reference);
        assertEquals(300, expected.size());
        loop("publish", total, (attempt, ms, r) -> {
            Path tree = tmp.resolve("tree" + attempt);
            Round round = run(delay(r, ms), "--archive", archive.toString(), "publish", tree.toString());
            assertVerifyClean(archive, "after publish kill " + attempt);
            if (Files.isDirectory(tree.resolve("buildid"))) {
                for (Map.Entry<String, byte[]> e : objects(tree).entrySet()) {
                    assertArrayEquals(expected.get(e.getKey()), e.getValue(), "a half object: " + e.getKey());
                }
            }
            return round;
        });
        // the last tree, published again to the end: whole
        Path last = tmp.resolve("tree0");
        assertEquals(0, Ptarchive.run("--archive", archive.toString(), "publish", last.toString()).exit());
        Map<String, byte[]> got = objects(last);
        assertEquals(expected.keySet(), got.keySet());
    }

    /** The objects of a publish tree by key. */
    static Map<String, byte[]> objects(Path tree) throws IOException {
        Map<String, byte[]> out = new HashMap<>();
        try (Stream<Path> s = Files.walk(tree.resolve("buildid"))) {
            for (Path f : s.filter(p -> p.getFileName().toString().equals("executable")).toList()) {
                out.put(f.getParent().getFileName().toString(), Files.readAllBytes(f));
            }
        }
        return out;
    }
}

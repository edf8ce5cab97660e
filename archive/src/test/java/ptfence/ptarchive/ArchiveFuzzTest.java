package ptfence.ptarchive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.store.ChildJvm;

/**
 * Damaged archives, made from a real one: data.mdb cut at every page boundary and at offsets inside pages, and
 * with single bits flipped (seeded; half of them in the meta, branch and leaf pages LMDB walks). Each variant
 * goes through ls, verify, stats, show, gc and pin (each writer on its own copy) in a child JVM. Every command must
 * end with exit 0 (nothing printed on stderr) or 2 (one line) — verify may also say 1, listing damaged images — and
 * never crash the JVM or hang (issue 12). Where the page check verify runs finds damage, gc and pin must refuse too
 * and leave data.mdb as it was; where verify finds anything but damaged image bytes, gc must (issue 20: gc freed
 * what kept recordings needed).
 */
class ArchiveFuzzTest {
    static final int FLIPS = 300;
    static final Duration COMMAND_LIMIT = Duration.ofSeconds(30);

    @TempDir
    Path tmp;

    @Test
    void truncationsAndBitFlipsNeverCrashOrHang() throws Exception {
        Path pristine = tmp.resolve("pristine");
        DamagedArchiveTest.populate(pristine, 11);
        byte[] data = Files.readAllBytes(pristine.resolve("data.mdb"));
        int psize = 4096;
        int pages = data.length / psize;

        List<byte[]> variants = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (int p = 0; p < pages; p++) {
            variants.add(Arrays.copyOf(data, p * psize));
            names.add("cut at page " + p);
        }
        Random rnd = new Random(12);
        for (int i = 0; i < 24; i++) {
            int at = rnd.nextInt(data.length);
            variants.add(Arrays.copyOf(data, at));
            names.add("cut at " + at);
        }
        List<Integer> treePages = new ArrayList<>();
        for (int p = 0; p < pages; p++) {
            int flags = (data[p * psize + 10] & 0xff) | (data[p * psize + 11] & 0xff) << 8;
            if ((flags & 0x0b) != 0) { // meta, branch or leaf
                treePages.add(p);
            }
        }
        for (int i = 0; i < FLIPS; i++) {
            byte[] v = data.clone();
            int at = i % 2 == 0 ? treePages.get(rnd.nextInt(treePages.size())) * psize + rnd.nextInt(psize)
                    : rnd.nextInt(data.length);
            int bit = rnd.nextInt(8);
            v[at] ^= (byte) (1 << bit);
            variants.add(v);
            names.add("bit " + bit + " flipped at " + at);
        }

        Map<String, Integer> counts = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        Path cwd = Files.createDirectory(tmp.resolve("cwd"));
        Path crashDir = Files.createDirectory(tmp.resolve("crashes"));
        Child child = null;
        long t0 = System.nanoTime();
        try {
            for (int i = 0; i < variants.size(); i++) {
                Path dir = tmp.resolve("v");
                Path gcCopy = tmp.resolve("v-gc");
                Path pinCopy = tmp.resolve("v-pin");
                reset(dir, variants.get(i));
                reset(gcCopy, variants.get(i));
                reset(pinCopy, variants.get(i));
                String[][] commands = {{"ls"}, {"verify"}, {"stats"}, {"show", "bpf_prog_1122334455660000_p0"},
                        {"gc", "--keep", "0s", "--force"}, {"pin", "rec-1"}};
                int verifyExit = -1;
                String verifySaid = "";
                boolean pagesDamaged;
                try {
                    ptfence.store.LmdbFile.check(dir.resolve("data.mdb"), true);
                    pagesDamaged = false;
                } catch (ptfence.cli.BadInputException e) {
                    pagesDamaged = true;
                }
                for (String[] c : commands) {
                    Path archive = c[0].equals("gc") ? gcCopy : c[0].equals("pin") ? pinCopy : dir;
                    if (child == null) {
                        child = new Child(cwd, crashDir);
                    }
                    String what = names.get(i) + ": " + String.join(" ", c);
                    String[] r = child.run(archive, c);
                    if (r == null) {
                        boolean hung = child.hung;
                        int exit = child.stop();
                        child = null;
                        counts.merge(hung ? "hang" : "crash", 1, Integer::sum);
                        failures.add(what + ": " + (hung ? "hung" : "JVM died, exit " + exit));
                        continue;
                    }
                    int exit = Integer.parseInt(r[1]);
                    long errLines = Long.parseLong(r[2]);
                    counts.merge("exit " + exit, 1, Integer::sum);
                    boolean ok = exit == 0 && errLines == 0 || exit == 2 && errLines == 1
                            || exit == 1 && c[0].equals("verify") && errLines >= 1;
                    if (!ok) {
                        failures.add(what + ": exit " + exit + ", " + errLines + " stderr line(s): " + r[3]);
                    }
                    if (c[0].equals("verify")) {
                        verifyExit = exit;
                        verifySaid = r[3];
                    } else if (c[0].equals("pin") && pagesDamaged || c[0].equals("gc") && (pagesDamaged
                            || verifyExit != 0 && !verifySaid.startsWith("ptarchive verify: image "))) {
                        boolean unchanged = Files.exists(archive.resolve("data.mdb"))
                                && Arrays.equals(variants.get(i), Files.readAllBytes(archive.resolve("data.mdb")));
                        if (exit != 2 || !unchanged) {
                            failures.add(what + ": verify said damaged (" + verifySaid + "), yet exit " + exit
                                    + (unchanged ? "" : " and data.mdb changed"));
                        }
                    }
                }
            }
        } finally {
            if (child != null) {
                child.stop();
            }
        }
        long secs = (System.nanoTime() - t0) / 1_000_000_000L;
        counts.putIfAbsent("crash", 0);
        counts.putIfAbsent("hang", 0);
        System.out.println("archive fuzz: " + variants.size() + " variants of a " + data.length + "-byte data.mdb ("
                + pages + " page cuts, 24 in-page cuts, " + FLIPS + " bit flips), " + variants.size() * 6
                + " commands in " + secs + " s: " + counts);
        assertEquals(List.of(), failures.subList(0, Math.min(20, failures.size())), failures.size() + " failure(s)");
        assertEquals(List.of(), ChildJvm.crashFiles(cwd));
        assertTrue(counts.getOrDefault("exit 2", 0) > pages, "the damage was seen: " + counts);
    }

    private static void reset(Path dir, byte[] data) throws IOException {
        Files.createDirectories(dir);
        Files.deleteIfExists(dir.resolve("lock.mdb"));
        Files.write(dir.resolve("data.mdb"), data);
    }

    /** One FuzzChild JVM; commands go to its stdin, results come back on its stdout. */
    private static final class Child {
        final Process process;
        final Writer in;
        final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        boolean hung;

        Child(Path cwd, Path crashDir) throws IOException {
            List<String> cmd = new ArrayList<>(ChildJvm.command(FuzzChild.class.getName()));
            cmd.add(1, "-XX:ErrorFile=" + crashDir.resolve("hs_err_%p.log"));
            process = new ProcessBuilder(cmd).directory(cwd.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD)
                    .start();
            in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    for (String l; (l = r.readLine()) != null; ) {
                        if (l.startsWith("R\t")) {
                            lines.add(l);
                        }
                    }
                } catch (IOException e) {
                    // the child died
                }
                lines.add("EOF");
            }, "fuzz-child-reader");
            reader.setDaemon(true);
            reader.start();
        }

        /** The result fields, or null if the child died or hung. */
        String[] run(Path archive, String[] command) throws Exception {
            List<String> args = new ArrayList<>(List.of("--archive", archive.toString()));
            args.addAll(List.of(command));
            try {
                in.write(String.join("\t", args) + "\n");
                in.flush();
            } catch (IOException e) {
                return null;
            }
            String line = lines.poll(COMMAND_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
            if (line == null) {
                hung = true;
                return null;
            }
            return line.equals("EOF") ? null : line.split("\t", 4);
        }

        int stop() throws InterruptedException {
            try {
                in.close();
            } catch (IOException e) {
                // already gone
            }
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
            return process.waitFor();
        }
    }
}

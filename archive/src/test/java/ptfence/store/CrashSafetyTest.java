package ptfence.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.gc.GarbageCollector;
import ptfence.gc.GcPolicy;
import ptfence.gc.GcReport;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;

/** SIGKILLs a child JVM mid-burst of puts and mid-gc, many times; the archive must stay whole. */
class CrashSafetyTest {
    private static final int PUT_KILLS = 16;
    private static final int GC_KILLS = 12;

    @TempDir
    Path tmp;

    @Test
    void killedDuringPutsLosesNothingThatWasAcknowledged() throws Exception {
        Path dir = tmp.resolve("puts");
        Random rnd = new Random(11);
        Set<ContentKey> acked = new HashSet<>();
        for (int round = 0; round < PUT_KILLS; round++) {
            Process p = child("puts", dir.toString(), Long.toString(round));
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream()));
            awaitLine(out, "READY", p);
            int target = 5 + rnd.nextInt(300);
            int got = 0;
            String line;
            while (got < target && (line = out.readLine()) != null) {
                if (line.startsWith("ACK ")) {
                    acked.add(ContentKey.parse(line.substring(4)));
                    got++;
                }
            }
            sigkill(p);
            // Lines the child printed before dying are acknowledgements too.
            while ((line = out.readLine()) != null) {
                if (line.startsWith("ACK ")) {
                    acked.add(ContentKey.parse(line.substring(4)));
                }
            }
            assertWhole(dir);
        }
        try (Archive a = Archive.open(dir)) {
            for (ContentKey k : acked) {
                assertTrue(a.read(s -> s.image(k)).isPresent(), "acknowledged image " + k + " lost");
            }
            assertEquals(PUT_KILLS, a.read(Recordings::all).size());
        }
        assertTrue(acked.size() > PUT_KILLS * 5, "children acknowledged " + acked.size() + " puts");
    }

    @Test
    void killedDuringGcLeavesAConsistentArchiveAndTheNextGcFinishes() throws Exception {
        Path dir = tmp.resolve("gc");
        Random rnd = new Random(12);
        List<byte[]> needed = new ArrayList<>();
        try (Archive a = Archive.open(dir)) {
            a.write(b -> {
                Recordings.register(b, Recording.started("keep-me", "", "boot", 0));
                for (int i = 0; i < 300; i++) {
                    byte[] img = new byte[100 + rnd.nextInt(4000)];
                    rnd.nextBytes(img);
                    needed.add(img);
                    long id = RegionIndex.add(b, new Region("boot", 0x1000L * i, img.length, 0, Region.OPEN,
                            RegionKind.BPF_PROG, "keep" + i, b.put(img), null));
                    Recordings.link(b, "keep-me", id);
                }
                return null;
            });
        }
        int killedMidGc = 0;
        for (int round = 0; round < GC_KILLS; round++) {
            addGarbage(dir, rnd, round);
            Process p = child("gc", dir.toString());
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream()));
            awaitLine(out, "GC-START", p);
            Thread.sleep(rnd.nextInt(400));
            sigkill(p);
            if (out.lines().noneMatch("GC-DONE"::equals)) {
                killedMidGc++;
            }
            assertWhole(dir);
            try (Archive a = Archive.open(dir)) {
                for (byte[] img : needed) {
                    assertTrue(a.contains(ContentKey.of(img)), "gc took an image a kept recording needs");
                }
            }
        }
        assertTrue(killedMidGc > 0, "no child was killed before its gc finished");
        try (Archive a = Archive.open(dir)) {
            GarbageCollector.run(a, GcPolicy.defaults());
            GcReport again = GarbageCollector.run(a, GcPolicy.defaults());
            assertEquals(0, again.imagesFreed() + again.regionsFreed(), "idempotent after kills");
            assertEquals(300L, (long) a.read(s -> s.count(Table.IMAGES)), "only what keep-me needs remains");
            assertEquals(300L, (long) a.read(s -> s.count(Table.REGIONS)));
        }
        assertWhole(dir);
    }

    @Test
    void aMapGrownByAnotherProcessIsAdopted() throws Exception {
        Path dir = tmp.resolve("shared");
        try (Archive a = Archive.open(dir)) {
            ContentKey before = a.put(new byte[] {1, 2, 3});
            long mapBefore = a.mapSize();
            Process p = child("fill", dir.toString(), "160");
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream()));
            List<ContentKey> theirs = new ArrayList<>();
            long theirMap = 0;
            String line;
            while ((line = out.readLine()) != null) {
                if (line.startsWith("ACK ")) {
                    theirs.add(ContentKey.parse(line.substring(4)));
                } else if (line.startsWith("MAP ")) {
                    theirMap = Long.parseLong(line.substring(4));
                }
            }
            assertEquals(0, p.waitFor());
            assertTrue(theirMap > mapBefore, "the child grew the map: " + mapBefore + " -> " + theirMap);
            // This process still maps the old size: reads and writes must adopt the new one.
            for (ContentKey k : theirs) {
                assertTrue(a.get(k).isPresent());
            }
            byte[] more = new byte[1 << 20];
            new Random(5).nextBytes(more);
            ContentKey mine = a.put(more);
            assertTrue(a.get(mine).isPresent() && a.get(before).isPresent());
            assertEquals(theirs.size() + 2L, (long) a.read(s -> s.count(Table.IMAGES)));
            assertTrue(a.mapSize() >= theirMap, "adopted the grown map: " + a.mapSize());
        }
        assertWhole(dir);
    }

    /** 1500 unreferenced regions and images, and a dropped recording, for gc to chew on. */
    private static void addGarbage(Path dir, Random rnd, int round) {
        try (Archive a = Archive.open(dir)) {
            a.write(b -> {
                Recordings.register(b, new Recording("old-" + round, "", "boot", 0, 1, 0));
                for (int i = 0; i < 1500; i++) {
                    byte[] img = new byte[100 + rnd.nextInt(2000)];
                    rnd.nextBytes(img);
                    long id = RegionIndex.add(b, new Region("boot", 0x10000000L + 0x1000L * i, img.length,
                            round * 10L, Region.OPEN, RegionKind.BPF_PROG, "junk" + i, b.put(img), null));
                    if (i % 3 == 0) {
                        Recordings.link(b, "old-" + round, id);
                    }
                }
                return null;
            });
        }
    }

    /** verify's checks: every image re-hashes, every region has its image and index entries, every link resolves. */
    static void assertWhole(Path dir) {
        List<String> problems = new ArrayList<>();
        try (Archive a = Archive.open(dir)) {
            a.read(s -> {
                Verifier.images(s, problems::add);
                RegionIndex.check(s, problems::add);
                Recordings.check(s, problems::add);
                return null;
            });
        }
        assertEquals(List.of(), problems);
    }

    /** kill -KILL: no shutdown hooks, no closing of the environment, the child's pipe stays readable. */
    static void sigkill(Process p) throws Exception {
        Process kill = new ProcessBuilder("kill", "-KILL", Long.toString(p.pid())).inheritIO().start();
        assertEquals(0, kill.waitFor());
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(137, p.exitValue(), "child died of SIGKILL");
    }

    private static void awaitLine(BufferedReader out, String expected, Process p) throws IOException {
        String line;
        while ((line = out.readLine()) != null) {
            if (line.equals(expected)) {
                return;
            }
        }
        throw new AssertionError("child exited (" + p.exitValue() + ") before " + expected);
    }

    static Process child(String... args) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
                "-cp", classPath(), CrashChild.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    static String classPath() {
        String cp = System.getProperty("surefire.test.class.path");
        return cp != null ? cp : System.getProperty("java.class.path").replace(':', File.pathSeparatorChar);
    }

}

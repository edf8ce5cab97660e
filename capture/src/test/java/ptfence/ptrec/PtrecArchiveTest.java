package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.*;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Tool;
import ptfence.ptarchive.PtarchiveCommand;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;

/**
 * Issue 20, ptrec against other processes on its archive: a gc with a tiny --keep next to a live capture, another
 * process holding the archive's write transaction, and a SIGKILL. Live (root: system-wide events, BPF loads).
 */
class PtrecArchiveTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirements() {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
                "needs root: perf_event_open system-wide and BPF program loads");
    }

    /**
     * 'ptrec --sideband-only -a -o x.data &' then 'ptarchive gc --keep=1s' two seconds later dropped the running
     * capture's recording in 1 of 4 tries; ptrec still printed "archived 6 regions". Here gc runs at a random moment
     * in each of 4 captures, with programs loaded before and after it: the recording and every program's region stay.
     */
    @Test
    void gcWithATinyKeepNextToALiveCaptureTakesNothingOfIt() throws Exception {
        Path archive = dir.resolve("archive");
        Random rnd = new Random(20);
        for (int round = 0; round < 4; round++) {
            Path data = dir.resolve("x" + round + ".data");
            PtrecLiveTest.Running ptrec = PtrecLiveTest.startPtrec(Map.of(), "--sideband-only", "-a", "-v", "-o",
                    data.toString(), "--archive", archive.toString());
            List<PtrecLiveTest.Loaded> loaded = new ArrayList<>(PtrecLiveTest.loadPrograms("gcr" + round + "a", 2, 50));
            Thread.sleep(500 + rnd.nextInt(2000));
            StringWriter out = new StringWriter(), err = new StringWriter();
            int gc = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                    "--archive", archive.toString(), "gc", "--keep", "1s");
            assertEquals(0, gc, err.toString());
            loaded.addAll(PtrecLiveTest.loadPrograms("gcr" + round + "b", 2, 50));
            Thread.sleep(300);
            PtrecLiveTest.signal(ptrec.process(), "INT");
            String log = ptrec.waitForLog();
            assertEquals(0, ptrec.process().exitValue(), log);
            assertFalse(log.contains("no longer in the archive"), log);
            try (Archive a = Archive.openReadOnly(archive)) {
                Recording rec = a.read(Recordings::all).stream()
                        .filter(r -> r.perfDataPath().equals(data.toAbsolutePath().toString())).findFirst()
                        .orElseThrow(() -> new AssertionError("gc dropped the live capture's recording: " + out));
                Set<Long> linked = Set.copyOf(a.read(s -> Recordings.regionIds(s, rec.id())));
                for (PtrecLiveTest.Loaded l : loaded) {
                    var regions = a.read(s -> RegionIndex.byName(s, l.ksym()));
                    assertFalse(regions.isEmpty(), "round " + round + ": no region for " + l.ksym() + "; gc said " + out);
                    assertTrue(linked.contains(regions.get(0).id()), l.ksym() + " is not reachable from its recording");
                    assertTrue(a.contains(regions.get(0).key()), l.ksym() + "'s image is gone");
                }
            }
            StringWriter vOut = new StringWriter(), vErr = new StringWriter();
            assertEquals(0, Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(vOut),
                    new PrintWriter(vErr), "--archive", archive.toString(), "verify"), vOut + " " + vErr);
        }
    }

    /**
     * Another process holding a write transaction made ptrec wait for ever, deaf to SIGINT and SIGTERM, and its traced
     * command outlived a SIGKILL. Now it waits PTFENCE_LOCK_TIMEOUT, names the holder, exits 2; a signal ends the wait
     * at once; a hold that starts mid-recording ends the recording the same way, its command with it.
     */
    @Test
    void aWriteTransactionHeldByAnotherProcessEndsPtrecInTimeAndItsCommandWithIt() throws Exception {
        Path archive = dir.resolve("archive");
        try (Archive a = Archive.open(archive)) {
            assertTrue(a.read(Recordings::all).isEmpty());
        }
        Process holder = ArchiveWriteHolder.start(archive, 600_000);
        try {
            // 1: held before the start: nothing starts, the command included
            Path started = dir.resolve("started");
            long t0 = System.nanoTime();
            PtrecLiveTest.Running r = PtrecLiveTest.startPtrec(Map.of("PTFENCE_LOCK_TIMEOUT", "2"), "--sideband-only",
                    "-a", "-o", dir.resolve("1.data").toString(), "--archive", archive.toString(), "--", "/bin/sh",
                    "-c", "touch '" + started + "'; sleep 300");
            // from the process's start: a JVM's start on a loaded machine, then the 2 s wait
            assertTrue(r.process().waitFor(120, TimeUnit.SECONDS), "ptrec waits for ever");
            String log = r.waitForLog();
            assertEquals(2, r.process().exitValue(), log);
            assertEquals("ptrec: archive " + archive + ": process " + holder.pid() + " (java) holds the archive's write "
                    + "transaction; gave up after 2.0 s (LMDB would wait for ever; wait longer with "
                    + "PTFENCE_LOCK_TIMEOUT=SECONDS)\n", log);
            System.out.printf("ptrec gave up after %.1f s%n", (System.nanoTime() - t0) / 1e9);
            assertFalse(Files.exists(started), "the command ran");

            // 2: SIGINT or SIGTERM ends the wait at once
            for (String sig : new String[] {"INT", "TERM"}) {
                r = PtrecLiveTest.startPtrec(Map.of("PTFENCE_LOCK_TIMEOUT", "120"), "--sideband-only", "-a", "-o",
                        dir.resolve("2.data").toString(), "--archive", archive.toString(), "--", "/bin/sh", "-c",
                        "touch '" + started + "'; sleep 300");
                awaitMapped(r.process(), archive.resolve("lock.mdb")); // its handlers are in, its archive open
                long s0 = System.nanoTime();
                PtrecLiveTest.signal(r.process(), sig);
                assertTrue(r.process().waitFor(60, TimeUnit.SECONDS), "SIG" + sig + " did not end the wait");
                double secs = (System.nanoTime() - s0) / 1e9;
                System.out.printf("ptrec waiting for the lock ended %.1f s after SIG%s%n", secs, sig);
                assertTrue(secs < 30, secs + " s after SIG" + sig + " (the wait was 120 s)");
                log = r.waitForLog();
                assertEquals(2, r.process().exitValue(), log);
                assertTrue(log.contains("holds the archive's write transaction; stopped waiting for it"), log);
                assertFalse(Files.exists(started), "the command ran");
            }
        } finally {
            holder.destroyForcibly().waitFor();
        }

        // 3: the hold starts while ptrec records: the next write gives up, the recording ends, its command with it
        PtrecLiveTest.Running r = PtrecLiveTest.startPtrec(Map.of("PTFENCE_LOCK_TIMEOUT", "2"), "--sideband-only",
                "-a", "-v", "-o", dir.resolve("3.data").toString(), "--archive", archive.toString(), "--", "sleep",
                "300");
        for (int i = 0; i < 1200 && !r.log().toString().contains("ptrec: recording "); i++) Thread.sleep(50);
        ProcessHandle command = r.process().children().findFirst().orElseThrow();
        holder = ArchiveWriteHolder.start(archive, 600_000);
        try {
            PtrecLiveTest.loadPrograms("lockmid", 2, 50); // regions the fence must write
            PtrecLiveTest.signal(r.process(), "INT");
            assertTrue(r.process().waitFor(120, TimeUnit.SECONDS), "ptrec hangs on the held transaction");
            String log = r.waitForLog();
            assertEquals(2, r.process().exitValue(), log);
            assertTrue(log.contains("process " + holder.pid() + " (java) holds the archive's write transaction"), log);
            assertTrue(command.onExit().get(10, TimeUnit.SECONDS) != null, "the command outlived ptrec");
        } finally {
            command.destroyForcibly();
            holder.destroyForcibly().waitFor();
        }
    }

    /** Waits until {@code p} maps this file (ptrec then has opened its archive, after installing its handlers). */
    static void awaitMapped(Process p, Path file) throws Exception {
        Path maps = Path.of("/proc", Long.toString(p.pid()), "maps");
        for (int i = 0; i < 1200; i++) {
            if (!p.isAlive()) fail("ptrec ended before it opened " + file);
            try {
                if (Files.readString(maps).contains(file.toString())) return;
            } catch (java.io.IOException e) {
                // gone meanwhile: the next turn says so
            }
            Thread.sleep(50);
        }
        fail("ptrec never opened " + file);
    }

    /** A SIGKILLed ptrec left its traced command running. */
    @Test
    void aSigkilledPtrecTakesItsCommandWithIt() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "setpriv (util-linux) sets the "
                + "parent-death signal");
        PtrecLiveTest.Running r = PtrecLiveTest.startPtrec(Map.of(), "--sideband-only", "-a", "-v", "--no-fence",
                "-o", dir.resolve("k.data").toString(), "--", "sleep", "300");
        for (int i = 0; i < 1200 && !r.log().toString().contains("ptrec: recording "); i++) Thread.sleep(50);
        ProcessHandle command = r.process().children().findFirst().orElseThrow();
        try {
            assertTrue(command.info().commandLine().orElse("").contains("sleep 300"), command.info().toString());
            PtrecLiveTest.signal(r.process(), "KILL");
            assertTrue(r.process().waitFor(10, TimeUnit.SECONDS));
            assertNotNull(command.onExit().get(10, TimeUnit.SECONDS), "the command outlived a SIGKILLed ptrec");
        } finally {
            command.destroyForcibly();
        }
    }
}

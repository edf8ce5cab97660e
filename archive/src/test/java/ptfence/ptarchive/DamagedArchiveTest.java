package ptfence.ptarchive;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.BadInputException;
import ptfence.cli.Tool;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.BpfMetadata;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ChildJvm;
import ptfence.store.ContentKey;
import ptfence.store.DataFile;

/** Archives LMDB would crash or hang on: every command ends in one line and exit 2 instead (issue 12). */
class DamagedArchiveTest {
    static final String MAIN = "ptfence.ptarchive.PtarchiveCommand";

    @TempDir
    Path tmp;
    Path dir;
    Path cwd;
    byte[] big;

    /** A real archive of a few hundred KiB: one recording, 60 BPF regions over 40 images (some on overflow pages). */
    static byte[] populate(Path dir, long seed) {
        Random rnd = new Random(seed);
        byte[][] images = new byte[40][];
        for (int i = 0; i < images.length; i++) {
            images[i] = new byte[100 + rnd.nextInt(i % 4 == 0 ? 20_000 : 1500)];
            rnd.nextBytes(images[i]);
        }
        try (Archive a = Archive.open(dir)) {
            a.write(b -> {
                Recordings.register(b, new Recording("rec-1", "", "boot-a", 100, 900, System.currentTimeMillis()));
                List<Long> ids = new ArrayList<>();
                for (int i = 0; i < 60; i++) {
                    byte[] img = images[i % images.length];
                    ContentKey k = b.put(img);
                    String tag = String.format("%016x", 0x1122334455660000L + i);
                    ids.add(RegionIndex.add(b, new Region("boot-a", 0xffffffffc0000000L + 0x10000L * i, img.length,
                            100 + i, i % 3 == 0 ? Region.OPEN : 800 + i, RegionKind.BPF_PROG, "bpf_prog_" + tag + "_p" + i,
                            k, BpfMetadata.of(i + 1, tag, "p" + i, 2))));
                }
                Recordings.linkAll(b, "rec-1", ids);
                return null;
            });
        }
        return images[0];
    }

    @BeforeEach
    void setUp() throws Exception {
        dir = tmp.resolve("archive");
        cwd = Files.createDirectory(tmp.resolve("cwd"));
        big = populate(dir, 7);
    }

    ChildJvm.Result ptarchive(Path archive, Map<String, String> env, String... args) throws Exception {
        String[] all = new String[args.length + 2];
        all[0] = "--archive";
        all[1] = archive.toString();
        System.arraycopy(args, 0, all, 2, args.length);
        return ChildJvm.run(cwd, Duration.ofSeconds(30), env, MAIN, all);
    }

    static void assertOneLineExit2(ChildJvm.Result r, String what) {
        assertFalse(r.timedOut(), what + " hung: " + r);
        assertFalse(r.crashed(), what + " crashed the JVM: " + r);
        assertEquals(2, r.exit(), what + ": " + r);
        assertEquals(1, r.err().lines().count(), what + ": " + r);
    }

    // issue 12: data.mdb cut to 8..135 KiB made LMDB touch pages past the end of its mapping: SIGBUS, exit 134,
    // hs_err file in the cwd, in every command
    @Test
    void truncatedDataMdbIsOneLineExit2NeverSigbus() throws Exception {
        long full = Files.size(dir.resolve("data.mdb"));
        assertTrue(full > 140 * 1024, "archive big enough: " + full);
        for (long cut : new long[] {8 * 1024, 64 * 1024, 135 * 1024}) {
            Path copy = copyArchive(dir, tmp.resolve("cut-" + cut));
            try (FileChannel ch = FileChannel.open(copy.resolve("data.mdb"), StandardOpenOption.WRITE)) {
                ch.truncate(cut);
            }
            for (String[] cmd : new String[][] {{"ls"}, {"verify"}, {"stats"}, {"show", "bpf_prog_1122334455660000_p0"}}) {
                ChildJvm.Result r = ptarchive(copy, Map.of(), cmd);
                String what = cmd[0] + " on data.mdb cut to " + cut;
                assertOneLineExit2(r, what);
                assertTrue(r.err().contains("data.mdb") && r.err().contains(cut + " bytes"), what + ": " + r);
            }
            assertEquals(cut, Files.size(copy.resolve("data.mdb")), "nothing rewrote the damaged file");
        }
        assertEquals(List.of(), ChildJvm.crashFiles(cwd));
    }

    // issue 12: verify walks and validates every page (here an overflow page whose header LMDB never looks at)
    @Test
    void verifyValidatesPagesLmdbDoesNotCheck() throws Exception {
        Path data = dir.resolve("data.mdb");
        byte[] file = Files.readAllBytes(data);
        int at = DataFile.indexOf(file, big);
        assertTrue(at > 0 && at % 4096 == 16, "image at the start of an overflow page: " + at);
        long page = at / 4096;
        file[at - 16 + 10] ^= 0x04; // the overflow page's P_OVERFLOW flag
        Files.write(data, file);
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        assertEquals(0, Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                "--archive", dir.toString(), "ls"), err.toString());
        ChildJvm.Result r = ptarchive(dir, Map.of(), "verify");
        assertOneLineExit2(r, "verify");
        assertTrue(r.err().contains("damaged: page " + page + " (offset " + page * 4096 + ")"), r.toString());
        assertEquals(List.of(), ChildJvm.crashFiles(cwd));
    }

    // issue 12: a POSIX lock held on lock.mdb by another process made verify, ptdecode and ptrec wait for ever
    @Test
    void lockHeldByAnotherProcessEndsInTimeNamingItsPid() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "python3 holds the lock");
        Assumptions.assumeTrue(Files.isReadable(Path.of("/proc/locks")), "/proc/locks names the holder");
        // how long each command takes here and now, without the lock (a loaded machine starts JVMs slowly)
        Map<String, Long> unlocked = new java.util.HashMap<>();
        for (String cmd : new String[] {"verify", "ls", "gc"}) {
            String[] args = cmd.equals("gc") ? new String[] {cmd, "--dry-run"} : new String[] {cmd};
            unlocked.put(cmd, ptarchive(dir, Map.of(), args).millis());
        }
        Process holder = holdLock(dir.resolve("lock.mdb"));
        try {
            for (String cmd : new String[] {"verify", "ls", "gc"}) {
                ChildJvm.Result res = ptarchive(dir, Map.of("PTFENCE_LOCK_TIMEOUT", "2"), cmd);
                assertOneLineExit2(res, cmd + " with lock.mdb locked");
                assertTrue(res.err().contains("locked by process " + holder.pid() + " (python3)"), res.toString());
                // the 2 s it waits, well within the time the same command takes unlocked plus 10 s
                assertTrue(res.millis() < unlocked.get(cmd) + 10_000, cmd + " took " + res.millis() + " ms, "
                        + unlocked.get(cmd) + " ms unlocked");
            }
        } finally {
            holder.destroyForcibly().waitFor();
        }
        StringWriter err = new StringWriter();
        assertEquals(0, Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(new StringWriter()),
                new PrintWriter(err), "--archive", dir.toString(), "ls"), "works once the lock is gone: " + err);
    }

    // issue 20: a write transaction held by another process (here lmdbjava's own, as any LMDB program takes it) made
    // gc, pin and import wait for ever, silently. Readers are never blocked by it.
    @Test
    void aWriteTransactionHeldByAnotherProcessEndsEveryWriterInTimeNamingItsPid() throws Exception {
        Path bundle = tmp.resolve("rec.ptfb");
        assertEquals(0, ptarchive(dir, Map.of(), "export", "rec-1", "-o", bundle.toString()).exit());
        Process holder = ptfence.store.HoldWriteTxn.start(dir, 600_000);
        try {
            for (String[] cmd : new String[][] {{"gc"}, {"pin", "rec-1"}, {"unpin", "rec-1"},
                    {"import", bundle.toString()}}) {
                String what = String.join(" ", cmd) + " while another process holds a write transaction";
                // the holder holds for 10 minutes: a command that ends at all waited a bounded time, and its message
                // says how long (the wall time adds a JVM's start, seconds on a loaded machine)
                List<String> args = new ArrayList<>(List.of("--archive", dir.toString()));
                args.addAll(List.of(cmd));
                ChildJvm.Result r = ChildJvm.run(cwd, Duration.ofSeconds(180), Map.of("PTFENCE_LOCK_TIMEOUT", "2"),
                        MAIN, args.toArray(new String[0]));
                assertOneLineExit2(r, what);
                assertTrue(r.err().contains("process " + holder.pid() + " (java) holds the archive's write "
                        + "transaction; gave up after 2.0 s"), what + ": " + r);
                System.out.println(what + ": exit 2 after " + r.millis() + " ms");
            }
            for (String cmd : new String[] {"ls", "verify"}) {
                ChildJvm.Result r = ptarchive(dir, Map.of("PTFENCE_LOCK_TIMEOUT", "2"), cmd);
                assertEquals(0, r.exit(), cmd + " reads while a writer waits: " + r);
            }
        } finally {
            holder.destroyForcibly().waitFor();
        }
        ChildJvm.Result r = ptarchive(dir, Map.of("PTFENCE_LOCK_TIMEOUT", "2"), "pin", "rec-1");
        assertEquals(0, r.exit(), "pins once the holder is gone (LMDB recovers its mutex): " + r);
        assertEquals(List.of(), ChildJvm.crashFiles(cwd));
    }

    // issue 20: a copy with bits flipped in a key: verify said 2 ("keys out of order"), but gc went on and freed
    // regions and images kept recordings needed. Every command that writes checks the pages first, as verify does.
    @Test
    void writersRefuseAnArchiveVerifyCallsDamagedAndChangeNothing() throws Exception {
        Path bundle = tmp.resolve("rec.ptfb");
        assertEquals(0, ptarchive(dir, Map.of(), "export", "rec-1", "-o", bundle.toString()).exit());
        Path data = dir.resolve("data.mdb");
        byte[] file = Files.readAllBytes(data);
        // the key of region_by_name holding program 32: name, NUL, id; its node header says the key's size
        byte[] name = "bpf_prog_1122334455660020_p32".getBytes();
        int at = -1;
        for (int from = 0; (at = DataFile.indexOf(file, name, from)) >= 0; from = at + 1) {
            int ksize = (file[at - 2] & 0xff) | (file[at - 1] & 0xff) << 8;
            if (ksize == name.length + 1 + 8) {
                break;
            }
        }
        assertTrue(at > 0, "the by-name key is in the file");
        file[at] ^= (byte) 0x80; // 'b' -> 0xe2: the key now sorts after the ones that follow it
        Files.write(data, file);
        ChildJvm.Result v = ptarchive(dir, Map.of(), "verify");
        assertOneLineExit2(v, "verify");
        assertTrue(v.err().contains("out of order"), v.toString());
        for (String[] cmd : new String[][] {{"gc"}, {"gc", "--dry-run"}, {"gc", "--keep", "0", "--force"},
                {"pin", "rec-1"}, {"unpin", "rec-1"}, {"import", bundle.toString()}}) {
            ChildJvm.Result r = ptarchive(dir, Map.of(), cmd);
            assertOneLineExit2(r, String.join(" ", cmd) + " on a damaged archive");
            assertTrue(r.err().contains("out of order"), r.toString());
            assertArrayEquals(file, Files.readAllBytes(data), String.join(" ", cmd) + " changed data.mdb");
        }
        BadInputException e = org.junit.jupiter.api.Assertions.assertThrows(BadInputException.class,
                () -> Archive.open(dir).close());
        assertTrue(e.getMessage().contains("out of order"), "ptrec opens it as every writer does: " + e.getMessage());
        assertArrayEquals(file, Files.readAllBytes(data));
        assertEquals(List.of(), ChildJvm.crashFiles(cwd));
    }

    // issue 12: EROFS was reported as "damaged or not a ptfence archive"; read-only commands must work there
    @Test
    void readOnlyFileSystemServesReadersAndWritersSaySo() throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "needs root to mount a tmpfs");
        Path mnt = Files.createDirectory(tmp.resolve("ro"));
        Assumptions.assumeTrue(sh("mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", mnt.toString()) == 0,
                "mount -t tmpfs failed (no CAP_SYS_ADMIN here)");
        try {
            Path ro = mnt.resolve("archive");
            copyArchive(dir, ro);
            assertEquals(0, sh("mount", "-o", "remount,ro", mnt.toString()));
            for (String[] cmd : new String[][] {{"ls"}, {"ls", "--json"}, {"stats"},
                    {"show", "bpf_prog_1122334455660000_p0", "--bytes"}, {"verify"},
                    {"export", "rec-1", "-o", tmp.resolve("rec.ptfb").toString()}}) {
                StringWriter out = new StringWriter();
                StringWriter err = new StringWriter();
                List<String> args = new ArrayList<>(List.of("--archive", ro.toString()));
                args.addAll(List.of(cmd));
                int exit = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                        args.toArray(new String[0]));
                assertEquals(0, exit, String.join(" ", cmd) + ": " + err);
            }
            assertTrue(Files.size(tmp.resolve("rec.ptfb")) > big.length);
            for (String[] cmd : new String[][] {{"gc"}, {"pin", "rec-1"}, {"import", tmp.resolve("rec.ptfb").toString()}}) {
                StringWriter err = new StringWriter();
                List<String> args = new ArrayList<>(List.of("--archive", ro.toString()));
                args.addAll(List.of(cmd));
                int exit = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(new StringWriter()),
                        new PrintWriter(err), args.toArray(new String[0]));
                assertEquals(2, exit, cmd[0] + ": " + err);
                assertEquals(1, err.toString().lines().count(), err.toString());
                assertTrue(err.toString().contains(ro + ": read-only file system"), err.toString());
                assertFalse(err.toString().contains("damaged"), err.toString());
            }
        } finally {
            sh("umount", mnt.toString());
        }
    }

    // A file shorter than its meta's last page is not damage by itself: LMDB does not write a page freed in the
    // transaction that allocated it. Only a page it would read past the end is (the truncation test above).
    @Test
    void fileShorterThanTheMetaSaysButHoldingEveryReachablePageOpens() throws Exception {
        Path data = dir.resolve("data.mdb");
        byte[] file = Files.readAllBytes(data);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(file).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        int newer = b.getLong(4096 + 144) > b.getLong(144) ? 1 : 0; // txn ids
        long last = b.getLong(newer * 4096 + 136); // last page number
        assertEquals(file.length / 4096 - 1, last, "a fresh archive's file ends at its last page");
        b.putLong(newer * 4096 + 136, last + 3); // three unwritten pages at the end, as if freed while new
        Files.write(data, file);
        for (String[] cmd : new String[][] {{"ls"}, {"stats"}, {"gc", "--keep", "0s", "--force"}, {"ls"}}) {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            List<String> args = new ArrayList<>(List.of("--archive", dir.toString()));
            args.addAll(List.of(cmd));
            assertEquals(0, Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                    args.toArray(new String[0])), String.join(" ", cmd) + ": " + err);
        }
        ChildJvm.Result v = ptarchive(dir, Map.of(), "verify");
        assertEquals(0, v.exit(), v.toString());
    }

    private static void assumeNobodyCanRun() {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "needs root to run as nobody");
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "setpriv runs a command as nobody");
        Assumptions.assumeTrue(Files.isDirectory(classes().getParent().resolve("lib")),
                "target/lib (dependencies readable by nobody)");
    }

    private static Path classes() {
        try {
            return Path.of(PtarchiveCommand.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** ptarchive --archive DIR CMD... run as nobody (setpriv): {exit, stdout, stderr}. */
    private String[] asNobody(String... cmd) throws Exception {
        List<String> line = new ArrayList<>(List.of("/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                "--clear-groups", "--"));
        line.addAll(ptfence.cli.JavaChild.command(List.of("-XX:-UsePerfData"), MAIN, List.of()));
        line.set(line.indexOf("-cp") + 1, classes() + ":" + classes().getParent().resolve("lib") + "/*");
        line.addAll(List.of("--archive", dir.toString()));
        line.addAll(List.of(cmd));
        Process p = new ProcessBuilder(line).directory(cwd.toFile()).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes());
        String err = new String(p.getErrorStream().readAllBytes());
        return new String[] {Integer.toString(p.waitFor()), out, err};
    }

    // issue 12: EACCES was reported as "damaged or not a ptfence archive"; another user's archive they may read
    // (but not lock) must serve the read-only commands, and the writers must say "permission denied"
    @Test
    void anotherUsersReadableArchiveServesReadersAndWritersSayPermissionDenied() throws Exception {
        assumeNobodyCanRun();
        Files.setPosixFilePermissions(tmp, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        for (String f : new String[] {"data.mdb", "lock.mdb"}) {
            Files.setPosixFilePermissions(dir.resolve(f), java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        }
        Files.setPosixFilePermissions(cwd, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
        for (String[] cmd : new String[][] {{"ls"}, {"stats"}, {"show", "bpf_prog_1122334455660000_p0"}, {"verify"},
                {"gc"}, {"pin", "rec-1"}}) {
            String[] r = asNobody(cmd);
            int exit = Integer.parseInt(r[0]);
            String out = r[1];
            String err = r[2];
            if (cmd[0].equals("gc") || cmd[0].equals("pin")) {
                assertEquals(2, exit, cmd[0] + ": " + err);
                assertEquals(1, err.lines().count(), err);
                assertTrue(err.contains(dir + ": permission denied"), err);
                assertFalse(err.contains("damaged"), err);
            } else {
                assertEquals(0, exit, cmd[0] + ": " + out + err);
                assertEquals("", err, cmd[0]);
            }
        }
    }

    // issue 31: an archive directory another user may not enter was "no ptfence archive there (no data.mdb)"; every
    // command says permission denied, with the path and the user, exit 2, one line
    @Test
    void anArchiveThisUserMayNotEnterIsPermissionDeniedNotAbsent() throws Exception {
        assumeNobodyCanRun();
        Files.setPosixFilePermissions(tmp, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
        Files.setPosixFilePermissions(cwd, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
        for (String[] cmd : new String[][] {{"ls"}, {"stats"}, {"verify"}, {"gc"}, {"pin", "rec-1"},
                {"export", "rec-1", "-o", cwd.resolve("b.bundle").toString()},
                {"publish", cwd.resolve("tree").toString()}}) {
            String[] r = asNobody(cmd);
            int exit = Integer.parseInt(r[0]);
            String out = r[1];
            String err = r[2];
            assertEquals(2, exit, cmd[0] + ": " + out + err);
            assertEquals(1, err.lines().count(), cmd[0] + ": " + err);
            assertTrue(err.contains("archive " + dir + ": permission denied (cannot look into " + dir
                    + " as user nobody)"), cmd[0] + ": " + err);
            assertFalse(err.contains("no ptfence archive"), err);
        }
    }

    // issue 12: verify runs the LMDB part in a child JVM; if that child crashes, the command still ends in one line,
    // exit 2, and no hs_err file. The child is made to crash here by a SIGBUS sent while it waits for a lock.
    @Test
    void aCrashedVerifyChildIsOneLineExit2() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "python3 holds the lock");
        Assumptions.assumeTrue(Files.isReadable(Path.of("/proc/locks")), "/proc/locks");
        Process holder = holdLock(dir.resolve("lock.mdb"));
        String before = System.getProperty("ptfence.lockTimeout");
        System.setProperty("ptfence.lockTimeout", "40");
        try {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int[] exit = {-1};
            Thread t = new Thread(() -> exit[0] = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out),
                    new PrintWriter(err), "--archive", dir.toString(), "verify"));
            t.start();
            ProcessHandle child = null;
            for (int i = 0; i < 200 && child == null; i++) {
                Thread.sleep(50);
                child = ProcessHandle.current().descendants().filter(h -> h.info().commandLine().orElse("")
                        .contains("--in-process")).findFirst().orElse(null);
            }
            assertTrue(child != null, "verify started its child");
            Thread.sleep(1000); // the child's JVM is up and waiting for the lock
            assertEquals(0, sh("kill", "-BUS", Long.toString(child.pid())));
            t.join(30_000);
            assertEquals(2, exit[0], out + " / " + err);
            assertEquals(1, err.toString().lines().count(), err.toString());
            assertTrue(err.toString().contains(dir + ": damaged: LMDB crashed ("), err.toString());
            assertEquals("", out.toString());
            assertEquals(List.of(), ChildJvm.crashFiles(Path.of("").toAbsolutePath()));
        } finally {
            if (before == null) {
                System.clearProperty("ptfence.lockTimeout");
            } else {
                System.setProperty("ptfence.lockTimeout", before);
            }
            holder.destroyForcibly().waitFor();
        }
    }


    /** Another process (python3) holding a POSIX write lock on the whole file, as lockf(LOCK_EX) takes it. */
    static Process holdLock(Path file) throws Exception {
        Process holder = new ProcessBuilder("/usr/bin/python3", "-c",
                "import fcntl,sys,time\nf=open(sys.argv[1],'r+')\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint('locked',flush=True)\n"
                        + "time.sleep(120)", file.toString()).redirectErrorStream(true).start();
        assertEquals("locked", new BufferedReader(new InputStreamReader(holder.getInputStream())).readLine());
        return holder;
    }

    static Path copyArchive(Path from, Path to) throws Exception {
        Files.createDirectories(to);
        for (String f : new String[] {"data.mdb", "lock.mdb"}) {
            if (Files.exists(from.resolve(f))) {
                Files.copy(from.resolve(f), to.resolve(f));
            }
        }
        return to;
    }

    static int sh(String... cmd) throws Exception {
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start().waitFor();
    }
}

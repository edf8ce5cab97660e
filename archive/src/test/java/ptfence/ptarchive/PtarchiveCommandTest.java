package ptfence.ptarchive;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.cli.Tool;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.BpfMetadata;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

class PtarchiveCommandTest {
    /** push %rbp; mov %rsp,%rbp; xor %eax,%eax; pop %rbp; ret */
    static final byte[] CODE = {0x55, 0x48, (byte) 0x89, (byte) 0xe5, 0x31, (byte) 0xc0, 0x5d, (byte) 0xc3};

    @TempDir
    Path tmp;
    Path dir;
    Path perfData;
    ContentKey codeKey;
    byte[] big;

    record Result(int exit, String out, String err) {}

    Result run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        String[] all = new String[args.length + 1];
        all[0] = args[0];
        all[1] = "--archive=" + dir;
        System.arraycopy(args, 1, all, 2, args.length - 1);
        if (args[0].equals("--help")) {
            all = args;
        }
        int exit = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err), all);
        return new Result(exit, out.toString(), err.toString());
    }

    @BeforeEach
    void populate() throws Exception {
        dir = tmp.resolve("archive");
        perfData = Files.createFile(tmp.resolve("perf.data"));
        big = new byte[5000];
        new Random(1).nextBytes(big);
        try (Archive a = Archive.open(dir)) {
            codeKey = a.write(b -> {
                // two hours old: past gc's grace period for a perf.data that is gone
                Recordings.register(b, new Recording("rec-1", perfData.toString(), "boot-a", 100, 900,
                        System.currentTimeMillis() - 7_200_000));
                ContentKey k = b.put(CODE);
                long r1 = RegionIndex.add(b, new Region("boot-a", 0xffffffffc0001000L, CODE.length, 100, 500,
                        RegionKind.BPF_PROG, "bpf_prog_1122334455667788_tiny", k,
                        BpfMetadata.of(7, "1122334455667788", "tiny", 2)));
                long r2 = RegionIndex.add(b, new Region("boot-a", 0xffffffffc0001000L, big.length, 500, Region.OPEN,
                        RegionKind.BPF_PROG, "bpf_prog_99aabbccddeeff00_big", b.put(big),
                        BpfMetadata.of(8, "99aabbccddeeff00", "big", 2)));
                long r3 = RegionIndex.add(b, new Region("boot-a", 0xffffffff81000000L, CODE.length, 0, Region.OPEN,
                        RegionKind.TEXT_POKE, "text_poke", k, null));
                Recordings.linkAll(b, "rec-1", List.of(r1, r2, r3));
                return k;
            });
        }
    }

    @Test
    void lsListsAndFilters() {
        Result all = run("ls");
        assertEquals(0, all.exit(), all.err());
        assertTrue(all.out().contains("1 recording(s)") && all.out().contains("rec-1"), all.out());
        assertTrue(all.out().contains("3 region(s)"), all.out());

        Result json = run("ls", "--json", "--kind", "bpf_prog");
        List<String> lines = json.out().lines().toList();
        assertEquals(2, lines.size(), json.out());
        assertTrue(lines.get(0).contains("\"name\":\"bpf_prog_1122334455667788_tiny\""), lines.get(0));
        assertTrue(lines.get(0).contains("\"address\":\"0xffffffffc0001000\""), lines.get(0));
        assertTrue(lines.get(0).contains("\"valid_from\":100") && lines.get(0).contains("\"valid_to\":500"));
        assertTrue(lines.get(0).contains("\"content_key\":\"" + codeKey.hex() + "\""), lines.get(0));
        assertTrue(lines.get(1).contains("\"valid_to\":null"), lines.get(1));
        assertTrue(lines.get(0).contains("\"boot_id\":\"boot-a\"") && lines.get(0).contains("\"kind\":\"bpf_prog\""));

        assertEquals(1, run("ls", "--json", "--tag", "99aa").out().lines().count());
        assertEquals(1, run("ls", "--json", "--name", "text_poke").out().lines().count());
        assertEquals(1, run("ls", "--json", "--address", "0xffffffffc0001004", "--at", "0.000000499").out().lines()
                .filter(l -> l.contains("tiny")).count());
        assertEquals(2, run("ls", "--json", "--address", "0xffffffffc0001004").out().lines().count());
        assertEquals(3, run("ls", "--json", "--recording", "rec-1").out().lines().count());
        assertEquals(0, run("ls", "--json", "--boot", "other").out().lines().count());
        Result bad = run("ls", "--kind", "nonsense");
        assertEquals(2, bad.exit());
        assertEquals(1, bad.err().lines().count(), bad.err());
    }

    @Test
    void showPrintsMetadataHexdumpAndDisassembly() {
        Result r = run("show", "bpf_prog_1122334455667788_tiny", "--bytes");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("bpf prog id 7, tag 1122334455667788"), r.out());
        assertTrue(r.out().contains("ffffffffc0001000  55 48 89 e5 31 c0 5d c3"), r.out());
        Result byKey = run("show", codeKey.hex().substring(0, 10));
        assertTrue(byKey.out().contains("image " + codeKey.hex()) && byKey.out().contains("2 region(s)"), byKey.out());
        Result missing = run("show", "nothing-like-this");
        assertEquals(2, missing.exit());
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/objdump")), "GNU objdump not installed");
        Result dis = run("show", "text_poke", "--disasm");
        assertEquals(0, dis.exit(), dis.err());
        for (String insn : new String[] {"push", "mov", "xor", "pop", "ret"}) {
            assertTrue(dis.out().contains(insn), insn + " in " + dis.out());
        }
        assertTrue(dis.out().contains("ffffffff81000007"), "listed at the region's address: " + dis.out());
    }

    @Test
    void statsCountsAndDedupRatio() {
        Result r = run("stats", "--json");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("\"images\":2"), r.out());
        assertTrue(r.out().contains("\"image_bytes\":" + (CODE.length + big.length)), r.out());
        assertTrue(r.out().contains("\"region_bytes\":" + (2 * CODE.length + big.length)), r.out());
        String ratio = String.format(java.util.Locale.ROOT, "%.3f", (2.0 * CODE.length + big.length) / (CODE.length + big.length));
        assertTrue(r.out().contains("\"dedup_ratio\":" + ratio), r.out());
        assertTrue(run("stats").out().contains("recordings  1"));
    }

    @Test
    void verifyPassesThenFindsAFlippedByteAndNamesTheImage() throws Exception {
        Result ok = run("verify");
        assertEquals(0, ok.exit(), ok.err());
        assertTrue(ok.out().startsWith("ok: 2 images"), ok.out());
        ptfence.store.DataFile.flip(dir, big, 2500, 0x40);
        Result bad = run("verify");
        assertEquals(1, bad.exit());
        assertTrue(bad.err().contains("image " + ContentKey.of(big).hex() + " is damaged"), bad.err());
        assertTrue(bad.out().startsWith("DAMAGED: 1 problem"), bad.out());
        Result show = run("show", "bpf_prog_99aabbccddeeff00_big");
        assertEquals(2, show.exit());
        assertTrue(show.err().contains(ContentKey.of(big).hex()), show.err());
    }

    @Test
    void exportImportThroughTheCli() throws Exception {
        Path bundle = tmp.resolve("rec.ptfb");
        Result e = run("export", "rec-1", "-o", bundle.toString());
        assertEquals(0, e.exit(), e.err());
        assertTrue(e.out().contains("3 regions, 2 images"), e.out());
        Path other = dir;
        dir = tmp.resolve("other");
        Result i = run("import", bundle.toString());
        assertEquals(0, i.exit(), i.err());
        assertTrue(i.out().contains("3 regions (3 new), 2 images (2 new"), i.out());
        assertTrue(run("import", bundle.toString()).out().contains("(0 new), 2 images (0 new"));
        assertEquals(0, run("verify").exit());
        byte[] cut = Arrays.copyOf(Files.readAllBytes(bundle), (int) Files.size(bundle) - 10);
        Path cutFile = tmp.resolve("cut.ptfb");
        Files.write(cutFile, cut);
        Result bad = run("import", cutFile.toString());
        assertEquals(2, bad.exit());
        assertEquals(1, bad.err().lines().count(), bad.err());
        assertTrue(bad.err().contains("cut short"), bad.err());
        dir = other;
        assertEquals(2, run("export", "no-such-recording", "-o", tmp.resolve("x").toString()).exit());
    }

    @Test
    void gcPinUnpin() throws Exception {
        Files.delete(perfData);
        Result pin = run("pin", "rec-1");
        assertTrue(pin.out().contains("pinned recording:rec-1"), pin.out());
        assertTrue(run("pin").out().contains("recording:rec-1"));
        Result dry = run("gc", "--dry-run", "--json");
        assertEquals(0, dry.exit(), dry.err());
        assertTrue(dry.out().contains("\"dropped_recordings\":[]") && dry.out().contains("\"images_freed\":0"), dry.out());
        assertTrue(run("unpin", "rec-1").out().contains("unpinned"));
        Result gc = run("gc", "--dry-run");
        assertTrue(gc.out().contains("would drop recording rec-1 (perf.data gone"), gc.out());
        assertTrue(gc.out().contains("would free 3 region(s), 2 image(s)"), gc.out());
        Result real = run("gc", "--keep", "7d", "--max-size", "1G");
        assertEquals(0, real.exit(), real.err());
        assertTrue(real.out().contains("free 3 region(s), 2 image(s), " + Units.bytes(CODE.length + big.length)), real.out());
        assertTrue(run("stats", "--json").out().contains("\"images\":0"));
        assertEquals(0, run("verify").exit());
        assertEquals(2, run("gc", "--max-size", "lots").exit());
    }

    @Test
    void recordingsAsJsonAndPinsOfImagesAndNames() throws Exception {
        Result recs = run("ls", "--recordings", "--json");
        assertEquals(1, recs.out().lines().count(), recs.out());
        String line = recs.out().lines().findFirst().orElseThrow();
        assertTrue(line.contains("\"recording\":\"rec-1\"") && line.contains("\"regions\":3")
                && line.contains("\"end\":900") && line.contains("\"pinned\":false"), line);
        ContentKey bigKey = ContentKey.of(big);
        assertTrue(run("pin", bigKey.hex()).out().contains("pinned image:" + bigKey.hex()));
        assertTrue(run("pin", "--name", "text_poke").out().contains("pinned name:text_poke"));
        assertTrue(run("pin", "--name", "text_poke").out().contains("already pinned"));
        assertEquals(2, run("pin", "no-such-thing").exit());
        Files.delete(perfData);
        Result gc = run("gc", "--json");
        assertTrue(gc.out().contains("\"id\":\"rec-1\"") && gc.out().contains("perf.data gone"), gc.out());
        assertTrue(gc.out().contains("\"regions_freed\":2") && gc.out().contains("\"images_freed\":0"), gc.out());
        assertTrue(run("show", "text_poke", "--bytes").out().contains("55 48 89 e5"), "pinned name kept with its image");
        assertTrue(run("show", bigKey.hex()).out().contains("0 region(s)"), "pinned image kept without regions");
        assertTrue(run("unpin", bigKey.hex()).out().contains("unpinned image:"));
        Result after = run("gc", "--json");
        assertTrue(after.out().contains("\"images_freed\":1"), after.out());
        assertEquals(0, run("verify").exit());
    }

    @Test
    void archiveMayBeGivenBeforeTheSubcommand() {
        StringWriter out = new StringWriter();
        int exit = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(new StringWriter()),
                "--archive", dir.toString(), "unpin", "rec-1");
        assertEquals(0, exit);
        assertTrue(out.toString().contains("was not pinned: recording:rec-1"), out.toString());
    }

    @Test
    void gcHelpShowsTheShippedSystemdUnitsAndCrontab() throws Exception {
        Path docs = Path.of(System.getProperty("user.dir")).getParent().resolve("docs/gc.systemd");
        Assumptions.assumeTrue(Files.isDirectory(docs), "docs/gc.systemd not beside the module");
        StringWriter out = new StringWriter();
        Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(new StringWriter()),
                "gc", "--help");
        for (String f : new String[] {"ptfence-gc.service", "ptfence-gc.timer", "crontab"}) {
            for (String line : Files.readAllLines(docs.resolve(f))) {
                if (!line.isBlank()) {
                    assertTrue(out.toString().contains("  " + line), f + ": '" + line + "' missing from gc --help");
                }
            }
        }
        assertFalse(out.toString().isEmpty());
    }

    // issue 12: an -o that is one of the command's inputs (the archive's own files) is refused before anything is
    // written, and a failed export leaves an existing bundle as it was, with no temporary file beside it
    @Test
    void exportGoesThroughOutputFileAndNeverWritesOverTheArchive() throws Exception {
        Path data = dir.resolve("data.mdb");
        byte[] before = Files.readAllBytes(data);
        Result self = run("export", "rec-1", "-o", data.toString());
        assertEquals(2, self.exit(), self.err());
        assertEquals(1, self.err().lines().count(), self.err());
        assertTrue(self.err().contains("is also an input"), self.err());
        assertArrayEquals(before, Files.readAllBytes(data), "data.mdb untouched");
        assertEquals(0, run("verify").exit());

        Path existing = Files.writeString(tmp.resolve("keep.ptfb"), "precious");
        Result failed = run("export", "no-such-recording", "-o", existing.toString());
        assertEquals(2, failed.exit(), failed.err());
        assertEquals("precious", Files.readString(existing));
        try (var files = Files.list(tmp)) {
            assertEquals(List.of(), files.filter(f -> f.getFileName().toString().contains("keep.ptfb")
                    && !f.equals(existing)).toList(), "no temporary file left");
        }
    }

    // issue 12: a read-only command on a path that is not an archive creates nothing; one line, exit 2
    @Test
    void readOnlyCommandsNeverCreateAnArchive() throws Exception {
        Path typo = tmp.resolve("typo");
        dir = typo;
        for (String[] cmd : new String[][] {{"ls"}, {"show", "text_poke"}, {"stats"}, {"verify"},
                {"export", "rec-1", "-o", tmp.resolve("x.ptfb").toString()}}) {
            Result r = run(cmd);
            assertEquals(2, r.exit(), cmd[0] + ": " + r.err());
            assertEquals(1, r.err().lines().count(), r.err());
            assertTrue(r.err().contains(typo.toString()) && r.err().contains("no ptfence archive"), r.err());
            assertFalse(Files.exists(typo), cmd[0] + " created " + typo);
        }
        // an empty data.mdb (a file system that lost it, a 'touch') is not silently re-created
        Files.createDirectory(typo);
        Files.createFile(typo.resolve("data.mdb"));
        for (String cmd : new String[] {"verify", "ls", "stats", "gc"}) {
            Result r = run(cmd);
            assertEquals(2, r.exit(), cmd + ": " + r.out() + r.err());
            assertEquals(1, r.err().lines().count(), r.err());
            assertTrue(r.err().contains("data.mdb") && r.err().contains("empty"), r.err());
            assertEquals(0, Files.size(typo.resolve("data.mdb")), cmd + " rewrote the empty data.mdb");
        }
        // import still creates a new archive where there is none (gc and pin do not:
        // onlyCommandsThatFillAnArchiveCreateOne)
        Path bundle = tmp.resolve("b.ptfb");
        dir = tmp.resolve("archive");
        assertEquals(0, run("export", "rec-1", "-o", bundle.toString()).exit());
        dir = tmp.resolve("fresh");
        assertEquals(0, run("import", bundle.toString()).exit());
        assertEquals(0, run("verify").exit());
    }

    // issue 12: bad gc/import arguments are bad input (exit 2, one line), never an internal error (70)
    @Test
    void badGcAndImportArgumentsAreOneLineExit2() throws Exception {
        for (String[] args : new String[][] {{"gc", "--keep", "-5d"}, {"gc", "--keep", "99999999999999d"},
                {"gc", "--max-size", "-1"}, {"gc", "--max-size", "0"}, {"import", tmp.toString()}}) {
            Result r = run(args);
            assertEquals(2, r.exit(), String.join(" ", args) + ": " + r.err());
            assertEquals(1, r.err().lines().count(), r.err());
            assertFalse(r.err().contains("internal error"), r.err());
        }
        assertTrue(run("import", tmp.toString()).err().contains("a directory"));
        assertEquals(0, run("gc", "--keep", "36500d", "--dry-run").exit());
    }

    // issue 12: ls --json has one schema: numbers are numbers (null when open-ended), every object has a type
    @Test
    @SuppressWarnings("unchecked")
    void lsJsonSchemaIsTypedAndNumeric() throws Exception {
        // the populated archive: rec-1 ends at 900; add a running recording, a pin and a lease
        try (Archive a = Archive.open(dir)) {
            a.write(b -> {
                Recordings.register(b, Recording.started("rec-2", "", "boot-a", 1000));
                return null;
            });
            ptfence.recording.Recordings.openLease(a, "test", java.time.Duration.ofHours(1));
        }
        assertEquals(0, run("pin", "rec-1").exit());
        Result all = run("ls", "--json");
        assertEquals(0, all.exit(), all.err());
        java.util.Map<String, Integer> types = new java.util.TreeMap<>();
        for (String line : all.out().lines().toList()) {
            java.util.Map<String, Object> o = ptfence.cli.JsonReader.object(line);
            String type = (String) o.get("type");
            assertTrue(type != null, "no type: " + line);
            types.merge(type, 1, Integer::sum);
            switch (type) {
                case "recording" -> {
                    assertTrue(o.get("start") instanceof Long, line);
                    assertTrue(o.get("created_ms") instanceof Long, line);
                    assertTrue(o.get("regions") instanceof Long, line);
                    assertTrue(o.containsKey("end"), line);
                    if (o.get("recording").equals("rec-1")) {
                        assertEquals(900L, o.get("end"), line);
                        assertEquals(true, o.get("pinned"), line);
                    } else {
                        assertEquals(null, o.get("end"), "running: " + line);
                    }
                }
                case "region" -> {
                    assertTrue(o.get("valid_from") instanceof Long && o.get("length") instanceof Long, line);
                    assertTrue(o.containsKey("valid_to"), line);
                    assertTrue(((String) o.get("address")).startsWith("0x"), line);
                }
                case "pin" -> assertEquals("recording:rec-1", o.get("target"), line);
                case "lease" -> {
                    assertEquals("test", o.get("holder"), line);
                    assertTrue(o.get("expires_ms") instanceof Long && o.get("live").equals(true), line);
                }
                default -> throw new AssertionError("unknown type " + type);
            }
        }
        assertEquals(java.util.Map.of("lease", 1, "pin", 1, "recording", 2, "region", 3), types, all.out());
        // the same schema with a filter or --recordings
        assertTrue(run("ls", "--json", "--kind", "text_poke").out().contains("\"type\":\"region\""));
        assertEquals(4, run("ls", "--json", "--recordings").out().lines().count());
    }

    // issue 12: gc, verify, export and import report progress on stderr when asked, and only then (stderr is no
    // terminal here)
    @Test
    void progressOnStderrOnlyWhenAsked() throws Exception {
        Path bundle = tmp.resolve("p.ptfb");
        Result e = run("export", "rec-1", "-o", bundle.toString(), "--progress");
        assertEquals(0, e.exit(), e.err());
        assertTrue(e.err().contains("export: exporting images 2/2 (100%)"), e.err());
        assertEquals("", run("export", "rec-1", "-o", bundle.toString()).err());
        Result v = run("verify", "--progress");
        assertEquals(0, v.exit(), v.err());
        assertTrue(v.err().contains("verify: re-hashed images 2/2 (100%)"), v.err());
        assertEquals("", run("verify").err());
        dir = tmp.resolve("other");
        Result i = run("import", bundle.toString(), "--progress");
        assertEquals(0, i.exit(), i.err());
        assertTrue(i.err().contains("import: importing images and regions 5/5 (100%)"), i.err());
        Thread.sleep(10);
        Result g = run("gc", "--keep", "0s", "--force", "--progress");
        assertEquals(0, g.exit(), g.err());
        assertTrue(g.err().contains("gc: sweeping images 2/2 (100%)"), g.err());
        assertEquals("", run("gc").err());
    }

    // issue 20: 'gc --dry-run', 'pin' (the list) and a failing 'unpin' created data.mdb and lock.mdb in any
    // directory; only ptrec and import may create an archive
    @Test
    void onlyCommandsThatFillAnArchiveCreateOne() throws Exception {
        dir = tmp.resolve("none");
        for (String[] args : new String[][] {{"gc", "--dry-run"}, {"gc"}, {"pin"}, {"pin", "rec-1"},
                {"unpin", "rec-1"}, {"ls"}, {"stats"}}) {
            Result r = run(args);
            assertEquals(2, r.exit(), String.join(" ", args) + ": " + r.err());
            assertEquals(1, r.err().lines().count(), r.err());
            assertTrue(r.err().contains(dir + ": no ptfence archive there (no such directory)"), r.err());
            assertFalse(Files.exists(dir), String.join(" ", args) + " created " + dir);
        }
        Files.createDirectory(dir);
        for (String[] args : new String[][] {{"gc", "--dry-run"}, {"pin"}, {"unpin", "x"}}) {
            Result r = run(args);
            assertEquals(2, r.exit(), String.join(" ", args) + ": " + r.err());
            assertTrue(r.err().contains("(no data.mdb)"), r.err());
            try (var l = Files.list(dir)) {
                assertEquals(List.of(), l.toList(), String.join(" ", args) + " wrote into " + dir);
            }
        }
        Path bundle = tmp.resolve("b.ptfb");
        Path original = tmp.resolve("archive");
        dir = original;
        assertEquals(0, run("export", "rec-1", "-o", bundle.toString()).exit());
        dir = tmp.resolve("new");
        Result i = run("import", bundle.toString());
        assertEquals(0, i.exit(), "import creates its archive: " + i.err());
        assertTrue(Files.exists(dir.resolve("data.mdb")));
    }

    // issue 20: 'import BUNDLE --perf-data /typo' was accepted, and the next gc dropped the import as "perf.data
    // gone"; a FIFO as the bundle was an internal error
    @Test
    void importRefusesAMissingPerfDataAndABundleItCannotReadTwice() throws Exception {
        Path bundle = tmp.resolve("b.ptfb");
        assertEquals(0, run("export", "rec-1", "-o", bundle.toString()).exit());
        Path other = tmp.resolve("other");
        dir = other;
        Result typo = run("import", bundle.toString(), "--perf-data", "/typo");
        assertEquals(2, typo.exit(), typo.err());
        assertEquals("ptarchive: --perf-data /typo: no such file (give the recording's perf.data as it is on this "
                + "machine, or leave --perf-data out)\n", typo.err());
        assertFalse(Files.exists(other), "a refused import creates no archive");
        Path fifo = tmp.resolve("fifo");
        Assumptions.assumeTrue(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor() == 0, "mkfifo");
        Result f = run("import", fifo.toString());
        assertEquals(2, f.exit(), f.err());
        assertTrue(f.err().contains(fifo + ": not a regular file (a pipe or device)"), f.err());
        assertFalse(f.err().contains("bundle " + fifo), "the bundle's content is not to blame: " + f.err());
        Result ok = run("import", bundle.toString(), "--perf-data", perfData.toString());
        assertEquals(0, ok.exit(), ok.err());
        Result gc = run("gc");
        assertEquals(0, gc.exit(), gc.err());
        assertTrue(gc.out().contains("kept 1 recording(s)"), gc.out());
    }

    // issue 20: 'export ... -o /dev/full' was an internal error (exit 70)
    @Test
    void exportToAFullDeviceIsOneLineExit2() {
        Assumptions.assumeTrue(Files.exists(Path.of("/dev/full")), "/dev/full");
        Result r = run("export", "rec-1", "-o", "/dev/full");
        assertEquals(2, r.exit(), r.err());
        assertEquals("ptarchive: /dev/full: writing failed: No space left on device\n", r.err());
    }

    // issue 20: 'gc --keep=0' dropped every recording without a word
    @Test
    void gcKeepZeroNeedsForce() {
        Result r = run("gc", "--keep", "0");
        assertEquals(2, r.exit(), r.err());
        assertTrue(r.err().contains("--keep 0: drops every recording that is neither pinned nor live, at once; add "
                + "--force"), r.err());
        assertEquals(1, run("ls", "--json", "--recordings").out().lines().count(), "nothing dropped");
        assertEquals(0, run("gc", "--keep", "0", "--dry-run").exit(), "a dry run may show what it would do");
        Result forced = run("gc", "--keep", "0s", "--force");
        assertEquals(0, forced.exit(), forced.err());
        assertTrue(forced.out().contains("drop recording rec-1"), forced.out());
        assertTrue(run("gc", "--help").out().contains("an hour old"), "--help tells of the grace period");
    }
}

package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;

/**
 * Region times are in the recording's clock: with {@code --clock perf} (the PT path: records on perf's own clock,
 * fence stamps converted from CLOCK_MONOTONIC) as with the default CLOCK_MONOTONIC, each program's archived region
 * starts at its KSYMBOL register and ends no earlier than its KSYMBOL unregister, as perf 6.1 reads their times
 * from the perf.data.
 * <p>
 * Tolerance {@value #TOLERANCE_NS} ns: a conversion is off by at most its pairs' half-bracket (microseconds, printed
 * in the summary) plus the clocks' drift over the ≤ 100 ms to the nearest pair (under 1 µs at the few ppm measured
 * here; 50 µs even at NTP's 500 ppm limit). The two clocks differ by milliseconds on a machine up for a while (5.7
 * ms here), so an unconverted time fails the bounds below.
 */
class PtrecClockTest {
    private static final long TOLERANCE_NS = 100_000;
    /** The LOAD hook runs at the bpf() syscall's exit, microseconds after the KSYMBOL register. */
    private static final long LOAD_AFTER_REGISTER_MEDIAN_NS = 1_000_000;
    private static final Pattern KSYMBOL = Pattern.compile("(?m)^\\s*\\d+ (\\d+) 0x\\p{XDigit}+ \\[0x\\p{XDigit}+\\]: "
            + "PERF_RECORD_KSYMBOL addr (\\p{XDigit}+) len \\d+ type 1 flags (0x\\p{XDigit}+) name (\\S+)");
    private static final Pattern CLOCK_NOTE = Pattern.compile("clock: perf's; .* by (-?\\d+) ns \\(±(\\d+) ns");

    @TempDir
    Path dir;

    @BeforeAll
    static void requirements() {
        PtrecLiveTest.requirements(); // root, and perf to read the records' times
    }

    @ParameterizedTest
    @ValueSource(strings = {"monotonic", "perf"})
    void regionsAreBoundedByTheirKsymbolRecordsInTheRecordingsClock(String clock) throws Exception {
        Path data = dir.resolve(clock + ".data"), archive = dir.resolve("archive-" + clock);
        PtrecLiveTest.Running ptrec = new PtrecLiveTest().startPtrec("--sideband-only", "--clock", clock, "-a", "-v",
                "-o", data.toString(), "--archive", archive.toString());
        String prefix = "clk" + clock.charAt(0) + (System.nanoTime() % 1000) + "_";
        List<PtrecLiveTest.Loaded> loaded = new ArrayList<>();
        for (int batch = 0; batch < 8; batch++) { // over several of the recorder's clock samples
            loaded.addAll(PtrecLiveTest.loadPrograms(prefix + batch + "_", 6, 100));
            Thread.sleep(250);
        }
        Thread.sleep(300); // the last FREE images trail their close by a grace period
        PtrecLiveTest.signal(ptrec.process(), "INT");
        String log = ptrec.waitForLog();
        assertEquals(0, ptrec.process().exitValue(), log);
        Matcher note = CLOCK_NOTE.matcher(log);
        assertEquals(clock.equals("perf"), note.find(), "clock note in the summary: " + log);
        if (clock.equals("perf")) {
            System.out.println("ptrec --clock perf: offset " + note.group(1) + " ns, pairs within ±" + note.group(2)
                    + " ns");
        }

        PtrecLiveTest.Result header = PtrecLiveTest.run(List.of("perf", "report", "--header-only", "-I", "-i",
                data.toString()));
        assertEquals(0, header.exit(), header.err());
        assertEquals(clock.equals("monotonic"), header.out().contains("use_clockid = 1"), "attrs' clock");

        PtrecLiveTest.Result dump = PtrecLiveTest.run(List.of("perf", "report", "-D", "-i", data.toString()));
        assertEquals(0, dump.exit(), dump.err());
        // The probe renames ptrec's loop thread ten times a second; those COMM records are not the trace's.
        Matcher comm = Pattern.compile("PERF_RECORD_COMM: .*:" + ptrec.process().pid() + "/(\\d+)").matcher(dump.out());
        Map<String, Integer> commsByThread = new HashMap<>();
        while (comm.find()) commsByThread.merge(comm.group(1), 1, Integer::sum);
        assertTrue(commsByThread.values().stream().allMatch(n -> n <= 2), "ptrec's own COMMs: " + commsByThread);
        Map<String, Long> registered = new HashMap<>(), unregistered = new HashMap<>();
        Matcher m = KSYMBOL.matcher(dump.out());
        while (m.find()) {
            (m.group(3).equals("0x0") ? registered : unregistered).put(m.group(4), Long.parseLong(m.group(1)));
        }

        List<Long> loadGaps = new ArrayList<>();
        long maxFreeGap = 0;
        try (Archive a = Archive.open(archive)) {
            Recording rec = a.read(Recordings::all).get(0);
            for (PtrecLiveTest.Loaded l : loaded) {
                Long reg = registered.get(l.ksym()), unreg = unregistered.get(l.ksym());
                assertNotNull(reg, "perf lists no KSYMBOL register of " + l.ksym());
                assertNotNull(unreg, "perf lists no KSYMBOL unregister of " + l.ksym() + ": " + dump.out().lines()
                        .filter(x -> x.contains(l.ksym()) || x.contains("LOST")).toList() + "\n" + log);
                List<Region> regions = a.read(s -> RegionIndex.byName(s, l.ksym()));
                assertEquals(1, regions.size(), l.ksym() + ": one program, one region: " + regions);
                Region r = regions.get(0);
                assertFalse(r.isOpen(), l.ksym() + " still open");
                assertTrue(r.validFrom() >= reg - TOLERANCE_NS, l.ksym() + ": region from " + r.validFrom()
                        + " before its KSYMBOL register at " + reg);
                assertTrue(r.validTo() >= unreg - TOLERANCE_NS, l.ksym() + ": region to " + r.validTo()
                        + " before its KSYMBOL unregister at " + unreg);
                assertTrue(r.validTo() - unreg < 5_000_000_000L, l.ksym() + ": freed seconds after unregister?");
                assertTrue(rec.startTime() <= reg && unreg <= rec.endTime(), "recording " + rec.startTime() + ".."
                        + rec.endTime() + " does not span " + l.ksym());
                loadGaps.add(r.validFrom() - reg);
                maxFreeGap = Math.max(maxFreeGap, r.validTo() - unreg);
            }
        }
        loadGaps.sort(null);
        long median = loadGaps.get(loadGaps.size() / 2);
        System.out.printf("ptrec --clock %s: %d programs; region start - KSYMBOL register: min %d, median %d, max %d ns;"
                + " region end - KSYMBOL unregister: max %d ns%n", clock, loaded.size(), loadGaps.get(0), median,
                loadGaps.get(loadGaps.size() - 1), maxFreeGap);
        assertTrue(median < LOAD_AFTER_REGISTER_MEDIAN_NS, "region starts lag their KSYMBOL register by " + median
                + " ns (median): the clocks are not matched");
    }
}

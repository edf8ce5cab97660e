package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * perf's fast forward before a --time start (intel_pt_fast_forward): at the first state before the start its decoder
 * jumps to the last PSB whose TSC is before it, so the failed walks in between never happen. On the quipper recording
 * (its code missing: most lines are those failures) and a HASE one, for starts all over the trace and in the views
 * perf users run, the call views included, the perf entry's bytes and exit status must be perf 6.1's own. Before:
 * quipper's --itrace=e --time 641.2580, printed 115 errors, perf 17; --call-trace with it 3 lines, perf 21.
 */
class TimeFastForwardTest {
    @TempDir
    Path tmp;

    @Test
    void errorsBeforeTheStartThatPerfJumpsOverAreNotPrinted() throws Exception {
        String quipper = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14").toString();
        List<List<String>> views = List.of(List.of("--itrace=e"), List.of("--itrace=be"),
                List.of("--itrace=i1ie", "--ns"), List.of("--itrace=cepwx"), List.of(),
                // the call views decode under the same filter: its fast forward, its stop, the ratio left unseen
                List.of("--call-trace"), List.of("--call-ret-trace"));
        List<String> times = List.of("641.2569,", "641.25705,", "641.2571,641.2574", "641.25723,641.2575",
                "641.2578,", "641.2580,", "641.2585,641.2590");
        int lines = 0;
        int errors = 0;
        for (String t : times) {
            for (List<String> v : views) {
                String perf = perfsBytes(quipper, v, t);
                lines += (int) perf.lines().count();
                errors += (int) perf.lines().filter(l -> l.contains("Failed to get instruction")).count();
            }
        }
        assertTrue(lines > 500 && errors > 300, "perf's lines " + lines + ", errors " + errors);

        // HASE (code present): starts inside the trace, after a trace end, after the last one, and a range of one
        // instant. perf's thread stack sees only the states its filter samples (the call depth starts at the first
        // state inside), the cbr shown there carries that state's flags, a trace end is such a state, and a CBR
        // packet that repeats the ratio is none. Before, most of the call-view runs here differed (depth, cbr
        // flags, an extra cbr) and bep where the start fell just before a trace end.
        Map<String, List<String>> starts = new LinkedHashMap<>();
        starts.put("control_flow-20180404T163033/control_flow__control_flow-20180404T163033.perf", List.of(
                "969388.448429905,", "969388.448429905,969388.448432905", "969388.4484302,", "969388.44843,",
                "969388.448431572,", "969388.4484357,", "969388.448435572,969388.448435572"));
        starts.put("loopy-20180404T162955/loopy-20180404T162955.perf", List.of("969349.987564262,",
                "969349.987566,", "969349.98757,969349.9875743", "969349.9875756,", "969349.987574,969349.987575"));
        int runs = 0;
        int haseLines = 0;
        for (Map.Entry<String, List<String>> e : starts.entrySet()) {
            String name = e.getKey();
            Path hase = RecordingPacketsTest.hase(name.substring(0, name.indexOf('/')));
            String rec = hase.resolve(name.substring(name.indexOf('/') + 1)).toString();
            for (String t : e.getValue()) {
                for (List<String> v : List.of(List.of("--itrace=i1ie", "--ns"), List.of("--itrace=bep", "--ns"),
                        List.of("--call-trace"), List.of("--call-ret-trace"))) {
                    List<String> line = new ArrayList<>(List.of("script", "-i", rec,
                            "--symfs=" + hase.resolve("symfs")));
                    line.addAll(v);
                    line.addAll(List.of("--time", t));
                    PerfExitStatusTest.Outcome want = PerfExitStatusTest.perf(tmp, line);
                    assertEquals(0, want.status(), want.err());
                    assertEquals(want.out(), PerfExitStatusTest.ours(line).out(), "perf " + String.join(" ", line));
                    runs++;
                    haseLines += (int) want.out().lines().count();
                }
            }
        }
        assertEquals(48, runs);
        assertTrue(haseLines > 800, "perf's lines " + haseLines);
    }

    /**
     * Several ranges: a later range's fast forward moves within the buffer perf reads, so no reference time comes
     * with it and perf's decoder ignores the PSB+'s TSC (its TMA counts from the last TSC before the jump): the
     * errors until the next PSB+ take times early by the TSCs' difference, and the PSB event that of the old TSC
     * (perf's queue, which an error's time sets even when earlier, keeps it unseen). The first range's jump is the
     * queue's set-up, before any buffer is read, and keeps the right time; the last range may be open. And a PSB event
     * has its PSB+'s TSC's time even where a timing packet after the PSB+ was read before it was returned (psb offs
     * 0x18190, met by the scan for an IP). A state perf's filter leaves out makes no trace begin or psb line even
     * where its early time lies in an earlier range. Before (diff lines, perf's and ours): the 2-range set's
     * --itrace=e 12 (6 of its 73 errors 267 us late), the 3-range sets 26, '641.2572,641.2573 641.2576,'
     * --itrace=bep 238 (the open end), the call views 8-24; the PSB line 55 ns late in --itrace=bep --ns. The 3-range
     * sets in be, bep, cepwx and the call views: 1-3 lines on CPU 0 differed, two rules of perf's found: an
     * asynchronous branch's printed sample reads its IP's file (script_fetch_insn: a libselinux walk failure then
     * fails quietly), and the queue's first timed state is sampled by perf's set-up without the decoder's filter
     * (outside every range perf script drops its cbr sample, but the ratio is seen: no cbr line at the third start).
     */
    @Test
    void severalRangesTakePerfsTimesAfterALaterFastForward() throws Exception {
        String quipper = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14").toString();
        List<List<String>> views = List.of(List.of("--itrace=e"), List.of("--itrace=i1ie", "--ns"),
                List.of("--itrace=be", "--ns"), List.of("--itrace=bep", "--ns"), List.of("--itrace=cepwx"),
                List.of("--call-trace"), List.of("--call-ret-trace"));
        List<String> times = List.of("641.2570,641.2572 641.2575,641.2578", "641.2572,641.2573 641.2576,",
                "641.25705,641.2571 641.2573,", "641.2569,641.2571 641.2574,641.2576 641.2579,641.2581",
                "641.2571,641.25712 641.25745,641.2575 641.2580,641.2582");
        int lines = 0;
        for (String t : times) {
            for (List<String> v : views) {
                lines += (int) perfsBytes(quipper, v, t).lines().count();
            }
        }
        assertTrue(lines > 2000, "perf's lines " + lines);
        // the case is there: an error perf times 267 us before the PSB+ it restarted at
        List<String> first = List.of("script", "-i", quipper, "--itrace=e", "--time", times.get(0));
        assertTrue(PerfExitStatusTest.perf(tmp, first).out().contains(" time 641.257231613 "), "perf's early error");

        List<String> all = List.of("script", "-i", quipper, "--itrace=bep", "--ns");
        PerfExitStatusTest.Outcome want = PerfExitStatusTest.perf(tmp, all);
        assertTrue(want.out().contains("641.257676734:        psb:  psb offs: 0x18190"), "perf's PSB line");
        assertEquals(want.out(), PerfExitStatusTest.ours(all).out(), "perf " + String.join(" ", all));
    }

    /**
     * Every range holds its end, the middle ones too (perf since 5.3: before, all but the last left it out, as ptdecode
     * did): with a third range after it, a second range ending at a PSB+'s time lost that PSB period's 19 branch lines
     * (HASE 2018-05 control_flow). Found by a sweep of random range sets against perf 6.1 over the bundled recordings
     * (240 runs: 80 differed before, 27 after; docs/script.md).
     */
    @Test
    void aMiddleRangeHoldsItsEnd() throws Exception {
        Path hase = RecordingPacketsTest.hase("control_flow-20180515T180451");
        String rec = hase.resolve("perf.data.1").toString();
        String t = "16554.665819510,16554.665864618 16554.665866609,16554.665867646 16554.665869481,16554.665871332";
        for (List<String> v : List.of(List.of("--itrace=be", "--ns"), List.of("--itrace=i1ie", "--ns"),
                List.of("--itrace=cepwx"))) {
            String out = haseBytes(hase, rec, v, t);
            if (v.get(0).equals("--itrace=be")) {
                // the case is there: lines at the second range's very end
                assertTrue(out.lines().filter(l -> l.contains(" 16554.665867646:")).count() >= 10, out);
            }
        }
    }

    /**
     * The call views with a start inside the trace at a PSB+: perf samples the PSB state's psb, then its cbr (the ratio
     * its filter left unseen); ptdecode printed the cbr line first (HASE 2018-05 control_flow, every start at a PSB).
     * --call-ret-trace shows that cbr's flags: the PSB state's (perf's cbr sample takes them: the last instruction's
     * kind, "syscall" here, where the trace ended before the PSB+), none only where the PSB+ has no FUP (perf clears
     * the flags of a cbr sample whose IP is 0) or after an asynchronous trace end (its state's kind is no branch's:
     * the fourth and fifth starts). ptdecode gave none after any trace end with no IP (4 runs of the sweep, the third
     * set here). And the PSB state has the PSB+'s own ratio: where its CBR changes the ratio, the one --time left
     * unseen before is not shown (the last start: ptdecode printed cbr 32, then the PSB+'s 31, perf 31 alone; its
     * first update, tracing off, came before the CBR).
     */
    @Test
    void aPsbStatesFirstRatioInsideFollowsItsPsbLine() throws Exception {
        Path hase = RecordingPacketsTest.hase("control_flow-20180515T180451");
        String rec = hase.resolve("perf.data.1").toString();
        int flagged = 0;
        for (String t : List.of("16554.665869782,16554.665874886", "16554.665856220,16554.665867946",
                "16554.665864620,16554.665869483 16554.665871332,16554.665872260", "16554.665856221,",
                "16554.665867647,", "16554.665874888,")) {
            for (String v : List.of("--call-trace", "--call-ret-trace")) {
                String out = haseBytes(hase, rec, List.of(v), t);
                // the case is there: the first two lines are the psb, then the cbr
                List<String> first = out.lines().limit(2).toList();
                assertTrue(first.get(0).contains("psb offs") && first.get(1).contains("cbr:"), out);
                if (first.get(1).contains(" syscall ")) {
                    flagged++;
                }
            }
        }
        // the case is there: a first cbr with the PSB state's flags after a trace end
        assertEquals(2, flagged);
    }

    /**
     * magic-trace's current line with a start inside the trace: the ratio --time left unseen shows at the first state
     * inside, and perf's cbr sample takes that state's to_ip as its address (a trace begin's target, a PSB's FUP IP);
     * ptdecode printed 0 there in every one of 27 such runs. Starts 300 ns past states all over the trace.
     */
    @Test
    void aRatioShownAtTheFirstStateInsideHasThatStatesAddress() throws Exception {
        String quipper = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14").toString();
        List<String> view = List.of("--ns", "--itrace=bep", "-F",
                "pid,tid,time,flags,ip,addr,sym,symoff,synth,dso,event,period");
        List<String> all = new ArrayList<>(List.of("script", "-i", quipper));
        all.addAll(view);
        String full = PerfExitStatusTest.perf(tmp, all).out();
        List<String> starts = new ArrayList<>();
        for (String l : full.split("\n")) {
            String[] f = l.trim().split("\\s+");
            if (f.length > 1 && f[1].startsWith("641.") && f[1].endsWith(":") && starts.size() < 400) {
                starts.add(String.format("%.9f", Double.parseDouble(f[1].substring(0, f[1].length() - 1)) + 3e-7));
            }
        }
        int shown = 0;
        for (int i = 0; i < starts.size(); i += 23) {
            String out = perfsBytes(quipper, view, starts.get(i) + ",");
            // the case is there: a cbr line whose address is not 0
            if (out.lines().anyMatch(l -> l.contains("cbr:") && !l.matches(".*%\\)\\s+0 .*"))) shown++;
        }
        assertTrue(shown >= 10, "runs with a cbr line at a state's address: " + shown);
    }

    /**
     * A walk failure's IP is looked up in the maps perf's session has delivered, not at the error's time: perf decodes
     * a queue for each event until a state leaves the queue's time at the event's or later, then delivers the event
     * (an MMAP, a switch), so an error sees every event up to the highest time a state left its queue at. After a
     * later range's fast forward within the buffer the errors run early (267 us on quipper), before ld.so's mapping
     * by their own time: ptdecode found nothing mapped and printed 5 failures perf's file status keeps quiet (seed 7
     * of the sweep: every view of this set differed). And the lookup is in the thread the line names: ptdecode looked
     * an error up in the thread of the sample before it, across a switch (1760 and back to 3174 at 641.25735: one
     * libc failure missing, one coreutils failure too many).
     */
    @Test
    void aFailedWalkSeesTheMapsPerfsSessionDelivered() throws Exception {
        String quipper = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14").toString();
        List<List<String>> views = List.of(List.of("--itrace=e", "--ns"), List.of("--itrace=be", "--ns"),
                List.of("--itrace=cepwx"), List.of("--call-trace"), List.of("--call-ret-trace"));
        String early = "641.256962089,641.256967123 641.257061124,641.257101789 641.257256790,641.257802455";
        String switched = "641.256965122,641.257183253 641.257226788,641.257332756 641.257883789,641.257945788";
        for (List<String> v : views) {
            String out = perfsBytes(quipper, v, early);
            if (v.get(0).equals("--itrace=e")) {
                // the case is there: errors timed before the third range's start, none of ld.so's among them
                assertTrue(out.contains(" time 641.256875586 "), out);
                assertFalse(out.contains(" ip 0x7fb36d0a7934 "), out);
            }
            out = perfsBytes(quipper, v, switched);
            if (v.get(0).equals("--itrace=e")) {
                assertTrue(out.contains(" time 641.257352241 cpu 3 pid 1760 tid 1760 ip 0x7fb36c9a3eb0 "), out);
            }
        }
    }

    /**
     * A ratio --time left unseen shows at the first state inside, and a branch is perf's state only once its decoder
     * knows where it went: the cbr sample takes the branch's target as its address and its flags, a trace end's
     * ("tr end  syscall", "tr end  async") and an interrupt's ("hw int") included; a not-taken conditional branch is
     * no state. ptdecode checked the ratio at the branch instruction (address 0, the instruction's kind, at a
     * not-taken jcc the forge's two-cpus showed 0x50 where perf shows the taken one at 0x62) and not at all at an
     * interrupt (quipper: the cbr line came at the trace begin after it). Before: each of these 5 starts differed.
     */
    @Test
    void aRatioShownAtABranchStateHasThatBranchsTargetAndFlags() throws Exception {
        List<String> view = List.of("--ns", "--itrace=bep", "-F",
                "pid,tid,time,flags,ip,addr,sym,symoff,synth,dso,event,period");
        Path hase = RecordingPacketsTest.hase("control_flow-20180404T163033");
        String rec = hase.resolve("control_flow__control_flow-20180404T163033.perf").toString();
        List<String> flags = new ArrayList<>();
        for (String t : List.of("969388.448427906,", "969388.448429573,", "969388.448429906,", "969388.448431239,")) {
            String first = haseBytes(hase, rec, view, t).lines().findFirst().orElse("");
            flags.add(first.substring(first.indexOf("cbr:") + 4, first.indexOf("cbr: ", first.indexOf("cbr:") + 4))
                    .trim());
        }
        // the case is there: the first line is the cbr, at a taken jcc, a syscall's and an async trace end
        assertTrue(flags.containsAll(List.of("jcc", "tr end  syscall", "tr end  async")), flags.toString());
        String quipper = RecordingRecoveryTest.quipper().resolve("perf.data.intel_pt-4.14").toString();
        assertTrue(perfsBytes(quipper, view, "641.257902790,").contains("cbr:   hw int "), "perf's cbr at an interrupt");
    }

    /**
     * perf shows a cbr 0 at the first state it samples before any CBR packet. Outside every range it samples none but
     * its queue's set-up state, whose samples perf script drops: the ratio 0 is then seen with no line. The call views
     * printed a cbr 0 line there, between the ranges (HASE loopy 2018-04, four ranges; HASE 2018-05, after the first
     * range's end), where perf prints none (the sweep's last 4 runs of seed 7).
     */
    @Test
    void aZeroRatioAtTheSetUpStateOutsideTheRangesIsNotShown() throws Exception {
        Path loopy = RecordingPacketsTest.hase("loopy-20180404T162955");
        Path cf = RecordingPacketsTest.hase("control_flow-20180515T180451");
        int lines = 0;
        for (String v : List.of("--call-trace", "--call-ret-trace")) {
            lines += haseBytes(loopy, loopy.resolve("loopy-20180404T162955.perf").toString(), List.of(v),
                    "969349.987537003,969349.987563928 969349.987564261,969349.987566262 969349.987572930,"
                            + "969349.987573595 969349.987575596,").lines().count();
            String out = haseBytes(cf, cf.resolve("perf.data.1").toString(), List.of(v),
                    "16554.665819511,16554.665856219 16554.665864620,16554.665866608 16554.665869483,");
            assertEquals("", out); // the case is there: the ranges hold no state perf samples
        }
        assertEquals(12, lines);
    }

    /** As {@link #perfsBytes} on a HASE recording {@code rec} with its binaries under {@code hase}/symfs. */
    private String haseBytes(Path hase, String rec, List<String> view, String t) throws Exception {
        return perfsBytes(rec, concat(List.of("--symfs=" + hase.resolve("symfs")), view), t);
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }

    /** perf script on {@code rec}, {@code view}, {@code --time t}: perf 6.1's bytes, which ours must equal. */
    private String perfsBytes(String rec, List<String> view, String t) throws Exception {
        List<String> line = new ArrayList<>(List.of("script", "-i", rec));
        line.addAll(view);
        line.addAll(List.of("--time", t));
        PerfExitStatusTest.Outcome want = PerfExitStatusTest.perf(tmp, line);
        assertEquals(0, want.status(), want.err());
        PerfExitStatusTest.Outcome got = PerfExitStatusTest.ours(line);
        assertEquals(0, got.status(), got.err());
        assertEquals(want.out(), got.out(), "perf " + String.join(" ", line));
        return want.out();
    }
}

package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.bpf.ProgInfo;
import ptfence.bpf.TestPrograms;
import ptfence.fence.SameCode;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

/**
 * Issue 5's acceptance through the command itself: ptrec --sideband-only -- a program that loads and at once closes
 * 1000 BPF programs. Every image must reach the archive, equal to what BPF_OBJ_GET_INFO_BY_FD reports for the same
 * programs kept alive in a control run, named as kallsyms names them, with no loss reported.
 */
class PtrecChurnTest {
    private static final int N = 1000;
    private static final int SALT = 700_000;
    private static final Pattern LOSSES = Pattern.compile("losses=(\\d+)");

    @TempDir
    Path dir;

    @BeforeAll
    static void requirements() {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
                "needs root: the fence loads BPF programs and perf_event_open runs system-wide");
    }

    /** The control run: same programs, kept alive while the kernel reports image, address and kallsyms name. */
    private static Map<String, ProgInfo> control(String prefix) throws Exception {
        Map<String, ProgInfo> byName = new HashMap<>();
        List<BpfFd> fds = new ArrayList<>();
        try {
            for (int i = 0; i < N; i++) {
                BpfFd fd = Bpf.get().progLoad(TestPrograms.constant(prefix + i, SALT + i));
                fds.add(fd);
                ProgInfo info = ProgInfo.fetch(fd);
                byName.put("bpf_prog_" + info.tagHex() + "_" + prefix + i, info);
            }
            List<String> kallsyms = Files.readAllLines(Path.of("/proc/kallsyms"));
            long named = kallsyms.stream().map(l -> l.split("\\s+")).filter(f -> f.length >= 3)
                    .filter(f -> byName.containsKey(f[2])).count();
            assertEquals(N, named, "control programs missing from kallsyms");
        } finally {
            for (BpfFd fd : fds) fd.close();
        }
        return byName;
    }

    @Test
    void everyShortLivedProgramIsArchivedExactly() throws Exception {
        String prefix = "ch" + (System.nanoTime() % 1000) + "_";
        Map<String, ProgInfo> expected = control(prefix);
        Path data = dir.resolve("churn.data");
        Path archive = dir.resolve("archive");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        PtrecLiveTest.Running ptrec = new PtrecLiveTest().startPtrec("--sideband-only", "-o", data.toString(),
                "--archive", archive.toString(), "--", java, "-cp", System.getProperty("java.class.path"),
                "ptfence.fence.Churn", Integer.toString(N), prefix, Integer.toString(SALT));
        String log = ptrec.waitForLog();
        assertEquals(0, ptrec.process().exitValue(), log);
        Matcher losses = LOSSES.matcher(log);
        assertTrue(losses.find(), "no fence summary in: " + log);
        assertEquals("0", losses.group(1), "fence losses reported: " + log);

        try (Archive a = Archive.open(archive)) {
            List<Region> ours = a.read(s -> RegionIndex.all(s,
                    r -> r.kind() == RegionKind.BPF_PROG && r.name().contains("_" + prefix)));
            Map<String, Region> byName = new HashMap<>();
            for (Region r : ours) byName.putIfAbsent(r.name(), r);
            assertEquals(N, byName.size(), "distinct programs archived");
            // its FREE ends a program's region, not a second one (the KSYMBOL unregister comes first)
            assertEquals(N, ours.size(), "regions of the " + N + " programs");
            for (Region r : ours) assertFalse(r.isOpen() || r.validFrom() == 0, r.toString());
            for (Map.Entry<String, ProgInfo> e : expected.entrySet()) {
                Region r = byName.get(e.getKey());
                assertTrue(r != null, "no region named " + e.getKey());
                ProgInfo info = e.getValue();
                byte[] bytes = a.get(r.key()).orElseThrow();
                // another address than the control's: equal up to PC-relative fields that reach the same target
                assertTrue(SameCode.relocatedEqual(info.functionImage(0), info.jitedKsyms()[0], bytes, r.address()),
                        e.getKey() + ": archived bytes differ from the kernel's image");
            }
        }
    }
}

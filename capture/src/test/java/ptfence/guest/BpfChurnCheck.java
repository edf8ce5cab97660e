package ptfence.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import ptfence.cli.Tool;
import ptfence.fence.SameCode;
import ptfence.ptarchive.PtarchiveCommand;
import ptfence.region.BpfMetadata;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;

/**
 * The fence's first job on the kernels users run (issue 29): {@code ptrec --sideband-only -a} in the guest while two
 * churns load and at once close BPF programs. The observed churn ({@link ChurnImages}) writes down, before each close,
 * the image the kernel reports (BPF_OBJ_GET_INFO_BY_FD); the pure churn ({@code ptfence.fence.Churn}) closes right
 * after the load, the shortest life a program can have, with the same instructions. Judged here: ptrec exits 0 with
 * the in-kernel fence and 0 losses; every program of both churns is archived, as a BPF program region with its
 * metadata (id, tag, translated instructions), bytes equal to the kernel's dump (byte for byte at the same address
 * for the observed ones, up to relocation for the pure ones); {@code ptarchive verify} finds the archive sound.
 */
final class BpfChurnCheck implements GuestCheck {
    private static final Pattern LOSSES = Pattern.compile("losses=(\\d+)");
    private static final int SALT = 310_000;
    private final int n;

    /**
     * @param n programs per churn ({@code -Dptfence.guest.churn}, default 1000: boot and checks 5-7 min a kernel
     *          under TCG at host load ~12, of which ptrec's start ~2.5 min and the two churns with their JVMs ~2.5)
     */
    BpfChurnCheck(int n) {
        this.n = n;
    }

    @Override
    public GuestKernel.Check check() {
        String ptrec = GuestKernel.java("ptfence.ptrec.PtrecCommand", "--sideband-only", "-a", "-v", "--no-kernel-text",
                "-o", "/tmp/churn.data", "--archive", "/tmp/archive");
        String script = String.join("\n",
                "echo \"start at $(cut -d' ' -f1 /proc/uptime)\" > times",
                ptrec + " 2> ptrec.log &",
                "p=$!",
                "i=0",
                "until grep -q '^ptrec: recording ' ptrec.log; do",
                // no count of its own: the check's bound stops a ptrec that never comes up
                "  i=$((i + 1)); kill -0 $p 2>/dev/null || break; sleep 0.1",
                // where a slow start spends its time: the JVM's threads every 20 s
                "  [ $((i % 200)) = 100 ] && " + GuestKernel.quote(java.nio.file.Path.of(System.getProperty("java.home"),
                        "bin", "jstack").toString()) + " $(pgrep -f PtrecCommand | head -1) > jstack-$i.txt 2>&1",
                "done",
                "echo \"ptrec up at $(cut -d' ' -f1 /proc/uptime)\" >> times",
                GuestKernel.java("ptfence.guest.ChurnImages", Integer.toString(n), "gobs_", Integer.toString(SALT),
                        "images.txt") + " > observed.ns; echo $? > observed.rc",
                GuestKernel.java("ptfence.fence.Churn", Integer.toString(n), "gpure_", Integer.toString(SALT))
                        + " > pure.ns; echo $? > pure.rc",
                "echo \"churns done at $(cut -d' ' -f1 /proc/uptime) (observed $(cat observed.ns) ns, pure $(cat pure.ns) ns)\" >> times",
                "sleep 1",
                "kill -INT $p; wait $p; echo $? > ptrec.rc",
                "echo \"ptrec ended at $(cut -d' ' -f1 /proc/uptime)\" >> times",
                "cp /tmp/churn.data . && cp -r --sparse=always /tmp/archive archive",
                "");
        return new GuestKernel.Check("bpf-churn", (int) GuestKernel.BOOT_BOUND.toSeconds() - 30, script);
    }

    @Override
    public void verify(GuestKernel.Boot boot) throws Exception {
        Path d = boot.dir("bpf-churn");
        String why = boot.describe("bpf-churn");
        if (Files.exists(d.resolve("times"))) {
            System.out.print("guest " + boot.kernel().release() + " bpf-churn: " + Files.readString(d.resolve("times")));
        }
        String log = Files.exists(d.resolve("ptrec.log")) ? Files.readString(d.resolve("ptrec.log")) : "";
        assertEquals(0, boot.rc("bpf-churn"), why);
        assertEquals("0", Files.readString(d.resolve("observed.rc")).strip(), "observed churn: " + why);
        assertEquals("0", Files.readString(d.resolve("pure.rc")).strip(), "pure churn: " + why);
        assertEquals("0", Files.readString(d.resolve("ptrec.rc")).strip(), "ptrec: " + log);
        assertFalse(log.contains("user-space fence"), "the in-kernel fence did not run: " + log);
        Matcher losses = LOSSES.matcher(log);
        assertTrue(losses.find(), "no fence summary: " + log);
        assertEquals("0", losses.group(1), "fence losses: " + log);

        Map<String, String[]> witness = new HashMap<>();
        for (String line : Files.readAllLines(d.resolve("images.txt"))) {
            String[] f = line.split(" ");
            witness.put(f[0], f);
        }
        assertEquals(n, witness.size(), "programs the observed churn wrote down");
        HexFormat hex = HexFormat.of();
        int kept = 0, keptPure = 0;
        try (Archive a = Archive.openReadOnly(d.resolve("archive"))) {
            List<Region> ours = a.read(s -> RegionIndex.all(s, r -> r.kind() == RegionKind.BPF_PROG
                    && (r.name().contains("_gobs_") || r.name().contains("_gpure_"))));
            Map<String, Region> byName = new HashMap<>();
            for (Region r : ours) {
                Region was = byName.put(r.name(), a.read(s -> RegionIndex.withContent(s, r)));
                assertTrue(was == null, "two regions named " + r.name());
            }
            for (int i = 0; i < n; i++) {
                String[] w = witness.get("gobs_" + i);
                String ksym = "bpf_prog_" + w[3] + "_gobs_" + i;
                Region r = byName.get(ksym);
                assertNotNull(r, "not archived: " + ksym + " (" + byName.size() + " of " + 2 * n + " kept)\n" + log);
                byte[] image = hex.parseHex(w[4]);
                assertEquals(Long.parseUnsignedLong(w[2], 16), r.address(), ksym + ": address");
                assertEquals(hex.formatHex(image), hex.formatHex(a.get(r.key()).orElseThrow()), ksym + ": bytes");
                metadata(r, Integer.parseInt(w[1]), w[3]);
                kept++;
                String pure = "bpf_prog_" + w[3] + "_gpure_" + i; // the same instructions: the same tag
                Region p = byName.get(pure);
                assertNotNull(p, "not archived: " + pure + "\n" + log);
                assertTrue(SameCode.relocatedEqual(image, Long.parseUnsignedLong(w[2], 16), a.get(p.key()).orElseThrow(),
                        p.address()), pure + ": archived bytes differ from the kernel's image of the same program");
                metadata(p, -1, w[3]);
                keptPure++;
            }
        }
        StringWriter out = new StringWriter(), err = new StringWriter();
        int verify = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                "--archive", d.resolve("archive").toString(), "verify");
        assertEquals(0, verify, "ptarchive verify: " + out + err);
        assertTrue(out.toString().startsWith("ok: "), out.toString());
        System.out.printf("guest %s: %d/%d observed and %d/%d short-lived programs kept with metadata; %s; verify %s",
                boot.kernel().release(), kept, n, keptPure, n, summaryLine(log), out);
    }

    private static void metadata(Region r, int id, String tag) {
        assertTrue(r.metadata() instanceof BpfMetadata, r.name() + ": no program metadata");
        BpfMetadata m = (BpfMetadata) r.metadata();
        if (id >= 0) assertEquals(id, m.progId(), r.name() + ": id");
        assertEquals(tag, m.tag(), r.name() + ": tag");
        assertEquals(16, m.xlatedInsns().length, r.name() + ": translated instructions (2)");
        assertEquals(1, m.progTags().length, r.name() + ": function tags");
    }

    private static String summaryLine(String log) {
        return log.lines().filter(l -> l.contains("losses=")).findFirst().orElse("").strip();
    }
}

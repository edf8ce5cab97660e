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
 * after the load, the shortest life a program can have, with the same instructions. Both run, one JVM, as the
 * {@code bpf} lane of {@link FenceChurnCheck}'s run, beside the other kinds' churns under the same ptrec (its start
 * is most of a guest check's time under TCG); judged here as a test of its own. Judged: ptrec exits 0 with the
 * in-kernel fence and 0 losses; every program of both churns is archived, as a BPF program region with its metadata
 * (id, tag, translated instructions), bytes equal to the kernel's dump (byte for byte at the same address for the
 * observed ones, up to relocation for the pure ones); {@code ptarchive verify} finds the archive sound.
 */
final class BpfChurnCheck implements GuestCheck {
    private static final Pattern LOSSES = Pattern.compile("losses=(\\d+)");
    private static final int SALT = 310_000;
    private final int n;

    /** @param n programs per churn ({@code -Dptfence.guest.churn}, default 1000) */
    BpfChurnCheck(int n) {
        this.n = n;
    }

    /** The lane's command line (churn-all.sh runs it in the lane's folder): both churns, one JVM, their ns on stdout. */
    static String command(int n) {
        return GuestKernel.java("ptfence.guest.ChurnImages", Integer.toString(n), "gobs_", Integer.toString(SALT),
                "images.txt", "gpure_");
    }

    @Override
    public GuestKernel.Check check() {
        return null; // a lane of the fence churn's run
    }

    @Override
    public String name() {
        return "bpf-churn";
    }

    @Override
    public void verify(GuestKernel.Boot boot) throws Exception {
        Path run = boot.dir(FenceChurnCheck.NAME), d = run.resolve("bpf");
        String why = boot.describe(FenceChurnCheck.NAME);
        String log = Files.exists(run.resolve("ptrec.out")) ? Files.readString(run.resolve("ptrec.out")) : "";
        assertEquals(0, boot.rc(FenceChurnCheck.NAME), why);
        assertEquals("0", Files.readString(run.resolve("bpf.rc")).strip(), "the BPF churns: " + why);
        List<String> ns = Files.readAllLines(d.resolve("ns"));
        assertEquals(2, ns.size(), "the observed and the pure churn's times: " + ns + "; " + why);
        System.out.printf("guest %s bpf-churn: observed %.1f s, pure %.1f s (guest clock)%n", boot.kernel().release(),
                Long.parseLong(ns.get(0).strip()) / 1e9, Long.parseLong(ns.get(1).strip()) / 1e9);
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
        try (Archive a = Archive.openReadOnly(run.resolve("archive"))) {
            // a region of no width holds its bytes at no time (the archive never answers with it): the tracker cuts a
            // version to none where it learns late that it was wrong (a program freed before a trampoline reused its
            // chunk took the image's retirement poke while its FREE copy was behind; the FREE, before the poke, cuts
            // that version to none)
            List<Region> ours = a.read(s -> RegionIndex.all(s, r -> r.kind() == RegionKind.BPF_PROG
                    && (r.name().contains("_gobs_") || r.name().contains("_gpure_"))
                    && r.validTo() != r.validFrom()));
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
                "--archive", run.resolve("archive").toString(), "verify");
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

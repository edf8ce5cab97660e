package ptfence.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import ptfence.cli.Tool;
import ptfence.fence.GuestFenceCheck;
import ptfence.ptarchive.PtarchiveCommand;
import ptfence.region.RegionKind;

/**
 * {@code ptrec --sideband-only -a} with the fence while churns of the dynamic text kinds run in the guest, in lanes at
 * once under one ptrec (test resources ptfence/guest/churn-all.sh: modules, kprobes, fentry/fexit trampolines, XDP
 * dispatcher changes through netlink and bpf links, static keys, and the BPF program churn that
 * {@link BpfChurnCheck} judges). Each churn's independent reader copies every live region from /proc/kcore
 * (kcore-read.py, no project code) right after each change. Judged here: ptrec exits 0 with no losses, every kcore
 * copy finds the archived region at its address and time with equal bytes ({@link GuestFenceCheck}),
 * {@code ptarchive verify} passes, and each kind's counts hold.
 */
final class FenceChurnCheck implements GuestCheck {
    /** The run's folder, {@link BpfChurnCheck}'s too. */
    static final String NAME = "fence-churn";
    private final Map<String, Integer> churns;
    private final int bpf;
    private final int seconds;

    /**
     * @param churns kind -> count (modules: rounds, kprobes: rounds, fentry: cycles, xdp: changes, statickeys:
     *     flips, ftrace: users made and removed); see churn-all.sh
     * @param bpf programs per BPF churn in the run's {@code bpf} lane ({@link BpfChurnCheck}), 0 for none
     */
    FenceChurnCheck(Map<String, Integer> churns, int bpf, int seconds) {
        this.churns = new LinkedHashMap<>(churns);
        this.bpf = bpf;
        this.seconds = seconds;
    }

    /**
     * The counts of issue 29's "done when" scaled by {@code percent} (100: the full counts): 50 module loads (25
     * rounds of dummy and veth), 200 kprobe registrations (100 rounds of a kprobe at an offset and a kretprobe), 200
     * fentry/fexit attach/detach cycles, 100 dispatcher changes (netlink and bpf links in turn), 200 static-key flips;
     * and 20 ftrace users (trace instances' function tracers and function_graph in turn: the issue names no count).
     */
    static FenceChurnCheck scaled(int percent, int bpf, int seconds) {
        Map<String, Integer> c = new LinkedHashMap<>();
        if (percent <= 0) return new FenceChurnCheck(c, bpf, seconds);
        c.put("modules", Math.max(2, 25 * percent / 100));
        c.put("kprobes", Math.max(4, 100 * percent / 100));
        c.put("fentry", Math.max(12, 200 * percent / 100));
        c.put("xdp", Math.max(6, 100 * percent / 100));
        c.put("statickeys", Math.max(4, 200 * percent / 100));
        c.put("ftrace", Math.max(2, 20 * percent / 100));
        return new FenceChurnCheck(c, bpf, seconds);
    }

    /** {@code kind=N,kind=N...} (modules, kprobes, fentry, xdp, statickeys, ftrace). */
    static FenceChurnCheck of(String spec, int bpf, int seconds) {
        Map<String, Integer> c = new LinkedHashMap<>();
        for (String kv : spec.split(",")) {
            String[] f = kv.strip().split("=");
            c.put(f[0], Integer.parseInt(f[1]));
        }
        return new FenceChurnCheck(c, bpf, seconds);
    }

    static String resource(String file) {
        try {
            return Path.of(FenceChurnCheck.class.getResource("/ptfence/guest/" + file).toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public GuestKernel.Check check() {
        List<String> cmd = new ArrayList<>(List.of("--sideband-only", "-a", "--no-kernel-text", "--archive",
                "/tmp/fence-archive", "-o", "/tmp/fence.perf.data", "-v", "--", "bash", resource("churn-all.sh"),
                "/tmp/churn"));
        churns.forEach((k, n) -> cmd.add(k + "=" + n));
        if (bpf > 0) cmd.add("bpf=" + bpf);
        return new GuestKernel.Check(NAME, seconds, String.join("\n",
                "up() { cut -d' ' -f1 /proc/uptime; }",
                "mkdir -p /tmp/churn",
                // where the time goes, in guest uptime: ptrec's start ends where churn-all's lanes begin
                "export CHURN_TIMES=$OUT/times CHURN_BPF=" + GuestKernel.quote(BpfChurnCheck.command(bpf)),
                // one lane after another, each lane's own time (-Dptfence.guest.churnSerial=true: measuring)
                Boolean.getBoolean("ptfence.guest.churnSerial") ? "export CHURN_SERIAL=1" : "",
                // programs on perf events, attached before ptrec starts and held until it ends (PerfAttachCheck)
                PerfAttachCheck.start(),
                "echo \"ptrec starts at $(up) s\" > times",
                // the kernel text copy (19 MB through kcore) is not what this checks, and costs minutes under TCG
                GuestKernel.java("ptfence.ptrec.PtrecCommand", cmd.toArray(String[]::new))
                        + " > ptrec.out 2>&1; echo $? > ptrec.rc",
                PerfAttachCheck.stop(),
                "echo \"ptrec ended at $(up) s\" >> times",
                "cp -r --sparse=always /tmp/fence-archive archive; for k in " + String.join(" ", churns.keySet())
                        + "; do cp -r /tmp/churn/$k/kcore kcore-$k; done; cp /tmp/churn/*.rc . ;"
                        + " cp /tmp/churn/kprobes/optimized . 2>/dev/null; cp -r /tmp/churn/bpf . 2>/dev/null;"
                        + " cp /tmp/fence.perf.data .",
                "echo \"copied out at $(up) s\" >> times",
                "cat ptrec.rc; test \"$(cat ptrec.rc)\" = 0",
                ""));
    }

    @Override
    public void verify(GuestKernel.Boot boot) throws Exception {
        Path dir = boot.dir(NAME);
        String why = boot.describe(NAME);
        assertEquals(0, boot.rc(NAME), why);
        String ptrec = Files.readString(dir.resolve("ptrec.out"));
        GuestFenceCheck.Result r = GuestFenceCheck.check(dir.resolve("archive"),
                churns.keySet().stream().map(k -> dir.resolve("kcore-" + k)).toList(), dir.resolve("fence.perf.data"));
        System.out.printf("guest %s: %s%n", boot.kernel().release(), r.summary());
        if (Files.exists(dir.resolve("times"))) {
            System.out.print("guest " + boot.kernel().release() + " fence-churn times (guest uptime):\n"
                    + Files.readString(dir.resolve("times")));
        }
        why = r.summary() + "\n" + ptrec + "\n" + why;
        for (String kind : churns.keySet()) {
            assertEquals("0", Files.readString(dir.resolve(kind + ".rc")).strip(), kind + " churn: " + why);
        }
        if (churns.containsKey("statickeys")) {
            StaticKeyFlips.verify(dir.resolve("kcore-statickeys"), r, churns.get("statickeys"), boot, why);
        }
        assertTrue(ptrec.contains("losses=0"), "no losses: " + why);
        assertTrue(r.differ().isEmpty(), "archived bytes differ from kcore's: " + r.differ() + "; " + why);
        assertTrue(r.missing().isEmpty(), "not archived: " + r.missing() + "; " + why);
        StringWriter out = new StringWriter(), err = new StringWriter();
        assertEquals(0, Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                "--archive", dir.resolve("archive").toString(), "verify"), "ptarchive verify: " + out + err);
        Integer modules = churns.get("modules");
        if (modules != null) {
            int loads = 2 * modules; // dummy and veth each round
            // the xdp churn, after the modules in its lane, loads veth once more for its veth pair (and leaves it);
            // the static-key lane loads nbd and removes it at its end
            int statickeys = churns.containsKey("statickeys") ? 1 : 0;
            int texts = 2 * (loads + (churns.containsKey("xdp") ? 1 : 0) + statickeys);
            assertTrue(ptrec.contains("module text: " + texts + " loads, " + (loads + statickeys) + " frees"),
                    "every core and init text at load, every core text at its free: " + why);
            // every text of every load with its module's symbols, copied in the kernel at the load (a module
            // removed before user space reads /proc/kallsyms kept none: 78 of 102 loads had them before)
            java.util.regex.Matcher sym = java.util.regex.Pattern.compile("symbols copied at load for (\\d+) texts "
                    + "\\((\\d+) with init symbols\\), read from kallsyms for (\\d+)").matcher(ptrec);
            assertTrue(sym.find() && Integer.parseInt(sym.group(1)) >= texts && sym.group(3).equals("0")
                    && !ptrec.contains("symbols missing"), "symbols copied at every load: " + why);
            // at each load the full table (module.kallsyms before init is done), so the init text is named too
            assertTrue(Integer.parseInt(sym.group(2)) >= texts, "the full table at every load: " + why);
            GuestFenceCheck.InitNames init = GuestFenceCheck.initNames(dir.resolve("archive"),
                    dir.resolve("kcore-modules").resolve("init-symbols"));
            System.out.printf("guest %s: module init texts checked for their .init.text names %s, problems %s%n",
                    boot.kernel().release(), init.texts(), init.problems());
            assertTrue(init.texts().getOrDefault("dummy", 0) >= modules, "dummy's init text at each load: " + why);
            assertTrue(init.problems().isEmpty(), "init texts without their ELF file's .init.text names: "
                    + init.problems() + "; " + why);
            assertEquals(modules, r.equal("dummy"), "a kcore copy of dummy per load, each equal: " + why);
            assertEquals(modules, r.equal("veth"), "a kcore copy of veth per load, each equal: " + why);
            assertTrue(r.regions().getOrDefault(RegionKind.MODULE, 0) >= 2 * loads, "core and init text: " + why);
        }
        if (churns.containsKey("kprobes")) {
            assertTrue(r.equal("kprobe_insn_page") >= churns.get("kprobes") / 4, "insn slot pages: " + why);
            // every other round through the kprobe PMU (perf_event_open), the rest through tracefs
            assertTrue(ptrec.contains("(" + churns.get("kprobes") / 2 + " through the kprobe PMU)"),
                    "kprobes through perf_event_open: " + why);
        }
        if (churns.containsKey("ftrace")) {
            int n = churns.get("ftrace");
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("churn: " + n + " ftrace users on \\S+ "
                    + "\\(function (\\d+), function_graph (\\d+)\\), (\\d+) kcore copies").matcher(ptrec);
            assertTrue(m.find() && Integer.parseInt(m.group(1)) == (n + 1) / 2 && Integer.parseInt(m.group(2)) == n / 2
                    && Integer.parseInt(m.group(3)) >= n, "a trampoline copy per ftrace user: " + why);
            // the ftrace lane's own trampolines, besides the kprobes lane's kretprobe one
            assertTrue(r.equal("ftrace_trampoline") >= n, "ftrace trampolines equal to kcore's: " + why);
        }
        if (churns.containsKey("fentry")) {
            // a kcore copy of every live image after each round's attaches (a round: 2 programs on each function)
            assertTrue(r.equal("bpf_trampoline_") >= churns.get("fentry") / 6, "trampolines: " + why);
            // 6.12 takes the build hook: each image is copied in the kernel as its build returns and is the version
            // from its attach poke (every attach and every detach but a function's last builds one); 6.1 refuses it
            // (its trampolines take at most 6 arguments, the build function has 7), says so, and takes the update
            // hook instead (fexit bpf_trampoline_update: the image copied after its attach poke)
            if (boot.kernel().release().startsWith("6.1.")) {
                assertTrue(ptrec.contains("this kernel's BPF trampolines take at most 6 arguments"), why);
                assertTrue(ptrec.contains("(fexit bpf_trampoline_update, after the attach poke"), why);
            }
            java.util.regex.Matcher m = java.util.regex.Pattern.compile(
                    "trampolines: (\\d+) in-kernel copies at the attach poke").matcher(ptrec);
            assertTrue(m.find() && Integer.parseInt(m.group(1)) >= churns.get("fentry") / 2,
                    "the trampolines copied in the kernel at their attach: " + why);
        }
        if (churns.containsKey("xdp")) {
            assertTrue(r.equal("dispatcher") >= churns.get("xdp") / 2, "dispatcher versions: " + why);
            // 6.1 and 6.12 take the fexit hook: every switch to a half is copied in the kernel as the update returns
            // (a third of the changes are detaches, switches to the nop: no copy)
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("dispatcher halves: (\\d+) in-kernel copies")
                    .matcher(ptrec);
            assertTrue(m.find() && Integer.parseInt(m.group(1)) >= churns.get("xdp") / 2,
                    "the dispatcher's halves copied in the kernel at the switch: " + why);
        }
    }
}

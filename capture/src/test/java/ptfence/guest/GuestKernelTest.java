package ptfence.guest;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The guest checks on the kernels users run, Debian 12's 6.1 and 6.12 ({@link GuestKernel}): each kernel boots once
 * and runs every check in {@link #checks()}; each check is then judged here as its own test. Boots are slow (TCG on a
 * 2-core machine), so a new check joins this boot rather than booting again, and the kernels boot at the same time
 * (each QEMU runs its guest on one host thread, and nothing else in this module runs while this test does;
 * {@code -Dptfence.guest.oneAtATime=true} boots them one after the other).
 */
class GuestKernelTest {
    /** Every check, in the order they run in the guest. */
    static List<GuestCheck> checks() {
        // By default the kinds whose every copy equals kcore's at issue 29's full counts in every run so far, as lanes
        // beside the BPF program churn (1000 programs, twice) under one ptrec (its start, ~2 min under TCG, once):
        // kprobes (100 rounds: 200 registrations, with their insn, optinsn and ftrace pages), static keys (200
        // flips), the XDP dispatcher (100 changes, its halves copied in the kernel at the switch), modules (25
        // rounds of dummy+veth: 50 loads, symbols copied at load; beside the XDP lane since the tracker places a
        // version arriving after a later one at its own time) and fentry/fexit trampolines (200 cycles, each image
        // copied in the kernel: at its build on 6.12, judged also where the copy comes after the loop passed the
        // attach poke, at its update on 6.1; a trampoline FREE ahead of the loop waits for it; docs/fence.md); half the
        // kprobe rounds go through the kprobe PMU (perf_event_open), and 20 ftrace users (a trace instance's function
        // tracer, function_graph) each make and free an ftrace trampoline.
        // -Dptfence.guest.fencePercent=N runs N% of every kind's counts (100: issue 29's), -Dptfence.guest.fenceChurns=
        // kind=N,... exact counts, -Dptfence.guest.churn=N the BPF churn's (0: none). The verifier's walk of the fence
        // programs is measured only when asked for (-Dptfence.guest.verifierCost=callbacks|both).
        List<GuestCheck> checks = new ArrayList<>(List.of(new BasicsCheck()));
        if (System.getProperty("ptfence.guest.verifierCost") != null) checks.add(new VerifierCostCheck());
        int churn = Integer.getInteger("ptfence.guest.churn", 1000);
        Integer percent = Integer.getInteger("ptfence.guest.fencePercent");
        int fencePercent = percent == null ? 0 : percent;
        String fenceChurns = System.getProperty("ptfence.guest.fenceChurns", percent == null ? DEFAULT_CHURNS : null);
        FenceChurnCheck fence = fenceChurns != null ? FenceChurnCheck.of(fenceChurns, churn, SHARED_RUN_BOUND)
                : FenceChurnCheck.scaled(fencePercent, churn, SHARED_RUN_BOUND);
        if (churn > 0) checks.add(new BpfChurnCheck(churn));
        if (churn > 0 || fenceChurns != null || fencePercent > 0) {
            checks.add(fence);
            checks.add(new PerfAttachCheck()); // held during the fence churn's ptrec
        }
        return checks;
    }

    /** The kinds churned when no count is asked for: those that pass at the full counts (above). */
    private static final String DEFAULT_CHURNS = "modules=25,kprobes=100,statickeys=200,xdp=100,fentry=200,ftrace=20";

    /**
     * The shared churn run's bound in the guest: a bound for a hung guest, not a speed goal (at the full counts it
     * took ~10-12 min under single-threaded TCG; the guest runs at whatever share of a core the host leaves it).
     */
    private static final int SHARED_RUN_BOUND = 1200;

    @TestFactory
    Stream<DynamicContainer> debian12() {
        List<GuestCheck> checks = checks();
        Map<String, FutureTask<GuestKernel.Boot>> boots = new LinkedHashMap<>();
        for (String meta : GuestKernel.kernels()) boots.put(meta, new FutureTask<>(() -> boot(meta, checks)));
        if (!Boolean.getBoolean("ptfence.guest.oneAtATime")) {
            boots.forEach((meta, task) -> {
                Thread t = new Thread(task, "guest " + meta);
                t.setDaemon(true);
                t.start();
            });
        }
        return boots.entrySet().stream()
                .map(e -> dynamicContainer(e.getKey(), onKernel(e.getKey(), e.getValue(), checks)));
    }

    /** Boots {@code meta} and runs every check in it (in a thread of its own, beside the other kernel's boot). */
    private static GuestKernel.Boot boot(String meta, List<GuestCheck> checks) throws Exception {
        GuestKernel k = GuestKernel.of(meta);
        // kept after the run (target/guest/<kernel>), for a look at what a failing check left
        Path out = Path.of("target", "guest", meta).toAbsolutePath();
        deleteTree(out);
        List<GuestKernel.Check> parts = checks.stream().map(GuestCheck::check).filter(Objects::nonNull).toList();
        // 300 s, or the checks' own bounds where they add up to more (the churns run for minutes)
        long bound = Math.max(GuestKernel.BOOT_BOUND.toSeconds(),
                60 + parts.stream().mapToLong(GuestKernel.Check::seconds).sum());
        GuestKernel.Boot b = k.boot(out, parts, java.time.Duration.ofSeconds(bound));
        System.out.printf("guest %s (%s): boot and %d checks in %.1f s%n", meta, k.release(), parts.size(),
                b.seconds());
        return b;
    }

    private Stream<DynamicNode> onKernel(String meta, FutureTask<GuestKernel.Boot> task, List<GuestCheck> checks) {
        GuestKernel.Boot[] boot = new GuestKernel.Boot[1];
        List<DynamicNode> tests = new ArrayList<>();
        tests.add(dynamicTest("boot", () -> {
            task.run(); // here, where the boots go one after the other; a no-op where its thread has it
            try {
                boot[0] = task.get();
            } catch (ExecutionException e) {
                throw e.getCause(); // a skip (no QEMU, no package) or the boot's own failure, as it was
            }
            assertFalse(boot[0].timedOut(), () -> "QEMU cut off after " + boot[0].seconds() + " s: " + tail(boot[0]));
            assertTrue(Files.exists(boot[0].out().resolve("release")), () -> "stage 2 never ran: " + tail(boot[0]));
        }));
        for (GuestCheck c : checks) {
            tests.add(dynamicTest(c.name(), () -> {
                GuestKernel.of(meta); // skips, with the reason, where the kernel cannot be had
                Assumptions.assumeTrue(boot[0] != null, "the guest did not boot");
                c.verify(boot[0]);
            }));
        }
        return tests.stream();
    }

    private static void deleteTree(Path p) throws java.io.IOException {
        if (!Files.exists(p)) return;
        try (Stream<Path> all = Files.walk(p)) {
            for (Path q : all.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(q);
        }
    }

    private static String tail(GuestKernel.Boot b) {
        try {
            String s = b.serial();
            return s.length() < 4000 ? s : s.substring(s.length() - 4000);
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }
}

package ptfence.guest;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The guest checks on the kernels users run, Debian 12's 6.1 and 6.12 ({@link GuestKernel}): each kernel boots once
 * and runs every check in {@link #checks()}; each check is then judged here as its own test. Boots are slow (TCG on a
 * loaded 2-core machine), so a new check joins this boot rather than booting again.
 */
class GuestKernelTest {
    /** Every check, in the order they run in the guest. */
    static List<GuestCheck> checks() {
        // The fence churn of the other text kinds (modules, kprobes, trampolines, XDP) runs only when asked for
        // (-Dptfence.guest.fencePercent=N, N% of issue 29's counts; -Dptfence.guest.fenceChurns=kind=N,... exact):
        // at the full counts a boot takes 9.3 min on 6.1 and 12.3 min on 6.12 (host load ~8-11; churns in three
        // lanes, kprobes the longest), ~22 min for both, past what CI has left, and not every trampoline and
        // dispatcher copy equals kcore's yet (docs/fence.md, guest runs). -Dptfence.guest.churn=0 leaves the BPF
        // churn out (a run for the other kinds alone).
        // 1000 programs per churn, issue 29's count: ~100 s more a kernel than 20 (ptrec's start and the JVMs' take
        // most of the boot under TCG, not the churn). The verifier's walk of the fence programs is measured only when
        // asked for (-Dptfence.guest.verifierCost=callbacks|both; docs/fence.md, Kernels).
        List<GuestCheck> checks = new ArrayList<>(List.of(new BasicsCheck()));
        if (System.getProperty("ptfence.guest.verifierCost") != null) checks.add(new VerifierCostCheck());
        int churn = Integer.getInteger("ptfence.guest.churn", 1000);
        if (churn > 0) checks.add(new BpfChurnCheck(churn));
        Integer fencePercent = Integer.getInteger("ptfence.guest.fencePercent");
        String fenceChurns = System.getProperty("ptfence.guest.fenceChurns"); // kind=N,... exactly (debugging)
        if (fenceChurns != null) checks.add(FenceChurnCheck.of(fenceChurns, 900));
        else if (fencePercent != null) checks.add(FenceChurnCheck.scaled(fencePercent, 900));
        return checks;
    }

    @TestFactory
    Stream<DynamicContainer> debian12() {
        return GuestKernel.kernels().stream().map(meta -> dynamicContainer(meta, onKernel(meta)));
    }

    private Stream<DynamicNode> onKernel(String meta) {
        List<GuestCheck> checks = checks();
        GuestKernel.Boot[] boot = new GuestKernel.Boot[1];
        List<DynamicNode> tests = new ArrayList<>();
        tests.add(dynamicTest("boot", () -> {
            GuestKernel k = GuestKernel.of(meta);
            // kept after the run (target/guest/<kernel>), for a look at what a failing check left
            Path out = Path.of("target", "guest", meta).toAbsolutePath();
            deleteTree(out);
            // 300 s, or the checks' own bounds where they add up to more (the fence churns run for minutes)
            long bound = Math.max(GuestKernel.BOOT_BOUND.toSeconds(),
                    60 + checks.stream().mapToLong(c -> c.check().seconds()).sum());
            boot[0] = k.boot(out, checks.stream().map(GuestCheck::check).toList(),
                    java.time.Duration.ofSeconds(bound));
            System.out.printf("guest %s (%s): boot and %d checks in %.1f s%n", meta, k.release(), checks.size(),
                    boot[0].seconds());
            assertFalse(boot[0].timedOut(), () -> "QEMU cut off after " + boot[0].seconds() + " s: " + tail(boot[0]));
            assertTrue(Files.exists(boot[0].out().resolve("release")), () -> "stage 2 never ran: " + tail(boot[0]));
        }));
        for (GuestCheck c : checks) {
            tests.add(dynamicTest(c.check().name(), () -> {
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

package ptfence.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the guest kernel's own verifier walks for the chunked fence programs (those kernels' copy path), and how long
 * it takes under TCG (it was thought to be most of ptrec's start there: it is ~1 s of ~150 s on 6.12, ~11 s on 6.1;
 * reading kallsyms and parsing the BTF, more than once each, and the JVM take the rest). Runs
 * {@code ptfence.fence.VerifierCost} with the loops as bpf_loop callbacks (what ptrec loads on 6.1 and 6.12;
 * {@code -Dptfence.guest.verifierCost=callbacks}) and unrolled too ({@code =both}). Judged: every program loads; with
 * both, the callbacks' FREE hook walks at least 10x fewer instructions than the unrolled one and their LOAD hook
 * fewer (6.12: 24 614 against 156 655; 6.1 prunes the LOAD hook's metadata branches far less: 537 925 against
 * 630 632).
 */
final class VerifierCostCheck implements GuestCheck {
    private final String how = System.getProperty("ptfence.guest.verifierCost", "callbacks");

    @Override
    public GuestKernel.Check check() {
        return new GuestKernel.Check("verifier-cost", 300, String.join("\n",
                GuestKernel.java("ptfence.fence.VerifierCost", how) + " > cost.txt",
                ""));
    }

    @Override
    public void verify(GuestKernel.Boot boot) throws Exception {
        assertEquals(0, boot.rc("verifier-cost"), boot.describe("verifier-cost"));
        List<String> lines = Files.readAllLines(boot.dir("verifier-cost").resolve("cost.txt"));
        Map<String, Integer> verified = new HashMap<>();
        for (String l : lines) {
            String[] f = l.split(" ");   // name how insns ms verified_insns
            verified.put(f[0] + " " + f[1], Integer.parseInt(f[4]));
            System.out.printf("guest %s verifier: %s %s: %s insns, %s ms, verified_insns %s%n",
                    boot.kernel().release(), f[0], f[1], f[2], f[3], f[4]);
        }
        assertTrue(verified.containsKey("load callbacks"), "the LOAD hook with bpf_loop: " + lines);
        if (how.equals("both")) {
            assertTrue(verified.get("free callbacks") * 10 < verified.get("free unrolled"), lines.toString());
            assertTrue(verified.get("load callbacks") < verified.get("load unrolled"), lines.toString());
        }
    }
}

package ptfence.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import ptfence.fence.GuestFenceCheck;

/**
 * The static-key lane of {@link FenceChurnCheck} (churn-statickeys.py): tracepoint keys flipped in core and module
 * text, every jump label site of the flipped key (and of the keys still enabled) copied from /proc/kcore after each
 * flip by a reader that found the sites in the kernel's own jump tables. {@link GuestFenceCheck} has already compared
 * each copy with the archive's version at its address and time (a TEXT_POKE region over core text, a version of the
 * module's region); here: every flip was made and did what it should in the kernel (the reader's own check of the
 * site bytes and the key's count), and every copy, core and module, was found equal.
 */
final class StaticKeyFlips {
    private StaticKeyFlips() {}

    /** @param kcore the lane's kcore folder (index, copies, and the reader's {@code flips} log) */
    static void verify(Path kcore, GuestFenceCheck.Result r, int flips, GuestKernel.Boot boot, String why)
            throws IOException {
        List<String> log = Files.readAllLines(kcore.resolve("flips"));
        List<String> done = log.stream().filter(l -> !l.startsWith("sites ")).toList();
        assertEquals(flips, done.size(), "static-key flips made: " + why);
        List<String> off = done.stream().filter(l -> !l.endsWith("expected=yes")).toList();
        assertTrue(off.isEmpty(), "flips whose sites or key the kernel left otherwise than asked: " + off + "; " + why);
        int core = 0, module = 0;
        for (String l : log) {
            if (!l.startsWith("sites ")) continue;
            int n = Integer.parseInt(l.split(" ")[2]);
            if (l.startsWith("sites core-")) core += n;
            else module += n;
        }
        long copies;
        try (var lines = Files.lines(kcore.resolve("index"))) {
            copies = lines.filter(l -> !l.isBlank()).count();
        }
        String line = String.format("static keys: %d flips, jump label sites core %d, module %d; kcore copies of "
                + "the sites equal to the archive %d/%d (core %d, module %d)", done.size(), core, module,
                r.equal("jl-"), copies, r.equal("jl-core-"), r.equal("jl-module-"));
        System.out.printf("guest %s: %s%n", boot.kernel().release(), line);
        List<String> differ = r.differ().stream().filter(d -> d.startsWith("jl-")).toList();
        line += "; differ: " + differ + "; not archived: "
                + r.missing().stream().filter(d -> d.startsWith("jl-")).toList();
        assertTrue(core > 0 && module > 0, "sites found in core and module text: " + line + "; " + why);
        assertEquals(copies, r.equal("jl-"), "every site copy equal to the archive: " + line + "; " + why);
        assertTrue(r.equal("jl-core-") > 0 && r.equal("jl-module-") > 0, line + "; " + why);
    }
}

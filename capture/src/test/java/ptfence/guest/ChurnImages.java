package ptfence.guest;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import ptfence.bpf.ProgInfo;
import ptfence.bpf.TestPrograms;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

/**
 * The churn with an independent witness: N socket filters {@code r0 = salt + i; exit}, each closed as soon as the
 * kernel has told its JIT image (BPF_OBJ_GET_INFO_BY_FD: the kernel's own dump of the bytes it runs, and where).
 * One line per program: {@code name id address tag hex-image}. Usage: {@code ChurnImages N PREFIX SALT FILE
 * [PURE_PREFIX]}: with PURE_PREFIX, then {@link ptfence.fence.Churn}'s N programs of the same instructions, closed right
 * after their load, in the same JVM (a JVM's start costs tens of seconds under the guest's TCG). Prints each churn's
 * wall time in ns, a line each.
 */
public final class ChurnImages {
    private ChurnImages() {}

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        String prefix = args[1];
        int salt = Integer.parseInt(args[2]);
        Bpf bpf = Bpf.get();
        HexFormat hex = HexFormat.of();
        long t0 = System.nanoTime();
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(Path.of(args[3])))) {
            for (int i = 0; i < n; i++) {
                String name = prefix + i;
                try (BpfFd fd = bpf.progLoad(TestPrograms.constant(name, salt + i))) {
                    ProgInfo info = ProgInfo.fetch(fd);
                    w.printf("%s %d %x %s %s%n", name, info.id(), info.jitedKsyms()[0], info.tagHex(),
                            hex.formatHex(info.functionImage(0)));
                }
            }
        }
        System.out.println(System.nanoTime() - t0);
        if (args.length > 4) System.out.println(ptfence.fence.Churn.run(n, args[4], salt));
    }
}

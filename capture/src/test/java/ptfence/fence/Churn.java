package ptfence.fence;

import ptfence.bpf.TestPrograms;
import ptfence.sys.Bpf;

/**
 * The churn load: N socket filters {@code r0 = i; exit}, named {@code <prefix><i>}, each closed right after
 * BPF_PROG_LOAD returns, so that each program lives only microseconds. Prints the loop's wall time in ns.
 * Usage: {@code java -cp ... ptfence.fence.Churn N PREFIX [SALT]}.
 */
public final class Churn {
    private Churn() {}

    public static long run(int n, String prefix, int salt) throws Exception {
        Bpf bpf = Bpf.get();
        // Warm the JIT paths and the facade before timing.
        for (int i = 0; i < 50; i++) bpf.progLoad(TestPrograms.constant("warm", -1 - i)).close();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) bpf.progLoad(TestPrograms.constant(prefix + i, salt + i)).close();
        return System.nanoTime() - t0;
    }

    /**
     * N programs as a compiler with -g would give them: each with its own BTF object, a func_info record per
     * function and a line record per instruction (maps, a subprogram and a tail call besides,
     * {@link TestPrograms#withMetadata}), each closed right after the load.
     */
    public static long runWithLines(int n, String prefix, int salt) throws Exception {
        Bpf bpf = Bpf.get();
        try (TestPrograms.Maps maps = TestPrograms.Maps.create("churnl")) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                ptfence.bpf.BpfAssembler code = TestPrograms.withMetadata(maps, salt + i);
                TestPrograms.Lines lines = TestPrograms.lines(code, prefix + i);
                try (var btf = bpf.btfLoad(lines.btf())) {
                    TestPrograms.loadWithLines(prefix + i, code, btf, lines.info()).close();
                }
            }
            return System.nanoTime() - t0;
        }
    }

    /** Usage: {@code Churn N PREFIX [SALT] [lines]}. */
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        String prefix = args.length > 1 ? args[1] : "churn";
        int salt = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        boolean lines = args.length > 3 && args[3].equals("lines");
        System.out.println(lines ? runWithLines(n, prefix, salt) : run(n, prefix, salt));
    }
}

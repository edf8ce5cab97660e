package ptfence.func;

import java.io.Writer;
import java.util.ArrayList;
import java.util.List;
import ptfence.image.Section;

/**
 * Throughput of the three views over many invocations (run: java -cp ... ptfence.func.FuncViewsBench [invocations]).
 * Invocations repeat FuncSummaryTest's hand-laid paths, 20 rounds each (~200 instructions), one call out per round.
 */
public final class FuncViewsBench {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        List<Invocation> templates = FuncSummaryTest.invocations().subList(0, 4);
        List<Invocation> all = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Invocation t = templates.get(i % 4);
            int rounds = 20;
            long[] path = new long[t.path().length * rounds];
            byte[] steps = new byte[path.length];
            List<Invocation.Call> calls = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                System.arraycopy(t.path(), 0, path, r * t.path().length, t.path().length);
                System.arraycopy(t.steps(), 0, steps, r * t.path().length, t.path().length);
                for (Invocation.Call c : t.calls()) {
                    calls.add(new Invocation.Call(c.index() + r * t.path().length, c.from(), c.target(), c.name(),
                            c.enter() + 10_000L * i, c.exit() + 10_000L * i, c.insns()));
                }
            }
            all.add(new Invocation(i % 8, 1, 1, "bpf_prog_x", 10_000L * i, 10_000L * i + 9_000, Invocation.End.RETURN,
                    path, steps, calls, List.of("bpf_prog_x")));
        }
        long insns = all.stream().mapToLong(Invocation::instructions).sum();
        List<Section> code = List.of(Section.of("main", FuncSummaryTest.B, FuncSummaryTest.mainCode()));
        SourceLines lines = SourceLines.of(SourceLinesTest.twoFunctions());
        System.out.printf("%-16s %12s %10s %14s%n", "view", "invocations", "ms", "insns/s");
        for (int round = 0; round < 3; round++) {
            long t0 = System.nanoTime();
            FuncSummary s = FuncSummary.of("bpf_prog_x", all, code, 10);
            long t1 = System.nanoTime();
            lines.profile(all);
            long t2 = System.nanoTime();
            PerfettoWriter.write("bpf_prog_x", all, Writer.nullWriter());
            long t3 = System.nanoTime();
            if (round == 2) {
                row("FuncSummary", n, t1 - t0, insns);
                row("SourceLines", n, t2 - t1, insns);
                row("PerfettoWriter", n, t3 - t2, insns);
                if (s.invocations() != n) throw new AssertionError();
            }
        }
    }

    private static void row(String name, int n, long ns, long insns) {
        System.out.printf("%-16s %12d %10.1f %14.3e%n", name, n, ns / 1e6, insns / (ns / 1e9));
    }
}

package ptfence.ptrec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;

/**
 * Bench (not a test): another process churns N programs (loaded and closed at once) while {@code ptrec
 * --sideband-only -a} and {@code perf record -e dummy -a} record the same run. Prints how many of the N each kept
 * (ptrec: distinct archived images; perf: bpf_prog_info entries in its header) and the churn's slowdown per
 * program against a run with no recorder. Needs root and perf.
 * Usage: {@code java -cp <test classpath> ptfence.ptrec.PtrecBench [N...]} (default 1000 10000).
 */
public final class PtrecBench {
    private PtrecBench() {}

    public static void main(String[] args) throws Exception {
        List<Integer> sizes = new ArrayList<>();
        for (String a : args) sizes.add(Integer.parseInt(a));
        if (sizes.isEmpty()) sizes = List.of(1000, 10000);
        System.out.println("| churn N | ptrec archived | ptrec header | perf header | churn alone | churn recorded | cost/program |");
        System.out.println("|---|---|---|---|---|---|---|");
        for (int n : sizes) {
            Path tmp = Files.createTempDirectory("ptrec-bench");
            String prefix = "pb" + n + "_";
            long alone = churn(n, "pa" + n + "_");
            Process perf = new ProcessBuilder("perf", "record", "-q", "-e", "dummy", "-a", "-o",
                    tmp.resolve("perf.data").toString()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            PtrecJvm.Running ptrec = PtrecJvm.start("--sideband-only", "-a", "-v", "-o",
                    tmp.resolve("ptrec.data").toString(), "--archive", tmp.resolve("archive").toString());
            Thread.sleep(500);
            long recorded = churn(n, prefix);
            Thread.sleep(3000); // FREE images trail close() by an RCU grace period and a workqueue hop
            PtrecJvm.signal(perf, "INT");
            PtrecJvm.signal(ptrec.process(), "INT");
            perf.waitFor(120, TimeUnit.SECONDS);
            ptrec.waitForLog();
            Set<String> archived = new HashSet<>();
            try (Archive a = Archive.open(tmp.resolve("archive"))) {
                for (Region r : a.read(s -> RegionIndex.all(s, x -> x.name().contains("_" + prefix)))) {
                    archived.add(r.name());
                }
            }
            long ptrecHeader = countHeader(tmp.resolve("ptrec.data"), prefix);
            long perfHeader = countHeader(tmp.resolve("perf.data"), prefix);
            System.out.printf("| %d | %d | %d | %d | %.3f s | %.3f s | %.2f µs |%n", n, archived.size(), ptrecHeader,
                    perfHeader, alone / 1e9, recorded / 1e9, (recorded - alone) / 1e3 / n);
            String log = ptrec.log().toString();
            log.lines().filter(l -> l.contains("fence images") || l.contains("lost records")).forEach(System.out::println);
        }
    }

    private static long countHeader(Path data, String prefix) {
        PtrecJvm.Result r = PtrecJvm.run(List.of("perf", "report", "--header-only", "-I", "-i", data.toString()));
        return r.out().lines().filter(l -> l.startsWith("# bpf_prog_info") && l.contains("_" + prefix)).count();
    }

    /** Runs ptfence.fence.Churn in its own JVM; returns its loop's wall time in ns. */
    private static long churn(int n, String prefix) throws Exception {
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                System.getProperty("java.class.path"), "ptfence.fence.Churn", Integer.toString(n), prefix)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        p.waitFor();
        return Long.parseLong(out);
    }
}

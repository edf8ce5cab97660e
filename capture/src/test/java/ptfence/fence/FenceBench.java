package ptfence.fence;

import ptfence.bpf.ProgInfo;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Bench (not a test): another process churns N programs while the fence runs and {@code perf record -e dummy -a}
 * records the same run. Prints what each kept, then the fence's overhead per program (churn wall time with and
 * without the fence, interleaved runs, medians). Needs root and perf.
 * <pre>java -cp capture/target/test-classes:capture/target/classes:capture/target/lib/* ptfence.fence.FenceBench 1000 10000</pre>
 */
public final class FenceBench {
    private static final Pattern PERF_PROG = Pattern.compile("bpf_prog_info \\d+: bpf_prog_([0-9a-f]{16})");

    public static void main(String[] args) throws Exception {
        int[] sizes = args.length == 0 ? new int[] {1000, 10000} : java.util.Arrays.stream(args).mapToInt(Integer::parseInt).toArray();
        int overheadRuns = Integer.getInteger("runs", 7);
        System.out.println("| churn N | fence LOAD | fence FREE | perf record -e dummy -a | fence losses |");
        System.out.println("|---|---|---|---|---|");
        int salt = 1_000_000;
        for (int n : sizes) {
            String prefix = "bch" + n + "_";
            CollectingSink sink = new CollectingSink();
            Path perfData = Files.createTempFile("fence-bench", ".data");
            FenceCounters c;
            try (TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false), sink)) {
                Process perf = new ProcessBuilder("perf", "record", "-q", "-e", "dummy", "-a", "-o", perfData.toString())
                        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                Thread.sleep(1500); // perf has opened its events
                churnProcess(n, prefix, salt);
                Thread.sleep(500);
                new ProcessBuilder("kill", "-INT", Long.toString(perf.pid())).start().waitFor();
                perf.waitFor();
                fence.awaitQuiet(Duration.ofSeconds(2), Duration.ofSeconds(120));
                c = fence.counters();
            }
            Set<String> tags = new HashSet<>();
            int load = 0, free = 0;
            for (CapturedText t : sink.all) {
                if (!t.name().contains("_" + prefix)) continue;
                if (t.hook() == Hook.LOAD) { load++; tags.add(ProgInfo.tagHex(t.tag())); }
                if (t.hook() == Hook.FREE) free++;
            }
            int perfKept = perfPrograms(perfData, tags);
            Files.deleteIfExists(perfData);
            System.out.printf("| %d | %d/%d | %d/%d | %d/%d | %d |%n", n, load, n, free, n, perfKept, n, c.losses());
            salt += n;
        }

        // Parallel loaders, and the user-space fallback on the same churn.
        {
            int procs = 4, per = 2500;
            CollectingSink sink = new CollectingSink();
            FenceCounters c;
            try (TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false), sink)) {
                List<Thread> ts = new ArrayList<>();
                for (int p = 0; p < procs; p++) {
                    int pp = p, sl = salt + p * per;
                    Thread t = new Thread(() -> {
                        try {
                            churnProcess(per, "par" + pp + "_", sl);
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    });
                    t.start();
                    ts.add(t);
                }
                for (Thread t : ts) t.join();
                fence.awaitQuiet(Duration.ofSeconds(2), Duration.ofSeconds(120));
                c = fence.counters();
            }
            salt += procs * per;
            long load = sink.all.stream().filter(t -> t.hook() == Hook.LOAD && t.name().contains("_par")).count();
            long free = sink.all.stream().filter(t -> t.hook() == Hook.FREE && t.name().contains("_par")).count();
            System.out.printf("| %d × %d in parallel | %d/%d | %d/%d | – | %d |%n", procs, per, load, procs * per, free,
                    procs * per, c.losses());
        }
        for (int n : sizes) for (Duration poll : List.of(Duration.ofNanos(20_000), Duration.ZERO)) {
            CollectingSink sink = new CollectingSink();
            FenceCounters c;
            try (TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false).withInKernel(false)
                    .withUserSpacePoll(poll), sink)) {
                churnProcess(n, "usr" + n + "_", salt);
                try (var sentinel = ptfence.sys.Bpf.get().progLoad(ptfence.bpf.TestPrograms.constant("usr_end", 0))) {
                    Thread.sleep(200); // the last gap shows once a later id exists
                }
                c = fence.counters();
            }
            salt += n;
            long got = sink.all.stream().filter(t -> t.name().contains("_usr" + n + "_")).count();
            System.out.printf("| user-space fallback (%s), churn %d | %d/%d (pinned by id) | – | – | %d counted missed |%n",
                    poll.isZero() ? "spinning" : "parks " + poll.toNanos() / 1000 + " µs", n, got, n, c.userSpaceMissed());
        }

        // Into the archive: every image a region, closed at its FREE.
        {
            int n = sizes[sizes.length - 1];
            Path dir = Files.createTempDirectory("fence-bench-archive");
            String boot = RegionTracker.currentBootId();
            try (ptfence.store.Archive archive = ptfence.store.Archive.open(dir)) {
                archive.write(b -> {
                    ptfence.recording.Recordings.register(b, ptfence.recording.Recording.started("bench", "", boot, 0));
                    return null;
                });
                long t0, t1;
                FenceCounters c;
                ArchiveSink sink = new ArchiveSink(archive, "bench");
                try (TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false),
                        new RegionTracker(boot, sink))) {
                    t0 = System.nanoTime();
                    churnProcess(n, "arcb_", salt);
                    fence.awaitQuiet(Duration.ofSeconds(2), Duration.ofSeconds(120));
                    t1 = System.nanoTime();
                    c = fence.counters();
                }
                sink.close();
                long regions = archive.read(s -> ptfence.recording.Recordings.regions(s, "bench")).stream()
                        .filter(r -> r.name().contains("_arcb_") && !r.isOpen()).count();
                System.out.printf("| churn %d into the archive | %d closed regions | %d commits | %.1f s incl. 2 s drain | %d |%n",
                        n, regions, sink.commits(), (t1 - t0) / 1e9, c.losses());
            } finally {
                try (var w = Files.walk(dir)) {
                    w.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
            salt += n;
        }

        System.out.println();
        int n = 10_000;
        List<Long> without = new ArrayList<>(), with = new ArrayList<>();
        long loadRuns = 0, loadNs = 0, freeRuns = 0, freeNs = 0;
        for (int r = 0; r < overheadRuns; r++) {
            without.add(churnProcess(n, "ovh", salt));
            try (TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false), t -> {});
                 var stats = ptfence.sys.Bpf.get().enableRunTimeStats()) {
                var before = fence.hookRunStats();
                with.add(churnProcess(n, "ovh", salt));
                fence.awaitQuiet(Duration.ofSeconds(2), Duration.ofSeconds(60));
                var after = fence.hookRunStats();
                loadRuns += after.get(Hook.LOAD).runs() - before.get(Hook.LOAD).runs();
                loadNs += after.get(Hook.LOAD).runTimeNs() - before.get(Hook.LOAD).runTimeNs();
                freeRuns += after.get(Hook.FREE).runs() - before.get(Hook.FREE).runs();
                freeNs += after.get(Hook.FREE).runTimeNs() - before.get(Hook.FREE).runTimeNs();
            }
        }
        long a = median(without), b = median(with);
        System.out.printf("| churn %d (median of %d, another process) | wall |%n|---|---|%n", n, overheadRuns);
        System.out.printf("| no fence | %.3f s [%s] |%n", a / 1e9, range(without));
        System.out.printf("| in-kernel fence (LOAD+FREE) | %.3f s [%s] |%n", b / 1e9, range(with));
        System.out.printf("%nfence overhead per program (load + unload, wall): %.2f µs%n", (b - a) / 1e3 / n);
        System.out.printf("BPF run time: LOAD hook %.0f ns per run over %d runs (every syscall exit), "
                        + "%.2f µs per churned program; FREE hook %.2f µs per churned program (%d runs)%n",
                (double) loadNs / Math.max(1, loadRuns), loadRuns, loadNs / 1e3 / n / overheadRuns,
                freeNs / 1e3 / n / overheadRuns, freeRuns);

        // The LOAD hook's tax on every other syscall: a null syscall with and without the fence.
        long[] nullCall = new long[2];
        for (int r = 0; r < 3; r++) {
            nullCall[0] += nullSyscallNs(2_000_000);
            try (TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false), t -> {})) {
                nullCall[1] += nullSyscallNs(2_000_000);
            }
        }
        System.out.printf("null syscall (getppid via jnr, 3 x 2M): %.0f ns without, %.0f ns with the fence (+%.0f ns)%n",
                nullCall[0] / 3.0, nullCall[1] / 3.0, (nullCall[1] - nullCall[0]) / 3.0);
    }

    public interface LibC {
        int getppid();
    }

    static long nullSyscallNs(int calls) {
        LibC libc = jnr.ffi.LibraryLoader.create(LibC.class).load("c");
        for (int i = 0; i < 100_000; i++) libc.getppid();
        long t0 = System.nanoTime();
        for (int i = 0; i < calls; i++) libc.getppid();
        return (System.nanoTime() - t0) / calls;
    }

    /** Runs {@link Churn} in another JVM and returns its loop time in ns. */
    static long churnProcess(int n, String prefix, int salt) throws Exception {
        String cp = System.getProperty("java.class.path");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", cp, Churn.class.getName(), Integer.toString(n), prefix, Integer.toString(salt))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            out = r.readLine();
        }
        if (p.waitFor() != 0 || out == null) throw new IllegalStateException("churn failed");
        return Long.parseLong(out.trim());
    }

    /** Entries of perf's BPF_PROG_INFO header section whose tag is one of ours. */
    static int perfPrograms(Path perfData, Set<String> tags) throws Exception {
        Process p = new ProcessBuilder("perf", "report", "--header-only", "-I", "-i", perfData.toString())
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        int n = 0;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            String line;
            while ((line = r.readLine()) != null) {
                Matcher m = PERF_PROG.matcher(line);
                if (m.find() && tags.contains(m.group(1))) n++;
            }
        }
        p.waitFor();
        return n;
    }

    private static long median(List<Long> xs) {
        List<Long> s = new ArrayList<>(xs);
        Collections.sort(s);
        return s.get(s.size() / 2);
    }

    private static String range(List<Long> xs) {
        return String.format("%.3f–%.3f", Collections.min(xs) / 1e9, Collections.max(xs) / 1e9);
    }

}

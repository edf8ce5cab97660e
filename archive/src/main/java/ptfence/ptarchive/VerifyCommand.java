package ptfence.ptarchive;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import ptfence.cli.BadInputException;
import ptfence.cli.JavaChild;
import ptfence.cli.Progress;
import ptfence.recording.Recordings;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;
import ptfence.store.LmdbFile;
import ptfence.store.Verifier;

@Command(name = "verify", mixinStandardHelpOptions = true, description = {
        "Check the archive: first every page of data.mdb (page numbers, flags, bounds, node offsets, overflow runs, key "
                + "order, entry counts) with plain reads, then, in a child process, re-hash every image and check every "
                + "region, index entry and recording through LMDB. A damaged file therefore ends in one line, even one "
                + "that would crash LMDB."},
        footer = {"", "Exit status: 0 all good, 1 damaged images or records (each listed), 2 the archive cannot be read "
                + "(damaged pages, cut short, not an archive; one line).",
                "", "Examples:", "  ptarchive verify", "  ptarchive verify --archive /mnt/backup/ptfence-archive", ""})
final class VerifyCommand extends ArchiveSubcommand implements Callable<Integer> {
    /** Exit status when damage was found. */
    static final int EXIT_DAMAGED = 1;

    @Option(names = "--in-process", hidden = true,
            description = "Skip the page check and verify through LMDB in this process (what the child runs).")
    boolean inProcess;
    @Option(names = "--progress", negatable = true, description = "Report progress on stderr (default: when stderr is "
            + "a terminal).")
    Boolean progress;

    @Option(names = "--report-to-parent", hidden = true,
            description = "Print a last line on stdout when exiting normally (the parent's proof the child did not crash).")
    boolean reportToParent;

    /**
     * The child's last line on a normal exit, from a shutdown hook: a JVM that crashes without a core dump exits
     * with status 1, verify's "damage found", so the status alone cannot tell a crash.
     */
    static final String CHILD_DONE = "ptfence-verify-child-done";

    @Override
    public Integer call() throws IOException, InterruptedException {
        if (inProcess) {
            if (reportToParent) {
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    System.out.println(CHILD_DONE);
                    System.out.flush();
                }));
            }
            return throughLmdb();
        }
        Path dir = archive.resolve(parent).toAbsolutePath();
        LmdbFile.Report pages = Archive.inspect(dir, true);
        return inChild(dir, pages);
    }

    /** Runs the LMDB part in a child JVM: if LMDB crashes on what the page check let through, this process reports it. */
    private int inChild(Path dir, LmdbFile.Report pages) throws IOException, InterruptedException {
        List<String> jvm = new ArrayList<>(List.of("-XX:ErrorFile=/dev/null", "-XX:+SuppressFatalErrorMessage"));
        String lockTimeout = System.getProperty("ptfence.lockTimeout");
        if (lockTimeout != null) {
            jvm.add("-Dptfence.lockTimeout=" + lockTimeout);
        }
        List<String> cmd = JavaChild.command(jvm, PtarchiveCommand.class.getName(), List.of("verify", "--in-process", "--report-to-parent",
                Progress.wanted(progress) ? "--progress" : "--no-progress", "--archive", dir.toString()));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        boolean terminal = Progress.stderrIsTerminal();
        if (terminal) {
            // the child's progress then rewrites its line in place, as this process's would
            spec.commandLine().getErr().flush();
            pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        }
        Process child = pb.start();
        child.getOutputStream().close();
        boolean[] done = {false};
        Thread out = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    if (line.equals(CHILD_DONE)) {
                        done[0] = true;
                    } else {
                        out().println(line);
                    }
                }
            } catch (IOException e) {
                // the child went away
            }
        }, "verify-child-stdout");
        out.start();
        Thread err = terminal ? null : copy(child.getErrorStream(), spec.commandLine().getErr());
        int exit = child.waitFor();
        out.join();
        if (err != null) {
            err.join();
        }
        out().flush();
        spec.commandLine().getErr().flush();
        if (!done[0]) {
            throw new BadInputException("archive " + dir + ": damaged: LMDB crashed (" + (exit > 128 ? "signal "
                    + (exit - 128) : "exit status " + exit) + ") reading it although its " + pages.treePages()
                    + " tree pages passed the page check; 'ptarchive export' may still save recordings");
        }
        return exit;
    }

    private static Thread copy(InputStream from, PrintWriter to) {
        Thread t = new Thread(() -> {
            try (Reader r = new InputStreamReader(from, StandardCharsets.UTF_8)) {
                char[] buf = new char[8192];
                for (int n; (n = r.read(buf)) > 0; ) {
                    synchronized (to) {
                        to.write(buf, 0, n);
                        to.flush();
                    }
                }
            } catch (IOException e) {
                // the child went away: what it wrote so far has been passed on
            }
        }, "verify-child-output");
        t.start();
        return t;
    }

    private int throughLmdb() {
        PrintWriter out = out();
        PrintWriter err = spec.commandLine().getErr();
        List<String> problems = new ArrayList<>();
        try (Archive a = openArchiveReadOnly();
                Progress p = Progress.start(err, "verify", Progress.wanted(progress))) {
            long[] hashed = {0};
            String summary = a.read(s -> {
                Verifier.Counts images = Verifier.images(s, problems::add, p);
                hashed[0] = images.images();
                p.phase("checking regions and recordings", 0);
                long regions = RegionIndex.check(s, problems::add);
                long unchecked = RegionIndex.unchecked(s) + Recordings.unchecked(s);
                long recordings = Recordings.check(s, problems::add);
                return images.images() + " images (" + Units.bytes(images.bytes()) + ") re-hashed, " + regions
                        + " regions, " + recordings + " recordings checked" + (unchecked == 0 ? "" : " ("
                        + unchecked + " records written before records carried checksums: read unchecked)");
            });
            p.phase("re-hashed images", hashed[0]);
            p.add(hashed[0]);
            p.done();
            for (String problem : problems) {
                err.println("ptarchive verify: " + problem);
            }
            if (problems.isEmpty()) {
                out.println("ok: " + summary);
            } else {
                out.println("DAMAGED: " + problems.size() + " problem(s); " + summary);
            }
        }
        out.flush();
        err.flush();
        return problems.isEmpty() ? 0 : EXIT_DAMAGED;
    }
}

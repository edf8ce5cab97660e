package ptfence.record;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.SampleId;

/**
 * perf's synthesized task events (perf_event__synthesize_threads): tasks that exist before the recording produce no
 * COMM or MMAP2 of their own, so they are read from /proc at the start — a COMM per thread, an MMAP2 per executable
 * mapping of the process (perf's default; data mappings only with its --data) — and their code maps like that of
 * tasks started afterwards. Kernel threads have no mappings. A task that exits meanwhile, or whose maps cannot be
 * read, is skipped, as perf skips it.
 */
final class ExistingTasks {
    private static final int MISC_USER = 2; // PERF_RECORD_MISC_USER
    private static final int PROT_READ = 1, PROT_WRITE = 2, PROT_EXEC = 4, MAP_SHARED = 1, MAP_PRIVATE = 2;

    private final Path proc;

    ExistingTasks(Path proc) {
        this.proc = proc;
    }

    /** The processes (thread group ids) in /proc, ascending. */
    List<Integer> processes() throws IOException {
        List<Integer> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(proc)) {
            for (Path p : ds) {
                Integer n = number(p.getFileName().toString());
                if (n != null) out.add(n);
            }
        }
        out.sort(null);
        return out;
    }

    /**
     * The COMM records of process {@code tgid}'s threads, then the MMAP2 records of its executable mappings;
     * empty when it is gone. {@code sampleId} gives each record's trailer from (pid, tid).
     */
    List<PerfRecord> records(int tgid, SampleIds sampleId) {
        List<PerfRecord> out = new ArrayList<>();
        try {
            List<Integer> tids = new ArrayList<>();
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(proc.resolve(tgid + "/task"))) {
                for (Path p : ds) {
                    Integer n = number(p.getFileName().toString());
                    if (n != null) tids.add(n);
                }
            }
            tids.sort(null);
            for (int tid : tids) {
                String comm = Files.readString(proc.resolve(tgid + "/task/" + tid + "/comm"), StandardCharsets.UTF_8);
                out.add(new PerfRecord.Comm(0, tgid, tid, comm.strip(), sampleId.of(tgid, tid)));
            }
        } catch (IOException e) {
            return List.of(); // gone (or never a process): nothing of it to describe
        }
        List<String> maps;
        try {
            maps = Files.readAllLines(proc.resolve(tgid + "/maps"), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return out; // its names still help; perf goes on without the maps too
        }
        for (String line : maps) {
            PerfRecord.Mmap2 m = mmap2(line, tgid, sampleId.of(tgid, tgid));
            if (m != null) out.add(m);
        }
        return out;
    }

    /** The trailer of a synthesized record of task (pid, tid). */
    @FunctionalInterface
    interface SampleIds {
        SampleId of(int pid, int tid);
    }

    /**
     * One line of /proc/PID/maps ({@code start-end perms offset maj:min inode   name}) as perf synthesizes it, or null
     * when the mapping is not executable. An anonymous mapping is named {@code //anon}, as perf names it.
     */
    static PerfRecord.Mmap2 mmap2(String line, int pid, SampleId sid) {
        String[] f = line.trim().split("\\s+", 6);
        if (f.length < 5 || f[1].length() < 4 || f[1].charAt(2) != 'x') return null;
        int dash = f[0].indexOf('-'), colon = f[3].indexOf(':');
        if (dash < 0 || colon < 0) return null;
        try {
            long start = Long.parseUnsignedLong(f[0].substring(0, dash), 16);
            long end = Long.parseUnsignedLong(f[0].substring(dash + 1), 16);
            long pgoff = Long.parseUnsignedLong(f[2], 16);
            int maj = Integer.parseInt(f[3].substring(0, colon), 16), min = Integer.parseInt(f[3].substring(colon + 1), 16);
            long ino = Long.parseUnsignedLong(f[4]);
            String perms = f[1];
            int prot = (perms.charAt(0) == 'r' ? PROT_READ : 0) | (perms.charAt(1) == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
            int flags = perms.charAt(3) == 's' ? MAP_SHARED : MAP_PRIVATE;
            String name = f.length == 6 && !f[5].isBlank() ? f[5].strip() : "//anon";
            return new PerfRecord.Mmap2(MISC_USER, pid, pid, start, end - start, pgoff, maj, min, ino, 0, prot, flags,
                    name, sid);
        } catch (NumberFormatException e) {
            return null; // not a maps line
        }
    }

    private static Integer number(String s) {
        if (s.isEmpty() || s.length() > 10) return null;
        for (int i = 0; i < s.length(); i++) if (s.charAt(i) < '0' || s.charAt(i) > '9') return null;
        long v = Long.parseLong(s);
        return v > Integer.MAX_VALUE ? null : (int) v;
    }
}

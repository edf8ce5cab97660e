package ptfence.record;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import ptfence.jit.JitProcesses;

/**
 * The JIT files a recording needs, kept beside it: each jitdump a process mapped (a JIT announces its
 * {@code jit-PID.dump} by mapping it executable, so its MMAP is in the recording) and the {@code perf-PID.map} of
 * each process with anonymous executable memory. perf record leaves them where the JIT wrote them and needs
 * {@code perf inject --jit} afterwards; ptrec copies them once the recording ends (the JIT has written them by then,
 * a JVM's map only at its exit), so ptdecode finds them next to the perf.data, on this machine or another.
 */
final class JitFiles {
    /** Recorded jitdump paths by the process that mapped them. */
    private final Map<String, Integer> dumps = new LinkedHashMap<>();
    private final Set<Integer> anonymous = new LinkedHashSet<>();

    /** A PERF_RECORD_MMAP or MMAP2 as the kernel wrote it (header first). */
    void record(ByteBuffer rec, int type, int size) {
        int nameAt = type == ptfence.perfdata.RecordTypes.MMAP ? 40 : 72;
        if (size <= nameAt) {
            return;
        }
        int end = nameAt;
        while (end < size && rec.get(end) != 0) {
            end++;
        }
        byte[] name = new byte[end - nameAt];
        rec.get(nameAt, name);
        mapped(rec.getInt(8), new String(name, StandardCharsets.UTF_8));
    }

    /** Process {@code pid} mapped {@code file} executable. */
    void mapped(int pid, String file) {
        if (JitProcesses.dumpPid(file) >= 0) {
            dumps.putIfAbsent(file, pid);
        } else if (JitProcesses.anonymous(file)) {
            anonymous.add(pid);
        }
    }

    /**
     * Copies the files into {@code dir}; returns the names copied, and adds a line to {@code problems} for each that
     * could not be (a map is copied only where the JIT wrote one).
     */
    List<String> keep(Path dir, List<String> problems) {
        List<String> kept = new ArrayList<>();
        dumps.forEach((file, pid) -> {
            // the process's own view first (another mount namespace: a container's /tmp)
            Path own = Path.of("/proc/" + pid + "/root" + file);
            Path p = Files.isRegularFile(own) ? own : Path.of(file);
            copy(p, dir, kept, problems, true);
        });
        for (int pid : anonymous) {
            Path own = Path.of("/proc/" + pid + "/root/tmp/perf-" + pid + ".map");
            Path p = Files.isRegularFile(own) ? own : Path.of("/tmp/perf-" + pid + ".map");
            copy(p, dir, kept, problems, false);
        }
        return kept;
    }

    private static void copy(Path from, Path dir, List<String> kept, List<String> problems, boolean needed) {
        Path to = dir.resolve(from.getFileName());
        try {
            if (!Files.isRegularFile(from)) {
                if (needed) {
                    problems.add(from + ": not found (the JIT code it describes will be missing)");
                }
                return;
            }
            if (Files.exists(to) && Files.isSameFile(from, to)) {
                kept.add(to.getFileName().toString()); // recorded into the directory the JIT writes to
                return;
            }
            Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
            kept.add(to.getFileName().toString());
        } catch (IOException e) {
            problems.add(from + ": could not copy to " + dir + " (" + e.getMessage() + ")");
        }
    }
}

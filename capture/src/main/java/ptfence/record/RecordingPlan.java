package ptfence.record;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import ptfence.pmu.IntelPtPmu;

/**
 * What one ptrec run records.
 *
 * @param output        the perf.data to write
 * @param archive       the archive directory, or null to archive nothing (and run no fence)
 * @param cpus          CPUs to trace (system-wide or -C); ignored for task targets, whose events follow the task
 * @param systemWide    -a or -C: whole CPUs, even when a command is given (it then only says when to stop)
 * @param pid           a task to trace (-p), or -1
 * @param command       a command to start and trace with its children (-- CMD ARGS), or empty
 * @param pt            the intel_pt PMU and its config, or null for --sideband-only
 * @param ptConfig      the config word ({@link ptfence.pmu.PtConfig#config()})
 * @param kernelFilter  address filters in the kernel's syntax, or empty
 * @param auxPages      AUX area per CPU, in pages (a power of two)
 * @param snapshot      -S: AUX in overwrite mode, copied out on SIGUSR2
 * @param fence         run the text fence (needs root and the archive)
 * @param flushInterval how often the perf.data header is rewritten, so a killed ptrec leaves a valid file
 * @param cmdline       ptrec's own command line, for the CMDLINE feature
 * @param perfClock     stamp records with perf's own clock (as intel_pt requires, so always with PT) rather than
 *                      CLOCK_MONOTONIC; the fence's times are then converted (an expert switch for sideband-only,
 *                      to exercise the PT path where there is no PT)
 * @param bpfOutput     perf event array maps (ids or pinned paths) to record programs' bpf_perf_event_output() from
 *                      ({@link BpfOutputMaps})
 */
public record RecordingPlan(Path output, Path archive, int[] cpus, boolean systemWide, int pid, List<String> command, IntelPtPmu pt,
                            long ptConfig, String kernelFilter, int auxPages, boolean snapshot, boolean fence,
                            Duration flushInterval, List<String> cmdline, boolean perfClock, boolean kernelText,
                            List<String> bpfOutput) {
    public RecordingPlan(Path output, Path archive, int[] cpus, boolean systemWide, int pid, List<String> command,
            IntelPtPmu pt, long ptConfig, String kernelFilter, int auxPages, boolean snapshot, boolean fence,
            Duration flushInterval, List<String> cmdline, boolean perfClock, boolean kernelText) {
        this(output, archive, cpus, systemWide, pid, command, pt, ptConfig, kernelFilter, auxPages, snapshot, fence,
                flushInterval, cmdline, perfClock, kernelText, List.of());
    }

    public RecordingPlan {
        bpfOutput = List.copyOf(bpfOutput);
        perfClock = perfClock || pt != null;
        command = List.copyOf(command);
        cmdline = List.copyOf(cmdline);
        cpus = cpus.clone();
        kernelFilter = kernelFilter == null ? "" : kernelFilter;
    }

    public boolean sidebandOnly() {
        return pt == null;
    }

    /** True when events follow a task (-p or a command) rather than whole CPUs. */
    public boolean taskTarget() {
        return !systemWide && (pid >= 0 || !command.isEmpty());
    }

    @Override
    public int[] cpus() {
        return cpus.clone();
    }
}

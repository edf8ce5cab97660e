package ptfence.ptdecode;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import picocli.CommandLine.Option;
import ptfence.cli.BadInputException;

/**
 * The whole-recording view's options for what each line names (source line, file) and which threads it shows (a
 * mixin of {@link PtdecodeCommand}).
 */
public final class ThreadOptions {
    @Option(names = "--srcline", description = "Show each instruction's source file:line (DWARF line info of the "
            + "mapped files or --vmlinux), as perf script -F +srcline.")
    boolean srcline;

    @Option(names = "--dso", description = "Name each instruction's file too: the mapped file as recorded, "
            + "[kernel.kallsyms] or the BPF program (\"dso\" in jsonl, \"(dso)\" after the symbol in text).")
    boolean dso;

    @Option(names = "--pid", paramLabel = "PIDS", split = ",", description = "Only these processes (1,2).")
    List<String> pids;

    @Option(names = "--tid", paramLabel = "TIDS", split = ",", description = "Only these threads (1,2).")
    List<String> tids;

    @Option(names = {"--comm", "--comms", "-c"}, paramLabel = "NAMES", split = ",", description = "Only threads of these names "
            + "(as perf script --comms).")
    List<String> comms;

    @Option(names = "--per-thread", description = "Group the output by thread (by pid, then tid), each thread's flow "
            + "in time order.")
    boolean perThread;

    private Set<Integer> pidSet;
    private Set<Integer> tidSet;
    private Set<String> commSet;

    /** Checks the lists once (bad input: exit 2). */
    ThreadOptions validate() {
        pidSet = ints("--pid", pids);
        tidSet = ints("--tid", tids);
        commSet = comms == null ? null : new LinkedHashSet<>(comms);
        return this;
    }

    /** True if any filter is set (a line with unknown thread is then left out). */
    boolean filters() {
        return pidSet != null || tidSet != null || commSet != null;
    }

    boolean accepts(int pid, int tid, String comm) {
        return (pidSet == null || pidSet.contains(pid)) && (tidSet == null || tidSet.contains(tid))
                && (commSet == null || comm != null && commSet.contains(comm));
    }

    /**
     * One line for stderr when --pid, --tid or --comm match no thread the recording names (its COMM, FORK and switch
     * records), else null: an empty listing would otherwise look like a trace without code.
     */
    String unmatched(ptfence.sideband.Sideband sideband) {
        if (!filters()) {
            return null;
        }
        java.util.Map<Integer, java.util.Set<String>> seen = sideband.threads();
        if (accepts(0, 0, "swapper")) {
            return null; // the idle task runs on every CPU
        }
        java.util.Set<String> named = new java.util.LinkedHashSet<>();
        for (var e : seen.entrySet()) {
            int tid = e.getKey();
            int pid = sideband.pidOf(tid);
            // a thread never named is perf's ":tid", the idle task "swapper"
            java.util.Set<String> names = e.getValue().isEmpty()
                    ? java.util.Collections.singleton(tid == 0 ? "swapper" : ":" + tid) : e.getValue();
            for (String comm : names) {
                if (accepts(pid, tid, comm)) {
                    return null;
                }
            }
            if (!e.getValue().isEmpty() && tid > 0) {
                named.add(pid + "/" + tid + " " + String.join("/", e.getValue()));
            }
        }
        List<String> known = named.stream().limit(8).toList();
        List<String> asked = new java.util.ArrayList<>();
        if (pids != null) {
            asked.add("--pid " + String.join(",", pids));
        }
        if (tids != null) {
            asked.add("--tid " + String.join(",", tids));
        }
        if (comms != null) {
            asked.add("--comm " + String.join(",", comms));
        }
        return String.join(" ", asked) + ": no thread of the recording matches (" + (known.isEmpty()
                ? "it names no thread" : "it has pid/tid " + String.join(", ", known) + (named.size() > known.size()
                ? ", ..." : "")) + ")";
    }

    private static Set<Integer> ints(String option, List<String> values) {
        if (values == null) {
            return null;
        }
        Set<Integer> out = new LinkedHashSet<>();
        for (String v : values) {
            try {
                out.add(Integer.parseInt(v.trim()));
            } catch (NumberFormatException e) {
                throw new BadInputException(option + " " + String.join(",", values) + ": '" + v
                        + "' is not a number");
            }
        }
        return out;
    }
}

package ptfence.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import ptfence.cli.Tool;
import ptfence.ptarchive.PtarchiveCommand;

/**
 * Programs run as perf event overflow handlers on the kernels users run (issue 29): the guest's holder
 * (perf-attach.py, plain syscalls, no project code) attaches four, by PERF_EVENT_IOC_SET_BPF and by a BPF link, to
 * CPU-wide cpu-clock events, a page-faults event following one process (by frequency), a kprobe opened through the
 * kprobe PMU and a tracepoint (named by their trace events, "kprobes:FUNC", "sched:sched_process_exec"), before {@link FenceChurnCheck}'s ptrec starts, and holds them until it ends; ptrec reads each event out
 * of the kernel's struct perf_event (through /proc/kcore on 6.1, which lacks the fence's read kfuncs). Judged from
 * that run's folder: for each program, what the holder says it attached (its own ids from BPF_OBJ_GET_INFO_BY_FD)
 * is what {@code ptarchive show} prints under the program and what ptrec's summary says.
 */
final class PerfAttachCheck implements GuestCheck {
    private static final String DIR = "perf-attach";

    /** The guest's shell lines that start the holder and wait until it has attached (before ptrec starts). */
    static String start() {
        return String.join("\n",
                "python3 " + FenceChurnCheck.resource("perf-attach.py") + " $OUT/" + DIR + " > perf-attach.out 2>&1 &",
                "PERF_ATTACH=$!",
                "for i in $(seq 600); do [ -e $OUT/" + DIR + "/ready ] && break; kill -0 $PERF_ATTACH || break;"
                        + " sleep 0.1; done");
    }

    /** The lines that end the holder (after ptrec's end, whose look at the attachments it must see too). */
    static String stop() {
        return "kill $PERF_ATTACH; wait $PERF_ATTACH";
    }

    @Override
    public GuestKernel.Check check() {
        return null; // held during the fence churn's run
    }

    @Override
    public String name() {
        return "perf-attach";
    }

    @Override
    public void verify(GuestKernel.Boot boot) throws Exception {
        Path dir = boot.dir(FenceChurnCheck.NAME);
        String why = boot.describe(FenceChurnCheck.NAME);
        Path expected = dir.resolve(DIR).resolve("expected");
        assertTrue(Files.exists(expected), "the holder attached nothing: "
                + (Files.exists(dir.resolve("perf-attach.out")) ? Files.readString(dir.resolve("perf-attach.out"))
                : "") + why);
        String ptrec = Files.readString(dir.resolve("ptrec.out"));
        List<String> lines = Files.readAllLines(expected).stream().filter(l -> !l.isBlank()).toList();
        assertEquals(5, lines.size(), "ioctl, link, task, kprobe, tracepoint: " + lines);
        for (String line : lines) {
            String[] f = line.split(" ");
            String progId = f[0], tag = f[1], name = f[2], via = f[3], linkId = f[4];
            int type = Integer.parseInt(f[5]);
            long config = Long.parseLong(f[6]);
            String period = f[7];
            boolean freq = f[8].equals("1");
            int cpu = Integer.parseInt(f[9]), pid = Integer.parseInt(f[10]);
            // the line as docs/ptrec.md gives it: perf's names for the generic events, a trace event's system:name
            String event = type == 1 && config == 0 ? "cpu-clock" : type == 1 && config == 2 ? "page-faults"
                    : !f[11].equals("-") ? f[11] : "type " + type + " config 0x" + Long.toHexString(config);
            String on = event + (freq ? ", freq " : ", period ") + period + (cpu >= 0 ? ", cpu " + cpu : "")
                    + (pid >= 0 ? ", pid " + pid : "") + (via.equals("link") ? " (link " + linkId + ")" : " (ioctl)");
            StringWriter out = new StringWriter(), err = new StringWriter();
            int rc = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                    "--archive", dir.resolve("archive").toString(), "show", "bpf_prog_" + tag + "_" + name);
            String shown = out.toString();
            assertEquals(0, rc, "ptarchive show " + name + ": " + shown + err + "\nptrec said:\n" + ptrec);
            assertTrue(shown.contains("bpf prog id " + progId + ",") && shown.contains("runs on: " + on),
                    name + ": runs on: " + on + " in\n" + shown + "\nptrec said:\n" + ptrec);
            assertTrue(ptrec.lines().anyMatch(("[ ptrec: BPF program " + progId + " runs on " + on + " ]")::equals),
                    name + " in ptrec's summary: " + on + "\n" + ptrec);
        }
    }
}

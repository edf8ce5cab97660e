package ptfence.region;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import ptfence.store.Batch;
import ptfence.store.Snapshot;
import ptfence.store.Table;

/**
 * A BPF program run as the overflow handler of a perf event (PERF_EVENT_IOC_SET_BPF, or a BPF link of type
 * perf_event): the event as the kernel holds it. ptrec finds them (ptfence.fence.PerfAttachments) and keeps them in
 * the archive's META table under {@code perf-attach:BOOT:PROGID}, one line per event, beside the program's regions
 * (which are immutable from the program's load, before any attachment); ptarchive show and ptdecode --func --summary
 * print them.
 *
 * @param progId  the program's id (in the boot the key names)
 * @param via     "ioctl" or "link"
 * @param linkId  the link's id, 0 for ioctl
 * @param type    perf_event_attr.type
 * @param config  perf_event_attr.config
 * @param period  sample_period, or sample_freq when {@code freq}
 * @param freq    perf_event_attr.freq
 * @param cpu     the event's CPU, -1 for any
 * @param pid     the process the event follows, -1 for a CPU-wide event
 * @param traceEvent the trace event behind a tracepoint or probe event as the kernel names it ("sched:sched_switch",
 *     "kprobes:vfs_read" for a probe opened through the kprobe PMU), null for other events or where unknown
 */
public record PerfAttachment(int progId, String via, int linkId, int type, long config, long period, boolean freq,
        int cpu, int pid, String traceEvent) {
    /** An event that is no trace event (or whose trace event is unknown). */
    public PerfAttachment(int progId, String via, int linkId, int type, long config, long period, boolean freq,
            int cpu, int pid) {
        this(progId, via, linkId, type, config, period, freq, cpu, pid, null);
    }

    private static final String PREFIX = "perf-attach:";
    private static final String[] HARDWARE = {"cycles", "instructions", "cache-references", "cache-misses",
        "branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles"};
    private static final String[] SOFTWARE = {"cpu-clock", "task-clock", "page-faults", "context-switches",
        "cpu-migrations", "minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
        "bpf-output", "cgroup-switches"};

    /** The event's name as perf names the generic events, a trace event's, else "type T config 0xC". */
    public String eventName() {
        if (traceEvent != null) return traceEvent;
        if (type == 0 && config >= 0 && config < HARDWARE.length) return HARDWARE[(int) config];
        if (type == 1 && config >= 0 && config < SOFTWARE.length) return SOFTWARE[(int) config];
        return "type " + type + " config 0x" + Long.toHexString(config);
    }

    /** "cpu-clock, period 100003, cpu 3" (freq: "freq 4000"; a task's event: "pid 123"); how it is attached after. */
    public String describe() {
        StringBuilder b = new StringBuilder(eventName()).append(freq ? ", freq " : ", period ")
                .append(Long.toUnsignedString(period));
        if (cpu >= 0) b.append(", cpu ").append(cpu);
        if (pid >= 0) b.append(", pid ").append(pid);
        return b.append(" (").append(via.equals("link") ? "link " + linkId : "ioctl").append(')').toString();
    }

    private String line() {
        return via + " " + linkId + " " + type + " " + Long.toUnsignedString(config) + " " + Long.toUnsignedString(period)
                + " " + (freq ? 1 : 0) + " " + cpu + " " + pid + (traceEvent == null ? "" : " " + traceEvent);
    }

    private static PerfAttachment parse(int progId, String line) {
        String[] f = line.split(" ");
        return new PerfAttachment(progId, f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]),
                Long.parseUnsignedLong(f[3]), Long.parseUnsignedLong(f[4]), f[5].equals("1"), Integer.parseInt(f[6]),
                Integer.parseInt(f[7]), f.length > 8 ? f[8] : null); // archives before the trace event: 8 fields
    }

    private static byte[] key(String bootId, int progId) {
        return (PREFIX + bootId + ":" + Integer.toUnsignedString(progId)).getBytes(StandardCharsets.UTF_8);
    }

    /** Adds {@code found} to what the archive keeps for its program (an event seen again is kept once). */
    public static void keep(Batch b, String bootId, PerfAttachment found) {
        Set<String> lines = new LinkedHashSet<>();
        for (PerfAttachment a : load(b, bootId, found.progId())) lines.add(a.line());
        if (lines.add(found.line())) {
            b.putRaw(Table.META, key(bootId, found.progId()),
                    String.join("\n", lines).getBytes(StandardCharsets.UTF_8));
        }
    }

    /** The events program {@code progId} of boot {@code bootId} was found attached to; empty if none. */
    public static List<PerfAttachment> load(Snapshot s, String bootId, int progId) {
        byte[] v = s.raw(Table.META, key(bootId, progId));
        List<PerfAttachment> out = new ArrayList<>();
        if (v == null) return out;
        for (String l : new String(v, StandardCharsets.UTF_8).split("\n")) {
            if (!l.isBlank()) out.add(parse(progId, l));
        }
        return out;
    }
}

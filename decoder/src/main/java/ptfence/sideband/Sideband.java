package ptfence.sideband;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.SampleType;

/**
 * A recording's sideband as timelines: which task ran on each CPU when, what each process had mapped, which
 * dynamic kernel text existed when (KSYMBOL register/unregister, BPF_EVENT), and the TEXT_POKE changes. Times
 * are perf time (ns), as the records carry them.
 */
public final class Sideband {
    /** A KSYMBOL's life: registered at {@code from}, unregistered at {@code to} ({@link Long#MAX_VALUE} if never). */
    public record KernelSymbol(long address, int length, int type, String name, long from, long to) {
        public boolean bpf() {
            return type == PerfRecord.Ksymbol.TYPE_BPF;
        }

        public boolean covers(long addr) {
            return Long.compareUnsigned(addr - address, length) < 0;
        }
    }

    /** A BPF_EVENT: a program's id and tag at load or unload. */
    public record BpfProgram(int id, String tag, long time, boolean load) {
    }

    /** Code bytes changed in place at {@code time}. */
    public record Poke(long address, byte[] oldBytes, byte[] newBytes, long time) {
    }

    /** A file (or anonymous memory) mapped executable into a process from {@code time} on. */
    public record Mapping(int pid, long address, long length, long pgoff, String file, long time, boolean kernel) {
    }

    /** A thread's name from {@code time} on. */
    public record Comm(long time, String comm) {
    }

    /** A task on a CPU from {@code time} on; pid -1 when tracing knows nothing yet. */
    public record Task(long time, int pid, int tid) {
    }

    private final List<KernelSymbol> kernelSymbols = new ArrayList<>();
    private final List<BpfProgram> bpfPrograms = new ArrayList<>();
    private final List<Poke> pokes = new ArrayList<>();
    private final List<Mapping> mappings = new ArrayList<>();
    private final Map<Integer, List<Task>> tasks = new TreeMap<>();
    private final Map<Integer, Long> execTimes = new HashMap<>();
    /** Per thread, its names over time (COMM records; a forked child starts with its parent's). */
    private final Map<Integer, List<Comm>> comms = new HashMap<>();
    private final Map<String, byte[]> buildIds = new HashMap<>();
    private final Map<Integer, Integer> pids = new HashMap<>();
    private final Map<Long, Integer> openSymbols = new HashMap<>();
    private long firstTime = Long.MAX_VALUE;
    private long lastTime = Long.MIN_VALUE;

    /** Feeds records in file order (perf writes them sorted by time per ring, nearly sorted overall). */
    public void add(PerfRecord r) {
        var sid = r.sampleId();
        boolean timed = sid.has(SampleType.TIME);
        long t = timed ? sid.time() : 0;
        int cpu = sid.has(SampleType.CPU) ? sid.cpu() : -1;
        if (timed && t != 0) {
            firstTime = Math.min(firstTime, t);
            lastTime = Math.max(lastTime, t);
        }
        if (r instanceof PerfRecord.Ksymbol k) {
            ksymbol(k, t);
        } else if (r instanceof PerfRecord.BpfEvent b) {
            bpfPrograms.add(new BpfProgram(b.id(), hex(b.tag()), t, b.eventType() == PerfRecord.BpfEvent.PROG_LOAD));
        } else if (r instanceof PerfRecord.TextPoke p) {
            pokes.add(new Poke(p.addr(), bytes(p.oldBytes()), bytes(p.newBytes()), t));
        } else if (r instanceof PerfRecord.Mmap2 m) {
            if (m.hasBuildId()) {
                buildIds.putIfAbsent(m.filename(), m.buildId());
            }
            mapping(m.pid(), m.addr(), m.len(), m.pgoff(), m.filename(), m.misc(), t);
        } else if (r instanceof PerfRecord.Mmap m) {
            mapping(m.pid(), m.addr(), m.len(), m.pgoff(), m.filename(), m.misc(), t);
        } else if (r instanceof PerfRecord.Fork f) {
            String parent = commAt(f.ptid(), f.time());
            pids.put(f.tid(), f.pid());
            if (parent != null && f.tid() != f.ptid()) {
                comm(f.tid(), f.time(), parent);
            }
        } else if (r instanceof PerfRecord.Comm c) {
            comm(c.tid(), t, c.comm());
            pids.put(c.tid(), c.pid());
            if (c.exec()) {
                execTimes.put(c.pid(), t);
                task(cpu, t, c.pid(), c.tid());
            }
        } else if (r instanceof PerfRecord.ItraceStart i) {
            task(cpu, t, i.pid(), i.tid());
        } else if (r instanceof PerfRecord.SwitchCpuWide s) {
            if ((s.misc() & PerfRecord.MISC_SWITCH_OUT) != 0) {
                task(cpu, t, s.nextPrevPid(), s.nextPrevTid());
            } else if (sid.has(SampleType.TID)) {
                task(cpu, t, sid.pid(), sid.tid());
            }
        } else if (r instanceof PerfRecord.Switch s) {
            if ((s.misc() & PerfRecord.MISC_SWITCH_OUT) == 0 && sid.has(SampleType.TID)) {
                task(cpu, t, sid.pid(), sid.tid());
            }
        }
    }

    private void ksymbol(PerfRecord.Ksymbol k, long t) {
        if ((k.flags() & PerfRecord.Ksymbol.FLAG_UNREGISTER) != 0) {
            Integer i = openSymbols.remove(k.addr());
            if (i != null) {
                KernelSymbol s = kernelSymbols.get(i);
                kernelSymbols.set(i, new KernelSymbol(s.address(), s.length(), s.type(), s.name(), s.from(), t));
            }
            return;
        }
        Integer open = openSymbols.get(k.addr());
        if (open != null) { // registered again without an unregister we saw: the old one ended now
            KernelSymbol s = kernelSymbols.get(open);
            kernelSymbols.set(open, new KernelSymbol(s.address(), s.length(), s.type(), s.name(), s.from(), t));
        }
        openSymbols.put(k.addr(), kernelSymbols.size());
        kernelSymbols.add(new KernelSymbol(k.addr(), k.len(), k.ksymType(), k.name(), t, Long.MAX_VALUE));
    }

    private void mapping(int pid, long addr, long len, long pgoff, String file, int misc, long t) {
        boolean kernel = (misc & 7) == 1; // PERF_RECORD_MISC_KERNEL
        mappings.add(new Mapping(kernel ? -1 : pid, addr, len, pgoff, file, t, kernel));
    }

    private void task(int cpu, long t, int pid, int tid) {
        List<Task> l = tasks.computeIfAbsent(cpu, c -> new ArrayList<>());
        if (!l.isEmpty() && l.get(l.size() - 1).time() > t) {
            int at = l.size();
            while (at > 0 && l.get(at - 1).time() > t) {
                at--;
            }
            l.add(at, new Task(t, pid, tid));
        } else {
            l.add(new Task(t, pid, tid));
        }
    }

    private void comm(int tid, long t, String name) {
        List<Comm> l = comms.computeIfAbsent(tid, x -> new ArrayList<>(2));
        int at = l.size();
        while (at > 0 && l.get(at - 1).time() > t) {
            at--;
        }
        l.add(at, new Comm(t, name));
    }

    /**
     * The name of thread {@code tid} at perf time {@code time} (its newest name when {@code time} is -1, an
     * untimed trace), or null if no record named it.
     */
    public String commAt(int tid, long time) {
        List<Comm> l = comms.get(tid);
        if (l == null || l.isEmpty()) {
            return null;
        }
        if (time < 0) {
            return l.get(l.size() - 1).comm();
        }
        String name = null;
        for (Comm c : l) { // a thread has few names
            if (c.time() > time) {
                break;
            }
            name = c.comm();
        }
        return name != null ? name : l.get(0).comm();
    }

    /** When thread {@code tid} is next renamed after perf time {@code time}, or Long.MAX_VALUE. */
    public long nextCommChange(int tid, long time) {
        List<Comm> l = comms.get(tid);
        if (l != null) {
            for (Comm c : l) {
                if (c.time() > time) {
                    return c.time();
                }
            }
        }
        return Long.MAX_VALUE;
    }

    /** Every thread the records name (COMM, FORK, switches), with the names it had (none known: empty). */
    public Map<Integer, java.util.Set<String>> threads() {
        Map<Integer, java.util.Set<String>> out = new TreeMap<>();
        comms.forEach((tid, l) -> l.forEach(c -> out.computeIfAbsent(tid, t -> new java.util.TreeSet<>()).add(c.comm())));
        pids.keySet().forEach(tid -> out.computeIfAbsent(tid, t -> new java.util.TreeSet<>()));
        tasks.values().forEach(l -> l.forEach(t -> {
            if (t.tid() >= 0) {
                out.computeIfAbsent(t.tid(), x -> new java.util.TreeSet<>());
            }
        }));
        return out;
    }

    /** The process of thread {@code tid} (from its COMM records), else {@code tid} itself. */
    public int pidOf(int tid) {
        Integer p = pids.get(tid);
        return p == null ? tid : p;
    }

    /** Build ids that MMAP2 records carried, by file name. */
    public Map<String, byte[]> buildIds() {
        return java.util.Collections.unmodifiableMap(buildIds);
    }

    public List<KernelSymbol> kernelSymbols() {
        return List.copyOf(kernelSymbols);
    }

    /** False if the recording named no kernel symbol (a lookup needs no copy of the list then). */
    public boolean hasKernelSymbols() {
        return !kernelSymbols.isEmpty();
    }

    public List<BpfProgram> bpfPrograms() {
        return List.copyOf(bpfPrograms);
    }

    public List<Poke> pokes() {
        return List.copyOf(pokes);
    }

    public List<Mapping> mappings() {
        return List.copyOf(mappings);
    }

    /** When process {@code pid} last exec'd before {@code time} (its older mappings are gone), or Long.MIN_VALUE. */
    public long execBefore(int pid, long time) {
        Long t = execTimes.get(pid);
        return t != null && t <= time ? t : Long.MIN_VALUE;
    }

    /**
     * The time to look a CPU's task up at for an item at {@code time}: the item's own, or where the trace has no
     * timing, the end of the recording (perf decodes an untimed trace after all the sideband, so its thread is the
     * CPU's last). One rule for the sample and call views.
     */
    public static long taskTime(long time, boolean timeless) {
        return timeless ? Long.MAX_VALUE - 1 : time;
    }

    /** The task running on {@code cpu} at {@code time}, or null if the sideband does not say. */
    public Task taskAt(int cpu, long time) {
        List<Task> l = tasks.get(cpu);
        int i = l == null ? -1 : lastAtOrBefore(l, time);
        return i < 0 ? null : l.get(i);
    }

    /** The first task switch on {@code cpu} after {@code time}, or null. */
    public Task taskAfter(int cpu, long time) {
        List<Task> l = tasks.get(cpu);
        int i = l == null ? -1 : lastAtOrBefore(l, time) + 1;
        return i < 0 || i >= l.size() ? null : l.get(i);
    }

    /** Index of the last task that started at or before {@code time}; -1 if none. */
    private static int lastAtOrBefore(List<Task> l, long time) {
        int lo = 0;
        int hi = l.size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (l.get(mid).time() <= time) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return hi;
    }

    /** The task timeline of one CPU, in time order. */
    public List<Task> tasks(int cpu) {
        return List.copyOf(tasks.getOrDefault(cpu, List.of()));
    }

    /**
     * The one task {@code cpu} ran all along (every entry of its timeline the same pid and tid), else null: all an
     * untimed trace can be given, having no time to follow its switches by.
     */
    public Task onlyTask(int cpu) {
        Task one = null;
        for (Task t : tasks.getOrDefault(cpu, List.of())) {
            if (one != null && (t.pid() != one.pid() || t.tid() != one.tid())) {
                return null;
            }
            one = t;
        }
        return one;
    }

    /** Earliest and latest record time, or MAX/MIN if no record was timed. */
    public long firstTime() {
        return firstTime;
    }

    public long lastTime() {
        return lastTime;
    }

    private static byte[] bytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }

    private static String hex(ByteBuffer b) {
        return java.util.HexFormat.of().formatHex(bytes(b));
    }
}

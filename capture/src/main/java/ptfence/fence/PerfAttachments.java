package ptfence.fence;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import ptfence.bpf.BpfAssembler;
import ptfence.bpf.Btf;
import ptfence.cli.BadInputException;
import ptfence.region.PerfAttachment;
import ptfence.sys.Bpf;
import ptfence.sys.BpfException;
import ptfence.sys.BpfFd;
import ptfence.sys.Pidfd;
import ptfence.sys.SyscallException;

import static ptfence.bpf.BpfAssembler.Reg.*;

/**
 * Which BPF programs run as the overflow handler of which perf event (PERF_EVENT_IOC_SET_BPF, or a BPF link of type
 * perf_event), read from the kernel's own struct perf_event: no bpf() or perf interface tells the event's sample
 * period and CPU (BPF_LINK_GET_INFO names type and config from 6.6 on, for links only; an ioctl attachment is
 * visible nowhere), so the event is reached through a descriptor of ours and read with the fence's kernel reader:
 * <ul>
 * <li>links: every BPF link (BPF_LINK_GET_NEXT_ID), BPF_LINK_GET_FD_BY_ID; of type perf_event, its
 *     struct bpf_perf_link's perf_file;</li>
 * <li>ioctl: every process's perf event descriptors (/proc/PID/fd, "anon_inode:[perf_event]") copied with
 *     pidfd_getfd; an event whose {@code prog} is set.</li>
 * </ul>
 * From our descriptor to the struct file: our task (bpf_get_current_task in a raw_tp program run by
 * BPF_PROG_TEST_RUN, which runs in the calling thread) → files → fdt → fd[n]; every offset from the kernel's BTF.
 * Needs root, BTF, pidfd_getfd (5.6) and a kernel reader (kcore, or the fence's BPF read program).
 */
public final class PerfAttachments implements AutoCloseable {
    private static final int LINK_TYPE_PERF_EVENT = 7;

    private final KernelMemory memory;
    private final Btf btf;
    private final KernelLayout layout;
    private final BpfFd taskMap, taskProg;
    private final int evAttr, evCpu, evProg, evTarget, taskTgid, perfLinkFile;
    /** The trace event behind a tracepoint or probe event (-1 where the kernel's BTF lacks a member). */
    private final int evTpEvent, callName, callFlags, callClass, classSystem, tracepointName;
    /** trace_event_call.flags' TRACE_EVENT_FL_TRACEPOINT (its name is then the tracepoint's), 0 if unknown. */
    private final long flTracepoint;
    private Map<Integer, Integer> softwareTypes = Map.of();

    private PerfAttachments(KernelMemory memory, Btf btf, KernelLayout layout, BpfFd taskMap, BpfFd taskProg) {
        this.memory = memory;
        this.btf = btf;
        this.layout = layout;
        this.taskMap = taskMap;
        this.taskProg = taskProg;
        evAttr = btf.offsetOf("perf_event", "attr");
        evCpu = btf.offsetOf("perf_event", "cpu");
        evProg = btf.offsetOf("perf_event", "prog");
        evTarget = optionalOffset("perf_event", "hw.target");
        taskTgid = btf.offsetOf("task_struct", "tgid");
        perfLinkFile = optionalOffset("bpf_perf_link", "perf_file") - optionalOffset("bpf_perf_link", "link");
        evTpEvent = optionalOffset("perf_event", "tp_event");
        callName = optionalOffset("trace_event_call", "name"); // a union with tp, the struct tracepoint
        callFlags = optionalOffset("trace_event_call", "flags");
        callClass = optionalOffset("trace_event_call", "class");
        classSystem = optionalOffset("trace_event_class", "system");
        tracepointName = optionalOffset("tracepoint", "name");
        java.util.OptionalLong bit = btf.enumValue("TRACE_EVENT_FL_TRACEPOINT_BIT");
        flTracepoint = bit.isPresent() ? 1L << bit.getAsLong() : 0;
    }

    private int optionalOffset(String struct, String path) {
        try {
            return btf.offsetOf(struct, path);
        } catch (BadInputException e) {
            return -1;
        }
    }

    /** Opens the kernel reader and the current-task program. */
    public static PerfAttachments open() throws IOException {
        return open(RunningKernel.current());
    }

    /** Opens them on the recording's one parse of the vmlinux BTF. */
    public static PerfAttachments open(RunningKernel kernel) throws IOException {
        Btf btf = kernel.vmlinux();
        KernelLayout layout = KernelLayout.from(btf);
        KernelMemory memory = KernelMemory.open(layout);
        Bpf bpf = Bpf.get();
        BpfFd map = null;
        try {
            map = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, 1, 0, "ptf_cur_task");
            byte[] insns = new BpfAssembler().call(35 /* get_current_task */).mov(R6, R0)
                    .store(BpfAssembler.Size.W, R10, -4, 0)
                    .loadMapFd(R1, map.fd()).mov(R2, R10).add(R2, -4).call(1 /* map_lookup_elem */)
                    .jumpIf(BpfAssembler.Cond.EQ, R0, 0, "out").store(BpfAssembler.Size.DW, R0, 0, R6)
                    .label("out").mov(R0, 0).exit().assemble();
            BpfFd prog = bpf.progLoad(new Bpf.ProgLoad(Bpf.PROG_TYPE_RAW_TRACEPOINT, insns, "GPL", "ptf_cur_task", 0, 0));
            return new PerfAttachments(memory, btf, layout, map, prog);
        } catch (BpfException | RuntimeException e) {
            if (map != null) map.close();
            memory.close();
            throw e instanceof IOException io ? io : new IOException(e.getMessage(), e);
        }
    }

    /**
     * The type the kernel keeps in a software event's attr: newer kernels run cpu-clock and task-clock on PMUs of
     * their own with dynamic types (6 and 7 on 6.18) and write that type into the event's attr; an event of each,
     * opened here and read back, says which, so they are named as the user asked for them (type 1).
     */
    private Map<Integer, Integer> softwareTypes(long task) {
        Map<Integer, Integer> out = new java.util.HashMap<>();
        for (int config : new int[] {0 /* cpu-clock */, 1 /* task-clock */}) {
            ptfence.perfdata.EventAttr a = ptfence.perfdata.EventAttr.builder().type(1).config(config)
                    .flags(ptfence.perfdata.EventAttr.FLAG_DISABLED).build();
            try (ptfence.sys.PerfEvent e = ptfence.sys.PerfEvent.open(a, "software type probe", 0, -1)) {
                long event = filePrivate(task, e.fd());
                int type = u32(event + evAttr);
                if (type != 1) out.put(type, config);
            } catch (IOException | RuntimeException e) {
                // named by type and config then
            }
        }
        return out;
    }

    /** Every attachment now: links first, then ioctl attachments of events no link holds. */
    public List<PerfAttachment> scan() throws IOException {
        Map<Long, PerfAttachment> byEvent = new LinkedHashMap<>();
        long task = currentTask();
        softwareTypes = softwareTypes(task);
        Bpf bpf = Bpf.get();
        if (perfLinkFile >= 0) {
            for (int id = bpf.linkGetNextId(0); id > 0; id = bpf.linkGetNextId(id)) {
                try (BpfFd link = bpf.linkGetFdById(id)) {
                    if (link == null) continue;
                    byte[] info = new byte[16];
                    bpf.objGetInfo(link, info, List.of());
                    ByteBuffer b = ByteBuffer.wrap(info).order(ByteOrder.LITTLE_ENDIAN);
                    if (b.getInt(0) != LINK_TYPE_PERF_EVENT) continue;
                    long linkObj = filePrivate(task, link.fd());
                    long perfFile = u64(linkObj + perfLinkFile);
                    long event = u64(perfFile + layout.filePrivateData());
                    describe(event, "link", id).ifPresent(a -> byEvent.putIfAbsent(event, a));
                } catch (IOException | RuntimeException e) {
                    // the link went away meanwhile
                }
            }
        }
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path proc : procs) {
                int pid = Integer.parseInt(proc.getFileName().toString());
                if (pid == ProcessHandle.current().pid()) continue; // ptrec's own events run no programs
                try (DirectoryStream<Path> fds = Files.newDirectoryStream(proc.resolve("fd"))) {
                    for (Path fd : fds) {
                        String target;
                        try {
                            target = Files.readSymbolicLink(fd).toString();
                        } catch (IOException e) {
                            continue;
                        }
                        if (!target.equals("anon_inode:[perf_event]")) continue;
                        int ours;
                        try {
                            ours = Pidfd.copy(pid, Integer.parseInt(fd.getFileName().toString()));
                        } catch (SyscallException e) {
                            continue; // closed meanwhile, or the process is gone
                        }
                        try {
                            long event = filePrivate(task, ours);
                            if (byEvent.containsKey(event)) continue;
                            describe(event, "ioctl", 0).ifPresent(a -> byEvent.put(event, a));
                        } catch (IOException e) {
                            // closed meanwhile
                        } finally {
                            Pidfd.close(ours);
                        }
                    }
                } catch (IOException e) {
                    // the process ended meanwhile
                }
            }
        }
        return new ArrayList<>(byEvent.values());
    }

    /** The attachment of the event at {@code event}, if a program is attached to it. */
    private java.util.Optional<PerfAttachment> describe(long event, String via, int linkId) throws IOException {
        long prog = u64(event + evProg);
        if (prog == 0) return java.util.Optional.empty();
        long aux = u64(prog + layout.progAux());
        int progId = u32(aux + layout.auxId());
        ByteBuffer attr = ByteBuffer.wrap(memory.read(event + evAttr, 48)).order(ByteOrder.LITTLE_ENDIAN);
        int cpu = u32(event + evCpu);
        int pid = -1;
        if (evTarget >= 0) {
            long target = u64(event + evTarget);
            if (target != 0) pid = u32(target + taskTgid);
        }
        boolean freq = (attr.getLong(40) & (1L << 10)) != 0;
        int type = attr.getInt(0);
        long config = attr.getLong(8);
        Integer software = softwareTypes.get(type);
        if (software != null && config == software) type = 1;
        return java.util.Optional.of(new PerfAttachment(progId, via, linkId, type, attr.getLong(8),
                attr.getLong(16), freq, cpu, pid, traceEvent(event)));
    }

    /**
     * "system:name" of the trace event behind the event (a tracepoint, a tracefs probe, a probe opened through the
     * kprobe or uprobe PMU, whose system is "kprobes" or "uprobes" and name the probed function), else null: the
     * event's tp_event, its class's system, and its name (the tracepoint's where the call is a tracepoint's).
     */
    private String traceEvent(long event) {
        if (evTpEvent < 0 || callName < 0 || callFlags < 0 || callClass < 0 || classSystem < 0 || tracepointName < 0
                || flTracepoint == 0) {
            return null;
        }
        try {
            long call = u64(event + evTpEvent);
            if (call == 0) {
                return null;
            }
            long namePtr = u64(call + callName);
            if ((u32(call + callFlags) & flTracepoint) != 0) {
                namePtr = u64(namePtr + tracepointName);
            }
            String system = string(u64(u64(call + callClass) + classSystem));
            String name = string(namePtr);
            return system.isEmpty() || name.isEmpty() ? null : system + ":" + name;
        } catch (IOException e) {
            return null; // named by type and config then
        }
    }

    /** A kernel C string (up to 255 bytes), as an event name: no spaces (the archive's line splits on them). */
    private String string(long address) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (int chunk = 0; chunk < 4; chunk++) { // 64 bytes at a time: a short name near a page's end stays readable
            byte[] b = memory.read(address + 64L * chunk, 64);
            for (byte x : b) {
                if (x == 0) {
                    return out.toString(java.nio.charset.StandardCharsets.UTF_8).replace(' ', '_');
                }
                out.write(x);
            }
        }
        return out.toString(java.nio.charset.StandardCharsets.UTF_8).replace(' ', '_');
    }

    /** The struct file's private_data behind our descriptor {@code fd}. */
    private long filePrivate(long task, int fd) throws IOException {
        long files = u64(task + layout.taskFiles());
        long fdt = u64(files + layout.filesFdt());
        long array = u64(fdt + layout.fdtFd());
        long file = u64(array + 8L * fd);
        if (file == 0) throw new IOException("fd " + fd + " is not open");
        return u64(file + layout.filePrivateData());
    }

    private long currentTask() throws IOException {
        try {
            Bpf.get().progTestRun(taskProg, new byte[8]);
            byte[] v = new byte[8];
            Bpf.get().mapLookup(taskMap, new byte[4], v);
            long task = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN).getLong();
            if (task == 0) throw new IOException("bpf_get_current_task gave 0");
            return task;
        } catch (BpfException e) {
            throw new IOException(e.getMessage(), e);
        }
    }

    private long u64(long address) throws IOException {
        if (address == 0) throw new IOException("null pointer");
        return ByteBuffer.wrap(memory.read(address, 8)).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    private int u32(long address) throws IOException {
        if (address == 0) throw new IOException("null pointer");
        return ByteBuffer.wrap(memory.read(address, 4)).order(ByteOrder.LITTLE_ENDIAN).getInt();
    }

    @Override
    public void close() {
        taskProg.close();
        taskMap.close();
        memory.close();
    }
}

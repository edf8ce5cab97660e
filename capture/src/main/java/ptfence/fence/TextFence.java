package ptfence.fence;

import ptfence.bpf.Kallsyms;
import ptfence.bpf.ProgInfo;
import ptfence.bpf.ProgramMetadata;
import ptfence.cli.BadInputException;
import ptfence.ring.BpfRingBuffer;
import ptfence.sys.Bpf;
import ptfence.sys.BpfException;
import ptfence.sys.BpfFd;
import ptfence.sys.BpfRingMapping;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The text fence: copies the JIT image of every BPF program into a {@link TextSink} before the kernel can free it.
 * <p>
 * In-kernel mode (the default): the LOAD and FREE raw-tracepoint programs copy each image into a BPF ring buffer
 * synchronously in the kernel; a consumer thread delivers them. Programs loaded before the fence are copied by a
 * startup scan. Where the hooks cannot load (older kernel, policy) the fence falls back to user space: it pins each
 * new program by id as soon as it learns of it (its own id poller, or {@link #onProgramLoaded} from the recorder's
 * BPF_EVENT records) and counts the ones that were gone — a measured, reported loss.
 * <p>
 * Usage: {@code try (TextFence f = TextFence.start(Config.defaults(), sink)) { ... f.counters() ... }}.
 */
public final class TextFence implements AutoCloseable {

    public enum Mode { IN_KERNEL, USER_SPACE }

    /**
     * @param ringBytes      BPF ring size (power of two; 64 MiB holds the largest 16 MiB record with room to spare)
     * @param pollInterval   how often the consumer looks at the ring (records are sent without wakeups)
     * @param inKernel       false forces the user-space fence
     * @param startupScan    copy the programs already loaded
     * @param userSpacePoll  park between id polls of the user-space fence (default 20 µs); zero spins, which
     *                       won on an idle machine and lost on a loaded 2-vCPU one (docs/fence.md)
     * @param chunkedCopy    copy as on a kernel without the dynptr-read kfuncs even where they exist (tests of that
     *                       path on a newer kernel)
     */
    public record Config(int ringBytes, Duration pollInterval, boolean inKernel, boolean startupScan,
                         Duration userSpacePoll, boolean chunkedCopy) {
        public static Config defaults() {
            return new Config(64 << 20, Duration.ofMillis(10), true, true, Duration.ofNanos(20_000), false);
        }

        public Config withInKernel(boolean v) { return new Config(ringBytes, pollInterval, v, startupScan, userSpacePoll, chunkedCopy); }

        public Config withStartupScan(boolean v) { return new Config(ringBytes, pollInterval, inKernel, v, userSpacePoll, chunkedCopy); }

        public Config withRingBytes(int v) { return new Config(v, pollInterval, inKernel, startupScan, userSpacePoll, chunkedCopy); }

        public Config withPollInterval(Duration v) { return new Config(ringBytes, v, inKernel, startupScan, userSpacePoll, chunkedCopy); }

        public Config withUserSpacePoll(Duration v) { return new Config(ringBytes, pollInterval, inKernel, startupScan, v, chunkedCopy); }

        public Config withChunkedCopy(boolean v) { return new Config(ringBytes, pollInterval, inKernel, startupScan, userSpacePoll, v); }
    }

    private final Config config;
    private final TextSink sink;
    private final Map<Hook, AtomicLong> images = new EnumMap<>(Hook.class);
    private final AtomicLong incomplete = new AtomicLong(), userMissed = new AtomicLong(),
            metadataFetched = new AtomicLong(), metadataMissing = new AtomicLong(), sinkErrors = new AtomicLong(),
            metadataFenced = new AtomicLong(), metadataIncomplete = new AtomicLong();
    private final Set<Integer> pinned = ConcurrentHashMap.newKeySet();
    private final List<BpfFd> fds = new ArrayList<>();
    /** Attachments: closing one detaches its hook. */
    private final List<BpfFd> links = new ArrayList<>();
    private final Object sinkLock = new Object();
    private volatile long lastDeliveryNanos = System.nanoTime();
    private volatile boolean stopping;

    private Mode mode;
    private String fallbackReason = "";
    private KernelLayout layout;
    private BpfFd ring, stats, btfSeen, scratch;
    /** Records the hooks wrote in fragments (a kernel without the dynptr-read kfuncs); consumer thread only. */
    private final FragmentAssembler fragments = new FragmentAssembler();
    private BpfRingMapping mapping;
    private BpfRingBuffer consumer;
    private Thread worker;
    private volatile int lastPolledId;
    private volatile KernelMemory kernelMemory; // volatile: the recorder's peeker reads it too
    private final Map<Hook, BpfFd> hookPrograms = new EnumMap<>(Hook.class);

    private final RunningKernel kernel;

    private TextFence(Config config, TextSink sink, RunningKernel kernel) {
        this.config = config;
        this.sink = sink;
        this.kernel = kernel;
        for (Hook h : Hook.values()) images.put(h, new AtomicLong());
    }

    /** Starts the fence (hooks, consumer, startup scan). Errors name the bpf() call and errno. */
    public static TextFence start(Config config, TextSink sink) throws IOException {
        return start(config, RunningKernel.current(), sink);
    }

    /** Starts the fence on the recording's one reading of kallsyms and the vmlinux BTF. */
    public static TextFence start(Config config, RunningKernel kernel, TextSink sink) throws IOException {
        TextFence f = new TextFence(config, sink, kernel);
        if (config.inKernel()) {
            try {
                f.startInKernel();
            } catch (IOException | BadInputException e) {
                // No BTF or kallsyms, a refused program or attach: the user-space fence takes over.
                f.stopWorker();
                f.mode = null;
                f.releaseKernelSide();
                f.fallbackReason = e.getMessage().lines().findFirst().orElse("");
            }
        } else {
            f.fallbackReason = "in-kernel hooks disabled by configuration";
        }
        try {
            if (f.mode == null) f.startUserSpace();
            sink.freeHookActive(f.mode == Mode.IN_KERNEL);
            f.startModules();
            if (config.startupScan()) f.scanLoadedPrograms();
        } catch (IOException | RuntimeException e) {
            f.close();
            throw e;
        }
        return f;
    }

    public Mode mode() { return mode; }

    /**
     * Whether the LOAD hook delivers each program's metadata with its images ({@link CapturedText#metadata}): the
     * in-kernel fence on a kernel whose BTF has every field it reads.
     */
    public boolean metadataInKernel() {
        return mode == Mode.IN_KERNEL && btfSeen != null;
    }

    /**
     * How the in-kernel hooks copy, where it is not the newest way: "copies in bounded chunks (this kernel has no
     * ...)" names the kfuncs the running kernel lacks; empty otherwise.
     */
    public String copyNote() {
        return mode == Mode.IN_KERNEL && layout != null && layout.copiesInChunks()
                ? "copies in bounded bpf_probe_read_kernel chunks: this kernel has no " + layout.missingKfuncs() : "";
    }

    /** Why the in-kernel hooks are not used (empty in IN_KERNEL mode). */
    public String fallbackReason() { return fallbackReason; }

    private void startInKernel() throws IOException {
        Kallsyms syms = kernel.kallsyms();
        layout = KernelLayout.from(kernel.vmlinux());
        if (config.chunkedCopy()) layout = layout.withoutKfuncs();
        Bpf bpf = Bpf.get();
        ring = keep(bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, config.ringBytes(), 0, "fence_rb"));
        stats = keep(bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "fence_stats"));
        mapping = BpfRingMapping.map(ring, config.ringBytes());
        consumer = new BpfRingBuffer(mapping.consumerPage(), mapping.producerArea(), config.ringBytes());
        if (layout.metadata().isPresent()) {
            btfSeen = keep(bpf.mapCreate(Bpf.MAP_TYPE_LRU_HASH, 4, 4, BTF_SEEN_ENTRIES, 0, "fence_btf_seen"));
        }
        if (layout.copiesInChunks()) {
            scratch = keep(bpf.mapCreate(Bpf.MAP_TYPE_PERCPU_ARRAY, 4, FencePrograms.SCRATCH_VALUE,
                    FencePrograms.SCRATCH_ENTRIES, 0, "fence_scratch"));
        }
        FencePrograms programs = new FencePrograms(layout, ring.fd(), stats.fd(), config.ringBytes(),
                btfSeen == null ? -1 : btfSeen.fd(), scratch == null ? -1 : scratch.fd());
        // FREE first: from then on no image can disappear unseen; LOAD then gives the earliest copy.
        BpfFd free = keep(load(programs.free(syms.require("bpf_prog_free_deferred")), "fence_free"));
        BpfFd load = keep(load(programs.load(), "fence_load"));
        var tramp = syms.address("__bpf_tramp_image_put_deferred");
        BpfFd trampProg = tramp.isPresent() && layout.trampWork().isPresent()
                ? keep(load(programs.trampolineFree(tramp.getAsLong()), "fence_tramp")) : null;
        BpfFd dispatcherProg = loadDispatcherHook(programs);
        BpfFd trampolineBuildProg = loadTrampolineHook(programs);
        hookPrograms.put(Hook.LOAD, load);
        hookPrograms.put(Hook.FREE, free);
        if (trampProg != null) hookPrograms.put(Hook.TRAMPOLINE_FREE, trampProg);
        mode = Mode.IN_KERNEL;
        worker = new Thread(this::consumeLoop, "text-fence-consumer");
        worker.setDaemon(true);
        worker.start();
        links.add(bpf.rawTracepointOpen("workqueue_execute_start", free));
        if (trampProg != null) links.add(bpf.rawTracepointOpen("workqueue_execute_start", trampProg));
        links.add(bpf.rawTracepointOpen("sys_exit", load));
        attachDispatcherHook(dispatcherProg);
        attachTrampolineHook(trampolineBuildProg);
        if (!trampolineHooked) attachTrampolineUpdateHook(programs);
    }

    /**
     * The dispatcher hook (fexit bpf_dispatcher_change_prog), or null where it cannot load (no such function or
     * struct members in BTF, or the kernel refuses tracing programs): the dispatcher halves are then read in user
     * space at the switch's TEXT_POKE only, and {@link #dispatcherSummary} says why.
     */
    private BpfFd loadDispatcherHook(FencePrograms programs) {
        if (layout.dispatcher().isEmpty()) {
            dispatcherNote = "dispatcher halves: user-space read at the switch (BTF has no bpf_dispatcher_change_prog"
                    + " or struct bpf_dispatcher.image_off)";
            return null;
        }
        return loadFexit(programs::dispatcherSwitched, "fence_dispatch", layout.dispatcher().get().changeProgFunc(),
                why -> dispatcherNote = "dispatcher halves: user-space read at the switch (fexit "
                        + "bpf_dispatcher_change_prog: " + why + ")");
    }

    /**
     * The trampoline hook (fexit arch_prepare_bpf_trampoline), or null where it cannot load: the images are then
     * read in user space at their KSYMBOL and attach poke only, and {@link #trampolineSummary} says why.
     */
    private BpfFd loadTrampolineHook(FencePrograms programs) {
        if (layout.trampolineBuild().isEmpty()) {
            trampolineNote = "trampolines: user-space read at the attach poke (BTF has no arch_prepare_bpf_trampoline"
                    + " with im and image parameters, or no struct bpf_tramp_image)";
            return null;
        }
        return loadFexit(programs::trampolineBuilt, "fence_tramp_bld",
                layout.trampolineBuild().get().prepareFunc(), why -> trampolineNote = "trampolines: user-space read "
                        + "at the attach poke (fexit arch_prepare_bpf_trampoline: " + why + ")");
    }

    /** Loads a fexit hook; null where the kernel refuses it ({@code refused} gets why). */
    private BpfFd loadFexit(java.util.function.Supplier<byte[]> insns, String name, int btfId,
            java.util.function.Consumer<String> refused) {
        try {
            return keep(FencePrograms.loadFexit(insns.get(), name, btfId));
        } catch (BpfException e) {
            refused.accept(firstLine(e.getMessage()));
            return null;
        }
    }

    /** Attaches a loaded fexit hook; false (and {@code refused} gets why) where the kernel refuses. */
    private boolean attachFexit(BpfFd prog, Hook hook, java.util.function.Consumer<String> refused) {
        if (prog == null) return false;
        try {
            links.add(Bpf.get().tracingAttach(prog));
            hookPrograms.put(hook, prog);
            return true;
        } catch (BpfException e) {
            refused.accept("not attached: " + firstLine(e.getMessage()));
            return false;
        }
    }

    private void attachDispatcherHook(BpfFd prog) {
        dispatcherHooked = attachFexit(prog, Hook.DISPATCHER_SWITCH, why -> dispatcherNote =
                "dispatcher halves: user-space read at the switch (fexit bpf_dispatcher_change_prog " + why + ")");
    }

    private void attachTrampolineHook(BpfFd prog) {
        int args = layout.trampolineBuild().map(KernelLayout.TrampolineBuild::args).orElse(0);
        trampolineHooked = attachFexit(prog, Hook.TRAMPOLINE_BUILD, why -> trampolineNote =
                "trampolines: user-space read at the attach poke (fexit arch_prepare_bpf_trampoline " + why
                        // 6.1: the attach builds a trampoline for the function itself, and x86 builds them for
                        // at most 6 arguments before 6.6
                        + (why.contains("ENOTSUPP") && args > 6 ? "; this kernel's BPF trampolines take at most 6 "
                                + "arguments, the function has " + args : "") + ")");
    }

    /**
     * Where the build hook did not attach (6.1 refuses it: ENOTSUPP), the update hook (fexit bpf_trampoline_update,
     * 2 arguments): each image copied as the update that attached it returns, after its attach poke
     * ({@link TrampolineCopies#afterPoke}). Where that is refused too, the build hook's note stays and names both.
     */
    private void attachTrampolineUpdateHook(FencePrograms programs) {
        if (layout.trampolineUpdate().isEmpty()) return;
        String buildNote = trampolineNote;
        BpfFd prog = loadFexit(programs::trampolineUpdated, "fence_tramp_upd",
                layout.trampolineUpdate().get().updateFunc(), why -> trampolineNote = buildNote
                        + "; fexit bpf_trampoline_update: " + why);
        trampolineHooked = attachFexit(prog, Hook.TRAMPOLINE_UPDATE, why -> trampolineNote = buildNote
                + "; fexit bpf_trampoline_update " + why);
        if (trampolineHooked) {
            trampolineCopies.afterPoke();
            // why the build hook is not the one in: kept for the summary
            trampolineVia = " (fexit bpf_trampoline_update, after the attach poke: "
                    + buildNote.replaceFirst("^trampolines: user-space read at the attach poke \\(", "")
                            .replaceFirst("\\)$", "") + ")";
        }
    }

    /** The error's first line and, for a verifier's refusal, its last two (where it says why). */
    private static String firstLine(String s) {
        List<String> lines = String.valueOf(s).lines().filter(l -> !l.isBlank()).toList();
        if (lines.size() <= 3) return String.join(" / ", lines);
        return lines.get(0) + " / ... / " + lines.get(lines.size() - 2) + " / " + lines.get(lines.size() - 1);
    }

    /** Whether the dispatcher halves are copied in the kernel at the switch. */
    public boolean dispatcherHooked() { return dispatcherHooked; }

    /**
     * How the dispatcher halves were copied: "dispatcher halves: N in-kernel copies at the switch, ..." or where they
     * were read in user space only, why.
     */
    public String dispatcherSummary() {
        return dispatcherHooked ? "dispatcher halves: " + dispatcherCopies.summary() : dispatcherNote;
    }

    private volatile boolean dispatcherHooked;
    private String dispatcherNote = "";
    private final DispatcherCopies dispatcherCopies = new DispatcherCopies();

    /** Whether the trampoline images are copied in the kernel as they are built. */
    public boolean trampolineHooked() { return trampolineHooked; }

    /**
     * How the trampoline images were copied: "trampolines: N in-kernel copies at the attach poke, ..." or where they
     * were read in user space only, why (empty where the fence is not in the kernel).
     */
    public String trampolineSummary() {
        return trampolineHooked ? "trampolines: " + trampolineCopies.summary() + trampolineVia : trampolineNote;
    }

    private volatile boolean trampolineHooked;
    private String trampolineNote = "", trampolineVia = "";
    private final TrampolineCopies trampolineCopies = new TrampolineCopies();

    /** The in-kernel copies judged to be their switch's version: to the archive, from the switch's time. */
    private void deliverSwitched(List<DispatcherCopies.Version> versions) {
        for (DispatcherCopies.Version v : versions) {
            deliver(new CapturedText(Hook.DISPATCHER_SWITCH, v.half(), v.bytes(), 0, 0, v.name(), v.monotonicNs(),
                    0, 1, 0, 0, true));
        }
    }

    static BpfFd load(byte[] insns, String name) throws BpfException {
        return FencePrograms.loadRawTracepoint(insns, name);
    }

    private BpfFd keep(BpfFd fd) {
        fds.add(fd);
        return fd;
    }

    private void startUserSpace() {
        mode = Mode.USER_SPACE;
        worker = new Thread(this::pollIdsLoop, "text-fence-user-space");
        worker.setDaemon(true);
        copier = new Thread(this::copyPinnedLoop, "text-fence-user-space-copy");
        copier.setDaemon(true);
        copier.start();
        try {
            lastPolledId = currentIdCounter();
        } catch (BpfException e) {
            lastPolledId = 0; // no baseline: the first gap is not counted
        }
        worker.start();
    }

    private void consumeLoop() {
        long parkNanos = config.pollInterval().toNanos();
        while (!stopping) {
            if (consumer.poll(this::deliverRecord) == 0) {
                incomplete.addAndGet(fragments.dropStale(STALE_GROUP_NANOS));
                releaseStaleGroups(STALE_GROUP_NANOS);
                LockSupport.parkNanos(parkNanos);
            }
        }
        consumer.poll(this::deliverRecord);
        incomplete.addAndGet(fragments.dropStale(0));
        releaseStaleGroups(0);
    }

    /** BTF objects the LOAD hook has sent once, by id (the kernel's LRU map keeps as many ids). */
    private static final int BTF_SEEN_ENTRIES = 8192;
    /** A program's records are written within microseconds; a group this old lost its last image to a full ring. */
    private static final long STALE_GROUP_NANOS = 1_000_000_000L;

    /** A program's metadata record and the images that follow it, delivered together once the last one is in. */
    private static final class Group {
        final MetaRecord meta;
        final long since = System.nanoTime();
        final List<CapturedText> images = new ArrayList<>();

        Group(MetaRecord meta) { this.meta = meta; }
    }

    private final Map<Integer, Group> groups = new java.util.HashMap<>();
    private final BtfCache btfs = new BtfCache(2 * BTF_SEEN_ENTRIES, 256L << 20);

    private void deliverRecord(ByteBuffer data, int offset, int length) {
        try {
            if (FenceRecord.kind(data, offset, length) == FenceRecord.KIND_FRAG) {
                fragments.accept(data, offset, length, this::deliverParsed);
                return;
            }
            deliverParsed(data, offset, length);
        } catch (IllegalArgumentException e) {
            incomplete.incrementAndGet(); // a malformed record: counted, and the consumer goes on
        }
    }

    private void deliverParsed(ByteBuffer data, int offset, int length) {
        int kind = FenceRecord.kind(data, offset, length);
        if (kind == FenceRecord.KIND_ATTACH) {
            recopyDispatchers(data.duplicate().order(ByteOrder.LITTLE_ENDIAN).getLong(offset + FenceRecord.TS));
            return;
        }
        if (kind == FenceRecord.KIND_META) {
            try {
                MetaRecord m = MetaRecord.parse(data, offset, length);
                if ((m.flags() & MetaRecord.F_BTF_INCLUDED) != 0) btfs.put(m.btfId(), m.btf());
                Group stale = groups.put(m.progId(), new Group(m));
                if (stale != null) releaseGroup(stale, false);
            } catch (IllegalArgumentException e) {
                metadataIncomplete.incrementAndGet();
            }
            return;
        }
        FenceRecord.Parsed r = FenceRecord.parse(data, offset, length);
        if (r.kind() == FenceRecord.KIND_TRAMP_BUILT || r.kind() == FenceRecord.KIND_TRAMP_UPDATED) {
            if (r.complete()) {
                TrampolineCopies.Late late = trampolineCopies.copied(
                        new TrampolineCopies.Copy(r.start(), r.name(), r.monotonicNs(), r.image()));
                // the loop passed the attach poke before this copy came: still that poke's version, from its time
                // (the tracker places it and re-applies the pokes inside the image after it)
                if (late != null) deliverBuilt(late.copy(), late.pokeNs());
            } else {
                incomplete.incrementAndGet();
            }
            return;
        }
        if (r.kind() == FenceRecord.KIND_DISPATCHER) {
            if (r.complete()) {
                dispatcherCopies.copied(new DispatcherCopies.Copy(r.start(), r.name(), r.monotonicNs(), r.image()));
            } else {
                incomplete.incrementAndGet();
            }
            return;
        }
        Hook hook = switch (r.kind()) {
            case FenceRecord.KIND_LOAD -> Hook.LOAD;
            case FenceRecord.KIND_FREE -> Hook.FREE;
            case FenceRecord.KIND_TRAMP_FREE -> Hook.TRAMPOLINE_FREE;
            default -> Hook.KERNEL_READ;
        };
        if (hook == Hook.FREE && !dispatchers.isEmpty() && System.nanoTime() - lastFreeRecopy > FREE_RECOPY_NANOS) {
            // a program freed may have been detached by a close (no bpf() command): its dispatcher changed then;
            // at most once per 10 ms (a churn frees thousands)
            lastFreeRecopy = System.nanoTime();
            recopyDispatchers(r.monotonicNs());
        }
        Group g = hook == Hook.LOAD ? groups.get(r.progId()) : null;
        if (r.len() == 0 && r.end() == r.start()) { // not JITed (interpreter): no text to keep
            if (g != null && (r.flags() & FenceRecord.F_LAST) != 0) releaseGroup(groups.remove(r.progId()), false);
            return;
        }
        if (!r.complete()) incomplete.incrementAndGet();
        CapturedText t = new CapturedText(hook, r.start(), r.image(), r.progId(), r.tag(), r.name(), r.monotonicNs(),
                r.funcIdx(), r.funcCnt(), r.pid(), r.tid(), r.complete());
        if (g == null) {
            deliver(t);
            return;
        }
        g.images.add(t);
        if ((r.flags() & FenceRecord.F_LAST) != 0) releaseGroup(groups.remove(r.progId()), true);
    }

    /**
     * Delivers a program's images with the metadata its META record carried — all of it when every function's image
     * came ({@code whole}), else the images alone (the metadata could not say which functions are where).
     */
    private void releaseGroup(Group g, boolean whole) {
        ProgramMetadata m = null;
        whole &= !g.images.isEmpty() && g.images.size() == g.meta.funcCnt()
                && g.images.stream().allMatch(CapturedText::complete);
        if (whole) {
            byte[] btf = g.meta.btfId() == 0 ? new byte[0] : btfs.get(g.meta.btfId());
            if (btf == null) btf = btfFromKernel(g.meta.btfId());
            m = g.meta.toMetadata(g.images, btf, layout.metadata().map(KernelLayout.Metadata::arrayValue).orElse(0));
            if (g.meta.complete() && (g.meta.btfId() == 0 || btf.length > 0)) metadataFenced.incrementAndGet();
            else metadataIncomplete.incrementAndGet();
        } else {
            metadataIncomplete.incrementAndGet();
        }
        for (CapturedText t : g.images) {
            deliver(m == null ? t : new CapturedText(t.hook(), t.address(), t.bytes(), t.progId(), t.tag(), t.name(),
                    t.monotonicNs(), t.functionIndex(), t.functionCount(), t.pid(), t.tid(), t.complete(), m));
        }
    }

    /** Programs whose images are waiting for their last one: released once no record can complete them. */
    private void releaseStaleGroups(long olderThanNanos) {
        long now = System.nanoTime();
        for (var it = groups.values().iterator(); it.hasNext(); ) {
            Group g = it.next();
            if (now - g.since >= olderThanNanos) {
                it.remove();
                releaseGroup(g, false);
            }
        }
    }

    /** A BTF object sent with an earlier program that the cache no longer holds: asked of the kernel by id. */
    private byte[] btfFromKernel(int id) {
        try (BpfFd b = Bpf.get().btfGetFdById(id)) {
            byte[] bytes = b == null ? new byte[0] : ProgramMetadata.btfBytes(b);
            if (bytes.length > 0) btfs.put(id, bytes);
            return bytes;
        } catch (BpfException e) {
            return new byte[0];
        }
    }

    // ---- module text -------------------------------------------------------------------------------------------

    private ModuleFence modules;
    private String moduleNote = "";

    /** The module fence (its own hooks and ring, any kernel with module tracepoints); a failure only says why. */
    private void startModules() {
        try {
            modules = ModuleFence.start(this::deliver, config.pollInterval(), kernel);
        } catch (IOException | RuntimeException e) {
            moduleNote = "module text not fenced: " + String.valueOf(e.getMessage()).lines().findFirst().orElse("");
        }
    }

    /** What the module fence did ("module text: 5 loads, ..."), or why it is not running. */
    public String moduleSummary() {
        return modules != null ? modules.finalSummary() : moduleNote;
    }

    private long moduleLosses() {
        return modules == null ? 0 : modules.finalLosses();
    }

    private void deliver(CapturedText t, ptfence.region.RegionMetadata metadata) {
        images.get(t.hook()).incrementAndGet();
        lastDeliveryNanos = System.nanoTime();
        synchronized (sinkLock) {
            try {
                sink.accept(t, metadata);
            } catch (IOException | RuntimeException e) {
                sinkErrors.incrementAndGet();
            }
        }
    }

    private void deliver(CapturedText t) {
        images.get(t.hook()).incrementAndGet();
        lastDeliveryNanos = System.nanoTime();
        synchronized (sinkLock) { // consumer, poller, scan and callers deliver: the sink sees one at a time
            try {
                sink.accept(t);
            } catch (IOException | RuntimeException e) {
                sinkErrors.incrementAndGet();
            }
        }
    }

    // ---- user-space fence ------------------------------------------------------------------------------------

    private void pollIdsLoop() {
        long park = config.userSpacePoll().toNanos();
        while (!stopping) {
            try {
                int id = Bpf.get().progGetNextId(lastPolledId);
                if (id < 0) {
                    if (park > 0) LockSupport.parkNanos(park); else Thread.onSpinWait();
                    continue;
                }
                // Ids are handed out in increasing order: a gap is a program that came and went unseen.
                if (id > lastPolledId + 1 && lastPolledId > 0) userMissed.addAndGet(id - lastPolledId - 1L);
                lastPolledId = id;
                if (!pinned.add(id)) continue;
                // Pinning is the race; copying can wait, the fd keeps the program alive.
                BpfFd fd = Bpf.get().progGetFdById(id);
                if (fd == null) userMissed.incrementAndGet(); // listed, gone before pinned
                else toCopy.add(fd);
            } catch (IOException e) {
                LockSupport.parkNanos(1_000_000);
            }
        }
    }

    private final java.util.concurrent.LinkedBlockingQueue<BpfFd> toCopy = new java.util.concurrent.LinkedBlockingQueue<>();
    private Thread copier;

    private void copyPinnedLoop() {
        while (true) {
            BpfFd fd;
            try {
                fd = toCopy.poll(20, java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (fd == null) {
                if (stopping) return;
                continue;
            }
            try (fd) {
                emitImages(ProgramMetadata.fetch(fd), Hook.USER_SPACE, null);
            } catch (IOException | RuntimeException e) {
                userMissed.incrementAndGet();
            }
        }
    }

    private void emitImages(ProgramMetadata m, Hook hook, Kallsyms kallsyms) {
        ProgInfo info = m.info();
        if (info.jitedInsns().length == 0) return; // interpreted or not visible to us: no text
        List<String> names = m.ksymNames();
        long now = System.nanoTime();
        int n = info.functionCount();
        for (int i = 0; i < n; i++) {
            String name = names.get(i);
            if (kallsyms != null) {
                for (Kallsyms.Symbol s : kallsyms.at(info.jitedKsyms()[i])) {
                    if (s.name().startsWith("bpf_prog_")) name = s.name();
                }
            }
            deliver(new CapturedText(hook, info.jitedKsyms()[i], info.functionImage(i), info.id(), info.tag(), name,
                    now, i, n, 0, 0, true, m));
        }
    }

    /**
     * Where the kernel's program id counter stands: the live programs' highest id can be far behind it (freed
     * programs), which would count every id in between as missed. A throw-away program tells.
     */
    private static int currentIdCounter() throws BpfException {
        byte[] insns = new ptfence.bpf.BpfAssembler().mov(ptfence.bpf.BpfAssembler.Reg.R0, 0).exit().assemble();
        try (BpfFd probe = Bpf.get().progLoad(new Bpf.ProgLoad(Bpf.PROG_TYPE_SOCKET_FILTER, insns, "fence_id_probe"))) {
            return ProgInfo.fetch(probe).id();
        }
    }

    // ---- startup scan and metadata ---------------------------------------------------------------------------

    private void scanLoadedPrograms() throws IOException {
        // read afresh, not the recording's copy: programs and trampolines loaded before the hooks took hold are here
        Kallsyms kallsyms = Kallsyms.read();
        int id = 0;
        while ((id = Bpf.get().progGetNextId(id)) >= 0) {
            if (mode == Mode.USER_SPACE && !pinned.add(id)) continue;
            try (BpfFd fd = Bpf.get().progGetFdById(id)) {
                if (fd == null) continue; // freed meanwhile: the FREE hook has it
                emitImages(ProgramMetadata.fetch(fd), Hook.SCAN, kallsyms);
            } catch (BpfException | RuntimeException e) {
                incomplete.incrementAndGet(); // one unreadable program must not stop the scan
            }
        }
        copyOutOfLineText(kallsyms);
    }

    /** Modules under which kallsyms lists out-of-line kernel text (not programs). */
    private static final java.util.Set<String> OUT_OF_LINE = java.util.Set.of("bpf", "__builtin__ftrace",
            "__builtin__kprobes");
    private static final int PAGE = 4096;

    /**
     * Copies the out-of-line text that exists now — BPF dispatchers and trampolines, ftrace and kprobe pages — via
     * the kernel memory reader. kallsyms has no sizes: each is read up to the next symbol, at most one page (a
     * dispatcher's ksym is exactly one page, allocated from the BPF pack, so not page-aligned). Later ones come through {@link #copyKernelRange} on KSYMBOL.
     * Returns how many regions were copied.
     */
    public int copyOutOfLineText(Kallsyms kallsyms) {
        List<Kallsyms.Symbol> ool = new ArrayList<>();
        for (Kallsyms.Symbol s : kallsyms.symbols()) {
            if (OUT_OF_LINE.contains(s.module()) && !s.name().startsWith("bpf_prog_")) ool.add(s);
        }
        long[] starts = kallsyms.symbols().stream().mapToLong(Kallsyms.Symbol::address).filter(a -> a != 0)
                .sorted().distinct().toArray();
        int copied = 0;
        for (Kallsyms.Symbol s : ool) {
            int i = java.util.Arrays.binarySearch(starts, s.address());
            long next = i >= 0 && i + 1 < starts.length ? starts[i + 1] : Long.MAX_VALUE;
            long end = s.address() + PAGE;
            if (Long.compareUnsigned(next, s.address()) > 0 && Long.compareUnsigned(next, end) < 0) end = next;
            int len = (int) (end - s.address());
            try {
                copyKernelRange(s.name(), s.address(), len);
                copied++;
            } catch (IOException e) {
                incomplete.incrementAndGet();
            }
        }
        return copied;
    }

    /**
     * Called by the recorder when a BPF_EVENT(PROG_LOAD) record arrives: fetches the program's metadata (info,
     * ksyms, function lengths, line and func info, BTF, translated instructions) while holding it with an fd.
     * In user-space mode this is also the fence: it copies the images. Empty when the program is already gone —
     * counted as missing metadata (the in-kernel fence's bytes still make it decodable).
     */
    public Optional<ProgramMetadata> onProgramLoaded(int progId) throws BpfException {
        try (BpfFd fd = Bpf.get().progGetFdById(progId)) {
            if (fd == null) {
                metadataMissing.incrementAndGet();
                if (mode == Mode.USER_SPACE && pinned.add(progId)) userMissed.incrementAndGet();
                return Optional.empty();
            }
            ProgramMetadata m = ProgramMetadata.fetch(fd);
            metadataFetched.incrementAndGet();
            synchronized (sinkLock) {
                try {
                    sink.metadata(m);
                } catch (IOException | RuntimeException e) {
                    sinkErrors.incrementAndGet();
                }
            }
            if (mode == Mode.USER_SPACE && pinned.add(progId)) emitImages(m, Hook.USER_SPACE, null);
            return Optional.of(m);
        }
    }

    // ---- kernel memory ---------------------------------------------------------------------------------------

    /** The kernel memory reader (kcore, else the BPF read program), opened on first use. */
    public synchronized KernelMemory kernelMemory() throws IOException {
        if (kernelMemory == null) {
            // kcore needs no struct layout: a kernel whose BTF the BPF fence cannot use still has it
            if (java.nio.file.Files.isReadable(KernelMemory.PROC_KCORE)) {
                try {
                    kernelMemory = KcoreReader.open(KernelMemory.PROC_KCORE);
                    return kernelMemory;
                } catch (IOException e) {
                    // lockdown or no CAP_SYS_RAWIO: the BPF reader below
                }
            }
            if (layout == null) layout = KernelLayout.from(kernel.vmlinux());
            kernelMemory = KernelMemory.open(layout);
        }
        return kernelMemory;
    }

    /**
     * Copies an out-of-line region (a dispatcher, trampoline, ftrace/kprobe page — on its KSYMBOL) or the core
     * kernel text and delivers it to the sink as a KERNEL_READ image.
     */
    public CapturedText copyKernelRange(String name, long address, int length) throws IOException {
        return copyKernelRange(name, address, length, System.nanoTime());
    }

    /**
     * The same, stamped {@code monotonicNs} (CLOCK_MONOTONIC): the time of the KSYMBOL that announced the range, so
     * its first version starts when the kernel registered it, not when the recorder got to it. Nothing in such a
     * range runs before it is linked in (a dispatcher before the switch to it, a trampoline before the attach poke),
     * so bytes copied a little later are the bytes of every instruction run from then on.
     */
    public CapturedText copyKernelRange(String name, long address, int length, long monotonicNs)
            throws IOException {
        if (name.startsWith(DISPATCHER_PREFIX) && length >= 2 && length % 2 == 0) {
            dispatchers.put(name, new long[] {address, length});
            byte[] page = kernelMemory().read(address, length);
            CapturedText first = null;
            for (int h = 0; h < 2; h++) { // a version is a half (DispatcherHalves)
                CapturedText t = kernelRead(name, address + (long) h * length / 2,
                        java.util.Arrays.copyOfRange(page, h * length / 2, (h + 1) * length / 2), monotonicNs);
                if (first == null) first = t;
            }
            return first;
        }
        byte[] bytes = kernelMemory().read(address, length);
        if (name.startsWith(TRAMPOLINE_PREFIX)) {
            trampolines.put(name, new long[] {address, length});
            // a new image at a reused address is copied again at its poke (a re-read at a poke is never of an exact
            // one). Forgotten in the loop's order, not the peeker's: the peeker, seconds ahead, forgot the address
            // before the loop marked the old image there exact, and the new image's attach poke then read nothing
            exactImages.remove(address);
            bytes = TrampolineImages.image(address, bytes); // the KSYMBOL's page holds neighbours (6.12)
        }
        return kernelRead(name, address, bytes, monotonicNs);
    }

    /**
     * A KSYMBOL registered an out-of-line range at {@code monotonicNs}: copied as {@link #copyKernelRange} does, except
     * a BPF dispatcher's page where the dispatcher hook runs. That page is registered once, inside the first update and
     * before its switch, so no half is in force yet; the switch's TEXT_POKE and the hook's copy give each half its
     * first version. A copy here would be read when the recorder's loop gets to the KSYMBOL, seconds late under load,
     * and give the idle half the bytes of a later update (guest 6.1: the pack's int3 fill in kcore, a later version
     * archived). Returns the first copy, or null where only the page was noted.
     */
    public CapturedText rangeRegistered(String name, long address, int length, long monotonicNs) throws IOException {
        if (dispatcherHooked && name.startsWith(DISPATCHER_PREFIX) && length >= 2 && length % 2 == 0) {
            dispatchers.put(name, new long[] {address, length});
            return null;
        }
        return copyKernelRange(name, address, length, monotonicNs);
    }

    private CapturedText kernelRead(String name, long address, byte[] bytes, long monotonicNs) {
        CapturedText t = new CapturedText(Hook.KERNEL_READ, address, bytes, 0, 0, name, monotonicNs, 0, 1,
                0, 0, true);
        deliver(t);
        return t;
    }

    private static final String DISPATCHER_PREFIX = "bpf_dispatcher_", TRAMPOLINE_PREFIX = "bpf_trampoline_";
    /**
     * BPF trampoline images registered and not yet unregistered (name -> {address, length}). The kernel registers an
     * image's symbol before it writes it (6.1), so the copy on its KSYMBOL can be too early; the image becomes
     * reachable only through a poke at the traced function (a TEXT_POKE), after which it is copied again.
     */
    private final Map<String, long[]> trampolines = new ConcurrentHashMap<>();

    /**
     * A KSYMBOL unregister at {@code address}: a trampoline image is about to be freed, no more copies of it. All of
     * one trampoline's images have one name (bpf_trampoline_KEY), and an old image is unregistered after its rcu-tasks
     * grace periods, often after the next image at another address was registered: only an entry at this address goes
     * (guest 6.1: the next image's entry went, and its attach poke found no image to give its in-kernel copy to).
     */
    public void kernelRangeGone(String name, long address) {
        trampolines.computeIfPresent(name, (n, v) -> v[0] == address ? null : v);
        builtImages.remove(address);
        exactImages.remove(address);
        dispatchers.remove(name);
        switchedByPoke.remove(name);
    }
    private static final long FREE_RECOPY_NANOS = 10_000_000L;
    private long lastFreeRecopy;
    /** BPF dispatcher pages copied so far (name -> {address, length}): rewritten in place when attachments change. */
    private final Map<String, long[]> dispatchers = new ConcurrentHashMap<>();
    /** Dispatchers whose switches this recording has seen as TEXT_POKEs: those give their versions exactly. */
    private final java.util.Set<String> switchedByPoke = ConcurrentHashMap.newKeySet();
    /** The recorder has handed over a TEXT_POKE: this recording shows switches as pokes ({@link #textPoked}). */
    private volatile boolean pokesSeen;

    /**
     * Copies every known dispatcher again, as of {@code monotonicNs} (an attach or detach just ended, or a program
     * was freed), where no TEXT_POKE has shown its switches (kernels before 5.9, a recording without TEXT_POKE
     * records): both halves, each a new version where it changed.
     */
    private void recopyDispatchers(long monotonicNs) {
        // Where the recording has TEXT_POKE records, every switch comes as one (text_poke_bp reports them from 5.9):
        // a recopy adds nothing, and, stamped at the consumer's time, it ran ahead of the loop's own switches (guest,
        // 6.1: a copy at a program's free at 262.03 s came while the loop, seconds behind, stood between the
        // dispatcher's KSYMBOL and its first switch poke, before every switch of 248-262 s)
        if (pokesSeen) return;
        for (var e : dispatchers.entrySet()) {
            if (switchedByPoke.contains(e.getKey())) continue; // the pokes copy the half switched to, at the switch
            try {
                copyKernelRange(e.getKey(), e.getValue()[0], (int) e.getValue()[1], monotonicNs);
            } catch (IOException ex) {
                incomplete.incrementAndGet();
            }
        }
    }

    /**
     * A TEXT_POKE at {@code monotonicNs} that wrote {@code newBytes} at {@code address}. A call or jump whose target
     * lies in a dispatcher's page is that dispatcher's switch to the half it targets (bpf_dispatcher_update: the
     * static call, its trampoline and inline call sites, or on older kernels the jump at the dispatcher function's
     * entry): that half, written in full before the switch, is copied as its version from the poke's time. Only the
     * half: the other one is the idle half the next update writes first, so a copy of the whole page taken as the
     * recorder gets to the poke pairs this version with whatever the next update has already written (the guest
     * churn found 4 of 20 whole-page copies equal to kcore's). The half switched to is written again only after a
     * switch away from it and an RCU grace period, so the copy has a whole update's time to be taken.
     * <p>
     * Live trampolines are copied again too (the poke may be the one that makes a freshly written image reachable).
     * Needs no BPF hook: it works where the in-kernel fence cannot load. A copy equal to the last is no new version.
     */
    public void textPoked(long address, byte[] newBytes, long recordTime, long monotonicNs) {
        pokesSeen = true;
        Peeked early = peeked.remove(new PokeKey(address, recordTime));
        if (dispatcherHooked) deliverSwitched(dispatcherCopies.settle(monotonicNs));
        long target = DispatcherHalves.branchTarget(address, newBytes);
        if (target != 0) {
            for (var e : dispatchers.entrySet()) {
                long page = e.getValue()[0];
                int length = (int) e.getValue()[1];
                long half = DispatcherHalves.halfOf(page, length, target);
                if (half == 0) continue;
                switchedByPoke.add(e.getKey());
                try {
                    byte[] bytes = early != null && early.address() == half ? early.bytes()
                            : kernelMemory().read(half, length / 2);
                    kernelRead(e.getKey(), half, bytes, monotonicNs);
                    // the in-kernel copy of this switch, judged at a later poke, replaces these bytes where they differ
                    if (dispatcherHooked) dispatcherCopies.switched(half, e.getKey(), monotonicNs, bytes);
                } catch (IOException ex) {
                    incomplete.incrementAndGet();
                }
            }
        }
        long built = trampolineHooked && target != 0 ? attachedTrampoline(target, early, monotonicNs) : 0;
        for (var e : trampolines.entrySet()) {
            try {
                long a = e.getValue()[0];
                if (a == built || builtImages.contains(a)) continue; // its build's copy is its version (exact)
                if (early != null && early.address() == a) {
                    kernelRead(e.getKey(), a, early.bytes(), monotonicNs);
                    exactImages.add(a);
                } else if (!exactImages.contains(a)) {
                    copyKernelRange(e.getKey(), a, (int) e.getValue()[1], monotonicNs);
                }
            } catch (IOException ex) {
                incomplete.incrementAndGet();
            }
        }
    }

    /**
     * An attach poke at {@code monotonicNs} whose call targets {@code target}: where it is a live trampoline image
     * and the trampoline hook copied its build, that copy is delivered as the version from the poke, and the image
     * is left out of the later reads at every poke (a late read would give it bytes of a later time: the retirement
     * poke, or a new image at the same address). Returns the image's address, or 0 where no copy matched (the read
     * at the poke stays).
     */
    private long attachedTrampoline(long target, Peeked early, long monotonicNs) {
        for (var e : trampolines.entrySet()) {
            if (e.getValue()[0] != target) continue;
            byte[] read = early != null && early.address() == target ? early.bytes() : null;
            // the ring's consumer normally has the build's copy long before the loop gets to the poke; where the loop
            // is right behind the kernel it may not yet
            // the update rule's copy is taken after the poke and must be delivered before any later poke: waited
            // for; a build's copy that is not there yet is judged when it comes (deliverParsed), so no wait
            TrampolineCopies.Copy c = trampolineCopies.attached(target, e.getKey(), monotonicNs, read,
                    trampolineCopies.isAfterPoke() ? UPDATE_WAIT_NANOS : 0);
            if (c == null) return 0;
            deliverBuilt(c, monotonicNs);
            return target;
        }
        return 0;
    }

    /**
     * An in-kernel trampoline copy as the version from its attach poke at {@code pokeNs}. The build returns the code
     * plus BPF_INSN_SAFETY (6.12; the hook caps it at im->size): cut where the pack's int3 fill begins, as a read is,
     * so the version is the image's code. The image is then left out of later reads at other pokes.
     */
    private void deliverBuilt(TrampolineCopies.Copy c, long pokeNs) {
        deliver(new CapturedText(trampolineCopies.isAfterPoke() ? Hook.TRAMPOLINE_UPDATE : Hook.TRAMPOLINE_BUILD,
                c.image(), TrampolineImages.image(c.image(), c.bytes()), 0, 0, c.name(), pokeNs, 0, 1, 0, 0, true));
        long[] registered = trampolines.get(c.name());
        // a late copy: only while the loop still has the image registered (not a later image at the address)
        if (registered != null && registered[0] == c.image()) builtImages.add(c.image());
    }
    /**
     * The update hook's copy is taken after the poke (after the old image's retirement poke too, which under an
     * emulated guest can take a while): the loop, when right behind the kernel, waits longer for it.
     */
    private static final long UPDATE_WAIT_NANOS = 1_000_000_000L;
    /** Trampoline images whose version is their build's in-kernel copy (the loop's view: until their unregister). */
    private final java.util.Set<Long> builtImages = ConcurrentHashMap.newKeySet();

    private record PokeKey(long address, long time) {}

    /** Text copied by the recorder's peeker at a poke, for the loop to take when it gets to the same poke. */
    private record Peeked(long address, byte[] bytes) {}

    private final Map<PokeKey, Peeked> peeked = new ConcurrentHashMap<>();
    /**
     * Trampoline images copied at the poke that made them reachable ({@link #peeked}): complete then, and changed
     * after only by pokes inside them, which the tracker applies exactly, so the copy on every later poke is left
     * out for them. That copy is read when the loop gets there, a second late in the guest: it gave an image's
     * version from an earlier time the retirement poke (jmp to the epilogue at ip_after_call) made later.
     */
    private final java.util.Set<Long> exactImages = ConcurrentHashMap.newKeySet();
    /** Dispatcher pages and trampoline images the peeker has seen registered: address -> length. */
    private final Map<Long, Integer> peekedRanges = new ConcurrentHashMap<>();

    /** The recorder's peeker saw a KSYMBOL (un)register of {@code name} before its loop got there. */
    public void ksymbolPeeked(long address, int length, String name, boolean unregister) {
        if (!name.startsWith(DISPATCHER_PREFIX) && !name.startsWith(TRAMPOLINE_PREFIX) || length <= 0) return;
        if (unregister) peekedRanges.remove(address);
        else peekedRanges.put(address, name.startsWith(DISPATCHER_PREFIX) ? -length : length);
    }

    /**
     * The recorder's peeker saw a TEXT_POKE (record time {@code recordTime}) before its loop got there. A jump or
     * call to a dispatcher half's first byte (a switch to it) or to a trampoline image (the attach that makes it
     * reachable) has that text copied now, while it is the version the poke put in force; the loop delivers it when
     * it gets to the same poke ({@link #textPoked}). In the guest churn the loop ran up to 1.5 s behind the kernel,
     * several dispatcher updates, so its own copy would hold a later version. Only where kcore is the reader (a
     * positional read, safe beside the loop's).
     */
    public void peeked(long address, byte[] newBytes, long recordTime) {
        long target = DispatcherHalves.branchTarget(address, newBytes);
        if (target == 0 || peekedRanges.isEmpty() || !(kernelMemory instanceof KcoreReader kcore)) return;
        for (var r : peekedRanges.entrySet()) {
            long start = r.getKey();
            int len = r.getValue();
            long at = len < 0 ? DispatcherHalves.halfOf(start, -len, target) : target == start ? start : 0;
            if (at == 0) continue;
            try {
                if (peeked.size() > 4096) peeked.clear(); // bounded: the loop takes each as it passes the poke
                byte[] text = kcore.read(at, len < 0 ? -len / 2 : len);
                peeked.put(new PokeKey(address, recordTime),
                        new Peeked(at, len < 0 ? text : TrampolineImages.image(at, text)));
            } catch (IOException e) {
                // the loop reads it itself
            }
            return;
        }
    }

    /** The name of the core kernel text image (perf's name for the kernel map). */
    public static final String CORE_TEXT_NAME = "[kernel.kallsyms]_text";

    /** Copies the core kernel text [_stext, _etext) (the archive deduplicates it by content, once per boot). */
    public CapturedText copyCoreKernelText() throws IOException {
        Kallsyms k = kernel.kallsyms();
        long start = k.require("_stext"), end = k.require("_etext");
        return copyKernelRange(CORE_TEXT_NAME, start, Math.toIntExact(end - start));
    }

    /** Run count and time of one hook program (meaningful while BPF run-time stats are enabled). */
    public record HookRunStats(long runs, long runTimeNs, long recursionMisses) {}

    /** Per hook: how often its program ran and for how long (kernel.bpf_stats_enabled or BPF_ENABLE_STATS). */
    public Map<Hook, HookRunStats> hookRunStats() throws BpfException {
        Map<Hook, HookRunStats> out = new EnumMap<>(Hook.class);
        for (var e : hookPrograms.entrySet()) {
            if (e.getValue().isClosed()) continue;
            ProgInfo info = ProgInfo.fetch(e.getValue());
            out.put(e.getKey(), new HookRunStats(info.runCount(), info.runTimeNs(), info.recursionMisses()));
        }
        return out;
    }

    // ---- counters, drain, close ------------------------------------------------------------------------------

    public FenceCounters counters() {
        Map<Hook, Long> byHook = new EnumMap<>(Hook.class);
        images.forEach((h, n) -> byHook.put(h, n.get()));
        long[] s = readStats();
        return new FenceCounters(byHook, s[FencePrograms.STAT_RESERVE_FAILED], s[FencePrograms.STAT_SUBMITTED],
                incomplete.get() + moduleLosses(), s[FencePrograms.STAT_FUNCS_TRUNCATED], userMissed.get(), metadataFetched.get(),
                metadataMissing.get(), sinkErrors.get(), recursionMisses(), metadataFenced.get(),
                metadataIncomplete.get());
    }

    private long recursionMisses() {
        try {
            return hookRunStats().values().stream().mapToLong(HookRunStats::recursionMisses).sum();
        } catch (BpfException e) {
            return 0;
        }
    }

    long[] readStats() { // package-private: tests wait on the kernel's own counts
        long[] out = new long[FencePrograms.STATS];
        if (stats == null || stats.isClosed()) return out;
        byte[] key = new byte[4], value = new byte[8];
        for (int i = 0; i < out.length; i++) {
            ByteBuffer.wrap(key).order(ByteOrder.LITTLE_ENDIAN).putInt(0, i);
            try {
                if (Bpf.get().mapLookup(stats, key, value))
                    out[i] = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
            } catch (BpfException e) {
                out[i] = -1;
            }
        }
        return out;
    }

    /**
     * Waits until nothing has been delivered for {@code quiet} (FREE records trail close() by an RCU grace period
     * and a workqueue hop, sometimes more than a second), at most {@code max}.
     */
    public void awaitQuiet(Duration quiet, Duration max) throws IOException {
        long deadline = System.nanoTime() + max.toNanos();
        while (System.nanoTime() < deadline) {
            boolean ringEmpty = consumer == null || consumer.pending() == 0;
            if (ringEmpty && System.nanoTime() - lastDeliveryNanos >= quiet.toNanos()) break;
            LockSupport.parkNanos(5_000_000);
        }
        synchronized (sinkLock) {
            sink.flush();
        }
    }

    @Override
    public void close() throws IOException {
        // Detach first (links, then programs), then let the consumer take what is left, then unmap.
        links.forEach(BpfFd::close);
        if (modules != null) modules.close();
        stopWorker();
        if (dispatcherHooked) deliverSwitched(dispatcherCopies.settleAll()); // every switch is known by now
        trampolineCopies.end();
        FenceCounters last = counters();
        lastCounters = last;
        releaseKernelSide();
        if (kernelMemory != null) kernelMemory.close();
        synchronized (sinkLock) {
            sink.flush();
        }
    }

    private volatile FenceCounters lastCounters;

    /** Whether the ring's worker ended (else the ring must stay mapped: it still reads it). */
    private boolean workerEnded = true;

    private void stopWorker() {
        stopping = true;
        workerEnded = ParkedWorker.stop(worker);
        worker = null;
        if (copier != null) {
            try {
                copier.join(30_000); // it empties the queue of pinned programs first
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            copier = null;
        }
        stopping = false;
    }

    /** Counters as they were at close (the stats map is gone after it). */
    public FenceCounters finalCounters() {
        return lastCounters != null ? lastCounters : counters();
    }

    private void releaseKernelSide() {
        links.forEach(BpfFd::close);
        links.clear();
        for (int i = fds.size() - 1; i >= 0; i--) {
            if (fds.get(i) != ring && fds.get(i) != stats) fds.get(i).close();
        }
        hookPrograms.clear();
        if (mapping != null && workerEnded) mapping.close();
        if (stats != null) stats.close();
        if (ring != null) ring.close();
        fds.clear();
        mapping = null;
        consumer = null;
    }
}

package ptfence.fence;

import ptfence.bpf.Kallsyms;
import ptfence.region.KernelMetadata;
import ptfence.region.RegionMetadata;
import ptfence.ring.BpfRingBuffer;
import ptfence.sys.Bpf;
import ptfence.sys.BpfException;
import ptfence.sys.BpfFd;
import ptfence.sys.BpfRingMapping;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The fence for kernel module text. Module loads emit no KSYMBOL, so the fence hooks the module tracepoints
 * itself ({@link ModulePrograms}): at {@code module_load} it copies core and init text in the loading thread before
 * init runs, at {@code module_free} the core text again before it is freed, and when {@code do_free_init} runs it
 * notes each init text about to be freed. Modules loaded before the fence are copied at start (the load program run
 * on each {@code __this_module}). Images go to the fence's sink as MODULE_LOAD / MODULE_SCAN / MODULE_FREE, core text
 * named {@code [name]} and init text {@code [name].init}, loads and scans with the module's kallsyms lines
 * ({@link KernelMetadata}). A text pokes later (jump labels) comes as TEXT_POKE records through the recorder.
 * <p>
 * Needs only ring buffers and bpf_probe_read_kernel (Linux 5.8+) and the module tracepoints; kernels without
 * CONFIG_MODULES have nothing to fence ({@link #start} then fails with a line that says so).
 */
public final class ModuleFence implements AutoCloseable {
    /** Where images go (the text fence's sink, one at a time). */
    public interface Delivery {
        void deliver(CapturedText t, RegionMetadata metadata);
    }

    private static final int RING = 32 << 20;
    private static final long STALE_NANOS = 2_000_000_000L;

    private final Delivery out;
    private final Duration poll;
    private final List<BpfFd> fds = new ArrayList<>(), links = new ArrayList<>();
    private BpfFd ring, stats, scanProg;
    private BpfRingMapping mapping;
    private BpfRingBuffer consumer;
    private Thread worker;
    private volatile boolean stopping;
    private final String release;
    private String note = "";
    private final AtomicLong loads = new AtomicLong(), frees = new AtomicLong(), scans = new AtomicLong(),
            initFrees = new AtomicLong(), incomplete = new AtomicLong(), symbolsMissing = new AtomicLong(),
            symbolsCopied = new AtomicLong(), symbolsRead = new AtomicLong(), symbolsWithInit = new AtomicLong();

    /** Chunks of one text being put together. */
    private static final class Pending {
        final byte[] bytes;
        final long since = System.nanoTime();
        int got;
        boolean failed;

        Pending(int size) { bytes = new byte[size]; }
    }

    private final Map<String, Pending> pending = new HashMap<>();
    /** Init texts delivered and not yet freed, by address. */
    private final Map<Long, CapturedText> liveInit = new HashMap<>();

    private final RunningKernel kernel;

    private ModuleFence(Delivery out, Duration poll, RunningKernel kernel) {
        this.out = out;
        this.poll = poll;
        this.kernel = kernel;
        String r;
        try {
            r = Files.readString(KernelText.OSRELEASE).trim();
        } catch (IOException e) {
            r = "";
        }
        this.release = r;
    }

    /** Hooks the module tracepoints and copies the modules loaded now. */
    public static ModuleFence start(Delivery out, Duration poll) throws IOException {
        return start(out, poll, RunningKernel.current());
    }

    /** Starts on the recording's one reading of kallsyms and the vmlinux BTF. */
    public static ModuleFence start(Delivery out, Duration poll, RunningKernel kernel) throws IOException {
        ModuleFence f = new ModuleFence(out, poll, kernel);
        try {
            f.startHooks();
        } catch (IOException | RuntimeException e) {
            f.close();
            throw e;
        }
        return f;
    }

    private void startHooks() throws IOException {
        if (!Files.exists(java.nio.file.Path.of("/proc/modules")))
            throw new IOException("this kernel has no loadable modules (no /proc/modules)");
        ModuleLayout layout = ModuleLayout.from(kernel.vmlinux());
        Kallsyms syms = kernel.kallsyms();
        Bpf bpf = Bpf.get();
        ring = keep(bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, RING, 0, "fence_mod_rb"));
        stats = keep(bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "fence_mod_st"));
        mapping = BpfRingMapping.map(ring, RING);
        consumer = new BpfRingBuffer(mapping.consumerPage(), mapping.producerArea(), RING);
        ModulePrograms p = new ModulePrograms(layout, ring.fd(), stats.fd());
        BpfFd free = keep(TextFence.load(p.copy(ModulePrograms.KIND_FREE, false), "fence_mod_free"));
        BpfFd load = keep(TextFence.load(p.copy(ModulePrograms.KIND_LOAD, true), "fence_mod_load"));
        scanProg = keep(TextFence.load(p.copy(ModulePrograms.KIND_SCAN, true), "fence_mod_scan"));
        var doFreeInit = syms.address("do_free_init");
        var list = syms.address("init_free_list");
        BpfFd initFree = null;
        if (doFreeInit.isPresent() && list.isPresent() && layout.initfreeText().isPresent()) {
            initFree = keep(TextFence.load(p.initFree(doFreeInit.getAsLong(), list.getAsLong()), "fence_mod_initf"));
        } else {
            note = "init text ends at its module's free (no do_free_init/init_free_list/mod_initfree)";
        }
        worker = new Thread(this::consumeLoop, "module-fence-consumer");
        worker.setDaemon(true);
        worker.start();
        // free before load: from then on no text can go unseen
        links.add(bpf.rawTracepointOpen("module_free", free));
        if (initFree != null) links.add(bpf.rawTracepointOpen("workqueue_execute_start", initFree));
        links.add(bpf.rawTracepointOpen("module_load", load));
        // read again now the hooks are on: a module loaded since the recording's first read is in this one
        scan(Kallsyms.read());
    }

    /** Copies every module loaded now: the load program run on its {@code __this_module}. */
    private void scan(Kallsyms syms) {
        for (Kallsyms.Symbol s : syms.symbols()) {
            if (!s.name().equals("__this_module") || s.module().isEmpty()) continue;
            byte[] ctx = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, s.address()).array();
            try {
                Bpf.get().progTestRun(scanProg, ctx);
            } catch (BpfException e) {
                incomplete.incrementAndGet(); // e.g. a kernel without raw_tp test runs (before 5.10)
            }
        }
    }

    private BpfFd keep(BpfFd fd) {
        fds.add(fd);
        return fd;
    }

    private void consumeLoop() {
        while (!stopping) {
            symbolLines.nextBatch();
            if (consumer.poll(this::onRecord) == 0) {
                dropStale(STALE_NANOS);
                LockSupport.parkNanos(poll.toNanos());
            }
        }
        symbolLines.nextBatch();
        consumer.poll(this::onRecord);
        dropStale(0);
    }

    /** Waits until the ring is empty (at most {@code max}). */
    public void drain(Duration max) {
        long deadline = System.nanoTime() + max.toNanos();
        while (consumer != null && consumer.pending() > 0 && System.nanoTime() < deadline) {
            LockSupport.parkNanos(5_000_000);
        }
    }

    private void onRecord(ByteBuffer data, int offset, int length) {
        FenceRecord.Parsed r;
        try {
            r = FenceRecord.parse(data, offset, length);
        } catch (IllegalArgumentException e) {
            incomplete.incrementAndGet();
            return;
        }
        if (r.kind() == ModulePrograms.KIND_INIT_FREE) {
            CapturedText init = liveInit.remove(r.start());
            if (init != null) {
                initFrees.incrementAndGet();
                out.deliver(freed(init, r.monotonicNs()), null);
            }
            return;
        }
        long size = r.end() - r.start();
        String key = r.kind() + ":" + Long.toHexString(r.start()) + ":" + r.monotonicNs() + ":" + r.funcIdx();
        Pending p = pending.get(key);
        if (p == null) {
            if (size <= 0) {
                incomplete.incrementAndGet();
                return;
            }
            p = new Pending((int) Math.min(size, ModulePrograms.MAX_TEXT));
            pending.put(key, p);
        }
        if (r.err() != 0 || r.offset() + r.image().length > p.bytes.length) {
            p.failed = true;
        } else {
            System.arraycopy(r.image(), 0, p.bytes, r.offset(), r.image().length);
            p.got += r.image().length;
        }
        if ((r.flags() & FenceRecord.F_LAST) == 0) return;
        pending.remove(key);
        boolean complete = !p.failed && p.got == p.bytes.length && (r.flags() & FenceRecord.F_TRUNC) == 0;
        String module = r.name();
        if (r.funcIdx() == ModulePrograms.PART_SYMBOLS) {
            // no text: one that cannot be had leaves the load's texts to /proc/kallsyms
            if (complete) copiedSymbols.put(module + "@" + r.monotonicNs(), new SymbolTable(p.bytes, r.progId(), r.funcCnt() == 1));
            return;
        }
        if (!complete) {
            incomplete.incrementAndGet();
            return;
        }
        String name = r.funcIdx() == 0 ? "[" + module + "]" : "[" + module + "].init";
        Hook hook = switch (r.kind()) {
            case ModulePrograms.KIND_LOAD -> Hook.MODULE_LOAD;
            case ModulePrograms.KIND_SCAN -> Hook.MODULE_SCAN;
            default -> Hook.MODULE_FREE;
        };
        CapturedText t = new CapturedText(hook, r.start(), p.bytes, 0, 0, name, r.monotonicNs(), r.funcIdx(), 2,
                r.pid(), r.tid(), true);
        switch (hook) {
            case MODULE_LOAD -> loads.incrementAndGet();
            case MODULE_SCAN -> scans.incrementAndGet();
            default -> frees.incrementAndGet();
        }
        if (hook == Hook.MODULE_FREE) {
            out.deliver(t, null);
            // an init text never reported freed (no hook, or the module failed its init) ends with the module
            liveInit.values().removeIf(i -> {
                if (!i.name().equals("[" + module + "].init")) return false;
                out.deliver(freed(i, r.monotonicNs()), null);
                return true;
            });
            return;
        }
        if (r.funcIdx() == 1) liveInit.put(r.start(), t);
        out.deliver(t, symbols(module, r.monotonicNs()));
    }

    private static CapturedText freed(CapturedText t, long at) {
        return new CapturedText(Hook.MODULE_FREE, t.address(), t.bytes(), 0, 0, t.name(), at, t.functionIndex(),
                t.functionCount(), 0, 0, true);
    }

    /** /proc/kallsyms read once per batch of texts the consumer takes (a read costs seconds in a slow guest). */
    private final ModuleSymbols symbolLines = new ModuleSymbols(() -> Files.lines(Kallsyms.PROC));

    /**
     * A module's symbol table as copied in the kernel, {@code n} symbols ({@link ModuleSymbols#fromTable}): the full
     * one with init symbols ({@code full}), else the core one.
     */
    private record SymbolTable(byte[] blob, int n, boolean full) {}

    /**
     * The symbol tables copied with the load's (or scan's) texts, by {@code module@ts}; the last 256, kept past the
     * core text's delivery for its init text, which may never come (a module without one).
     */
    private final Map<String, SymbolTable> copiedSymbols = new java.util.LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, SymbolTable> eldest) {
            return size() > 256;
        }
    };

    /**
     * The module's symbols: those copied at its load in the kernel (the same program run, same time stamp), else
     * its lines of /proc/kallsyms read as its text arrives (the module may be gone: then none).
     */
    private RegionMetadata symbols(String module, long at) {
        SymbolTable table = copiedSymbols.get(module + "@" + at);
        byte[] lines = null;
        if (table != null) {
            try {
                lines = ModuleSymbols.fromTable(table.blob(), table.n(), module);
                symbolsCopied.incrementAndGet();
                if (table.full()) symbolsWithInit.incrementAndGet();
            } catch (IllegalArgumentException e) {
                lines = null; // a table not laid out as the kernels we know do: kallsyms instead
            }
        }
        if (lines == null) {
            lines = symbolLines.of(module);
            if (lines.length == 0) symbolsMissing.incrementAndGet();
            else symbolsRead.incrementAndGet();
        }
        return new KernelMetadata(release, lines, null);
    }

    private void dropStale(long olderThan) {
        long now = System.nanoTime();
        pending.values().removeIf(p -> {
            if (now - p.since < olderThan) return false;
            incomplete.incrementAndGet(); // its last chunk never came: a full ring
            return true;
        });
    }

    /** Texts lost: chunks dropped by a full ring, faulted reads, texts past the size limit. */
    public long losses() {
        return incomplete.get() + stat(FencePrograms.STAT_RESERVE_FAILED);
    }

    public String summary() {
        String s = String.format("module text: %d loads, %d frees, %d at start, %d init texts freed; losses=%d",
                loads.get(), frees.get(), scans.get(), initFrees.get(), losses());
        s += String.format("; symbols copied at load for %d texts (%d with init symbols), read from kallsyms for %d",
                symbolsCopied.get(), symbolsWithInit.get(), symbolsRead.get());
        if (symbolsMissing.get() > 0) s += "; symbols missing for " + symbolsMissing.get();
        return note.isEmpty() ? s : s + " (" + note + ")";
    }

    private long stat(int slot) {
        if (stats == null || stats.isClosed()) return 0;
        byte[] key = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, slot).array(), value = new byte[8];
        try {
            return Bpf.get().mapLookup(stats, key, value)
                    ? ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN).getLong(0) : 0;
        } catch (BpfException e) {
            return 0;
        }
    }

    private volatile String finalSummary;
    private volatile long finalLosses = -1;

    /** The summary as it was at close (the stats map is gone after it). */
    public String finalSummary() { return finalSummary != null ? finalSummary : summary(); }

    public long finalLosses() { return finalLosses >= 0 ? finalLosses : losses(); }

    @Override
    public void close() {
        links.forEach(BpfFd::close);
        links.clear();
        stopping = true;
        boolean ended = ParkedWorker.stop(worker);
        worker = null;
        // still taking texts after 2 min: those left in the ring reach no archive (at least one, counted)
        if (!ended) {
            incomplete.incrementAndGet();
            note = (note.isEmpty() ? "" : note + "; ") + "consumer still busy at the stop: texts left in "
                    + "its ring not archived";
        }
        finalLosses = losses();
        finalSummary = summary();
        if (mapping != null && ended) mapping.close(); // else left mapped: the worker still reads it
        mapping = null;
        consumer = null;
        for (int i = fds.size() - 1; i >= 0; i--) fds.get(i).close();
        fds.clear();
    }
}

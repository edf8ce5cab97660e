package ptfence.sideband;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import ptfence.flow.Event;
import ptfence.image.CodeSpace;
import ptfence.image.Image;
import ptfence.image.Section;
import ptfence.output.TextSink;

/**
 * The code a perf_event sideband session shows the flow decoder, the way ptxed's {@code --pevent:*} options
 * drive it (libipt-sb): the decoder reports every event it meets; each record whose time the event's TSC has
 * reached is printed (per {@code --sb:*}) and applied, in time order across all sideband files. MMAP/MMAP2
 * records add file ranges to their process's image, FORK gives a child its parent's mappings, COMM.EXEC gives a
 * process a fresh image, and on the primary file ITRACE_START, SWITCH and SWITCH_CPU_WIDE pick the process the
 * traced CPU runs. A switch waits for a place where the trace is (probably) in the kernel, decided from the
 * events' IPs and {@code --pevent:kernel-start}, because the records come slightly earlier than the trace
 * reaches them. Until the first switch the decoder reads the image it was started with (--raw/--elf).
 *
 * <p>The answer to {@link #find} changes only inside {@link #onEvent}, which says when it did, so a decoder
 * drops what it cached then. Sideband state follows the trace's events in order, so decoding with a session
 * is sequential.
 */
public final class PeventSession implements CodeSpace {
    /**
     * How one sideband file is read and used: the record format (sample type, time conversion, TSC offset), whether
     * it is the traced CPU's own file (primary) or another CPU's (secondary: only process images, never switches),
     * where the kernel starts, the directory prepended to mapped file names, and the vdso images per ABI.
     */
    public record Channel(PeventDump.Config format, boolean primary, long kernelStart, String sysroot,
                          String vdsoX64, String vdsoX32, String vdsoIa32) {
        /** ptxed's defaults: kernel start at the top of the address space (all addresses are user space). */
        public static final Channel DEFAULT = new Channel(PeventDump.Config.DEFAULT, false, -1L, null, null, null, null);

        public Channel withFormat(PeventDump.Config v) { return new Channel(v, primary, kernelStart, sysroot, vdsoX64, vdsoX32, vdsoIa32); }
        public Channel withPrimary(boolean v) { return new Channel(format, v, kernelStart, sysroot, vdsoX64, vdsoX32, vdsoIa32); }
        public Channel withKernelStart(long v) { return new Channel(format, primary, v, sysroot, vdsoX64, vdsoX32, vdsoIa32); }
        public Channel withSysroot(String v) { return new Channel(format, primary, kernelStart, v, vdsoX64, vdsoX32, vdsoIa32); }
        public Channel withVdsoX64(String v) { return new Channel(format, primary, kernelStart, sysroot, v, vdsoX32, vdsoIa32); }
        public Channel withVdsoX32(String v) { return new Channel(format, primary, kernelStart, sysroot, vdsoX64, v, vdsoIa32); }
        public Channel withVdsoIa32(String v) { return new Channel(format, primary, kernelStart, sysroot, vdsoX64, vdsoX32, v); }
    }

    private static final int PERF_RECORD_MMAP = 1;
    private static final int PERF_RECORD_LOST = 2;
    private static final int PERF_RECORD_COMM = 3;
    private static final int PERF_RECORD_FORK = 7;
    private static final int PERF_RECORD_MMAP2 = 10;
    private static final int PERF_RECORD_AUX = 11;
    private static final int PERF_RECORD_ITRACE_START = 12;
    private static final int PERF_RECORD_SWITCH = 14;
    private static final int PERF_RECORD_SWITCH_CPU_WIDE = 15;
    private static final int MISC_CPUMODE_MASK = 7;
    private static final int MISC_KERNEL = 1;

    // Where the trace is, as far as events tell (libipt's ploc_*).
    private static final int LOC_UNKNOWN = 0;
    private static final int LOC_USER = 1;
    private static final int LOC_LIKELY_USER = 2;
    private static final int LOC_KERNEL = 3;
    private static final int LOC_LIKELY_KERNEL = 4;

    private static final int ABI_UNKNOWN = 0;
    private static final int ABI_X64 = 1;
    private static final int ABI_X32 = 2;
    private static final int ABI_IA32 = 3;

    private static final String BAD_CONFIG = "bad configuration";

    private record Mapping(Path file, long offset, long size, long vaddr) {}

    /** A process: its image and the ABI of the first ELF mapped into it (picks the vdso). */
    private static final class Context {
        final long pid;
        final Image image;
        int abi;

        Context(long pid, Image image) {
            this.pid = pid;
            this.image = image;
        }
    }

    /** One sideband file and what it decided: the process it switched to and a switch still waiting. */
    private static final class Feed {
        final PeventStream stream;
        final Channel channel;
        int location = LOC_UNKNOWN;
        Context context;
        Context nextContext;
        /** A record was read and not yet passed (false at the end of the file). */
        boolean pending;

        Feed(PeventStream stream, Channel channel) {
            this.stream = stream;
            this.channel = channel;
        }
    }

    private final int flags;
    private final boolean warnings;
    private final boolean showSwitch;
    private final Path dir;
    private final Image kernel = new Image();
    private final Map<Long, Context> contexts = new HashMap<>();
    private final Map<Path, byte[]> files = new HashMap<>();
    /** Every process mapping the same file range at the same address shares one section (libipt's iscache). */
    private final Map<Mapping, Section> sections = new HashMap<>();
    private final List<Feed> waiting = new ArrayList<>();
    /** Files with a record still to apply, ordered by that record's time. */
    private final List<Feed> active = new ArrayList<>();
    /** Files at their end that may still have a switch to place. */
    private final List<Feed> retired = new ArrayList<>();
    private Image current;
    private boolean changed;
    private TextSink out;

    /**
     * @param initial    the image the decoder reads until the sideband switches to a process (--raw, --elf)
     * @param flags      {@code --sb:*} print flags ({@link PeventDump#COMPACT}, ...); 0 prints no records
     * @param warnings   {@code --sb:warn}: also print sideband warnings (errors are always printed)
     * @param showSwitch {@code --sb:switch}: print "[context: pid-N]" when the process changes
     * @param dir        the directory relative file names (sideband files, mapped files, vdso) are found in
     */
    public PeventSession(Image initial, int flags, boolean warnings, boolean showSwitch, Path dir) {
        this.current = initial;
        this.flags = flags;
        this.warnings = warnings;
        this.showSwitch = showSwitch;
        this.dir = dir;
    }

    /** Adds a sideband file ({@code FILE[:from[-to]]}) read and used as {@code channel} says. */
    public void add(String spec, Channel channel) {
        waiting.add(0, new Feed(PeventStream.open(spec, channel.format(), dir), channel));
    }

    /** The kernel image every process starts with ({@code --pevent:kcore}). */
    public Image kernel() {
        return kernel;
    }

    /** Reads each file's first record (ptxed does this before decoding; read errors are printed to {@code to}). */
    public void start(TextSink to) {
        out = to;
        while (!waiting.isEmpty()) {
            Feed f = waiting.remove(0);
            if (fetch(f) == READ) {
                insert(f);
            }
        }
    }

    /**
     * The decoder met {@code ev} (printed already): prints and applies the records it reached, then lets every
     * file place a waiting process switch. Returns true if the code the space shows may have changed.
     */
    public boolean onEvent(Event ev, TextSink to) {
        out = to;
        changed = false;
        long tsc = ev.tsc;
        while (!active.isEmpty() && Long.compareUnsigned(tsc, active.get(0).stream.tsc) >= 0) {
            Feed f = active.remove(0);
            if (flags != 0) {
                f.stream.print(out, flags);
            }
            apply(f, ev);
            switch (fetch(f)) {
                case READ -> insert(f);
                case END -> retired.add(f);
                default -> { }
            }
        }
        present(active, ev);
        present(retired, ev);
        return changed;
    }

    @Override
    public Image.Piece find(long addr, long time) {
        return current.find(addr, time);
    }

    // ------------------------------------------------------------------ feeds

    private static final int READ = 0;
    private static final int END = 1;
    private static final int FAILED = 2;

    /** Reads the next record: READ, END (nothing pending any more) or FAILED (printed; the file is dropped). */
    private int fetch(Feed f) {
        String err = f.stream.advance();
        f.pending = err == null;
        if (err == null) {
            return READ;
        }
        if (err == PeventStream.EOS) {
            return END;
        }
        report(f, err, true);
        return FAILED;
    }

    private void insert(Feed f) {
        int k = 0;
        while (k < active.size() && Long.compareUnsigned(f.stream.tsc, active.get(k).stream.tsc) > 0) {
            k++;
        }
        active.add(k, f);
    }

    /** The second round: every file sees the event (drops those with nothing left to do). */
    private void present(List<Feed> list, Event ev) {
        for (int i = 0; i < list.size(); ) {
            if (apply(list.get(i), ev)) {
                i++;
            } else {
                list.remove(i);
            }
        }
    }

    /** libipt's pevent apply: the due record, else location tracking and a waiting switch. False: the file is done. */
    private boolean apply(Feed f, Event ev) {
        PeventStream s = f.stream;
        if (f.pending && (!s.hasTime || Long.compareUnsigned(s.tsc, ev.tsc) <= 0)) {
            applyRecord(f);
            return true;
        }
        int oldLocation = f.location;
        f.location = location(f, ev);
        if (f.nextContext == null) {
            return f.pending;
        }
        if (inKernelOrUnknown(oldLocation) || inKernelOrUnknown(f.location)) {
            switchContexts(f);
        }
        return true;
    }

    private static boolean inKernelOrUnknown(int loc) {
        return loc == LOC_KERNEL || loc == LOC_LIKELY_KERNEL || loc == LOC_UNKNOWN;
    }

    private void applyRecord(Feed f) {
        PeventStream s = f.stream;
        boolean primary = f.channel.primary();
        switch (s.type) {
            case PERF_RECORD_ITRACE_START -> {
                if (primary) {
                    prepareSwitch(f, context(s.u32(0)));
                    if (f.nextContext != null) {
                        switchContexts(f); // tracing just started: no need to wait for the kernel
                    }
                }
            }
            case PERF_RECORD_FORK -> fork(f);
            case PERF_RECORD_COMM -> {
                if ((s.misc & PeventStream.MISC_COMM_EXEC) != 0) {
                    long pid = s.u32(0);
                    // A new context rather than a cleared image: the trace still runs the old one until the switch.
                    contexts.remove(pid);
                    Context fresh = context(pid);
                    if (primary) {
                        prepareSwitch(f, fresh);
                    }
                }
            }
            case PERF_RECORD_SWITCH -> {
                if (primary && (s.misc & PeventStream.MISC_SWITCH_OUT) == 0) {
                    if (!s.hasTid) {
                        report(f, BAD_CONFIG, true);
                    } else {
                        prepareSwitch(f, context(s.pid));
                    }
                }
            }
            case PERF_RECORD_SWITCH_CPU_WIDE -> {
                if (primary) {
                    if ((s.misc & PeventStream.MISC_SWITCH_OUT) == 0) {
                        if (s.hasTid) {
                            prepareSwitch(f, context(s.pid));
                        }
                    } else {
                        prepareSwitch(f, context(s.u32(0)));
                    }
                }
            }
            case PERF_RECORD_MMAP, PERF_RECORD_MMAP2 -> {
                // Kernel mappings come from --pevent:kcore: the files on disk are not what runs.
                if ((s.misc & MISC_CPUMODE_MASK) != MISC_KERNEL) {
                    map(f, s.u32(0), s.text, s.u64(24), s.u64(16), s.u64(8));
                }
            }
            case PERF_RECORD_LOST -> report(f, "sideband lost", false);
            case PERF_RECORD_AUX -> {
                if (primary && (s.u64(16) & 1) != 0) {
                    report(f, "trace lost", false);
                }
            }
            default -> { }
        }
    }

    private void fork(Feed f) {
        PeventStream s = f.stream;
        long pid = s.u32(0);
        long ppid = s.u32(4);
        if (pid == ppid) {
            return; // a new thread
        }
        if (pid != s.u32(8)) {
            report(f, "internal error", true);
            return;
        }
        contexts.remove(pid);
        Context child = context(pid);
        Context parent = contexts.get(ppid);
        if (parent != null) {
            child.image.addAll(parent.image);
            changed |= child.image == current;
        }
    }

    private void map(Feed f, long pid, String name, long offset, long size, long vaddr) {
        Context ctx = context(pid);
        String file = name;
        if (name.startsWith("[")) {
            if (!name.equals("[vdso]")) {
                report(f, "image section lost", false);
                return;
            }
            file = switch (ctx.abi) {
                case ABI_X64 -> f.channel.vdsoX64();
                case ABI_X32 -> f.channel.vdsoX32();
                case ABI_IA32 -> f.channel.vdsoIa32();
                default -> null;
            };
            if (file == null) {
                report(f, BAD_CONFIG, true);
                return;
            }
        } else if (name.equals("//anon") || name.contains(" (deleted)")) {
            report(f, "image section lost", false); // JIT code or a deleted file: decoding there will fail
            return;
        } else if (f.channel.sysroot() != null) {
            file = f.channel.sysroot() + name;
        }
        Path path = dir.resolve(file);
        byte[] bytes = load(path);
        if (bytes == null) {
            report(f, "bad file", true);
            return;
        }
        if (ctx.abi == ABI_UNKNOWN) {
            ctx.abi = abi(bytes);
        }
        if (Long.compareUnsigned(bytes.length, offset) <= 0) {
            report(f, "invalid argument", true);
            return;
        }
        long n = Long.compareUnsigned(size, bytes.length - offset) > 0 ? bytes.length - offset : size;
        Section section = sections.computeIfAbsent(new Mapping(path, offset, n, vaddr), m -> Section.of(
                path.getFileName().toString(), vaddr, Arrays.copyOfRange(bytes, (int) offset, (int) (offset + n))));
        ctx.image.add(section);
        changed |= ctx.image == current;
    }

    private byte[] load(Path path) {
        byte[] b = files.get(path);
        if (b == null) {
            try {
                b = ptfence.cli.Inputs.readAllBytes(path);
            } catch (IOException e) {
                return null; // libipt: "bad file"
            }
            files.put(path, b);
        }
        return b;
    }

    /** The ELF ABI (x64, x32, ia32) from the file's header, or unknown. */
    private static int abi(byte[] b) {
        if (b.length < 20 || b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F' || b[6] != 1) {
            return ABI_UNKNOWN;
        }
        if (b[4] == 2) {
            return ABI_X64;
        }
        if (b[4] == 1) {
            int machine = (b[18] & 0xff) | (b[19] & 0xff) << 8;
            return machine == 3 ? ABI_IA32 : machine == 62 ? ABI_X32 : ABI_UNKNOWN;
        }
        return ABI_UNKNOWN;
    }

    /** The context of {@code pid}, created (with the kernel image) if there is none. */
    private Context context(long pid) {
        Context c = contexts.get(pid);
        if (c == null) {
            c = new Context(pid, new Image().addAll(kernel));
            contexts.put(pid, c);
        }
        return c;
    }

    private void prepareSwitch(Feed f, Context to) {
        if (f.nextContext == to) {
            return;
        }
        f.nextContext = null; // a newer switch replaces one that never found its place
        if (f.context != to) {
            f.nextContext = to;
        }
    }

    private void switchContexts(Feed f) {
        Context to = f.nextContext;
        if (showSwitch) {
            out.str("[context: pid-").hex(to.pid).str("]").nl();
        }
        current = to.image;
        changed = true;
        f.context = to;
        f.nextContext = null;
    }

    private int location(Feed f, Event ev) {
        long ks = f.channel.kernelStart();
        return switch (ev.type) {
            case Event.ENABLED, Event.ASYNC_BRANCH -> fromIp(ev.ip, ks);
            case Event.DISABLED -> ev.ipSuppressed ? fromSuppressed(f.location) : fromIp(ev.ip, ks);
            case Event.ASYNC_DISABLED -> ev.ipSuppressed ? fromSuppressed(fromIp(ev.from, ks)) : fromIp(ev.ip, ks);
            case Event.ASYNC_PAGING -> ev.ipSuppressed ? LOC_LIKELY_KERNEL : fromIp(ev.ip, ks);
            case Event.PAGING -> LOC_LIKELY_KERNEL;
            case Event.OVERFLOW, Event.EXEC_MODE, Event.TSX, Event.EXSTOP, Event.MWAIT, Event.PTWRITE, Event.TICK,
                    Event.IFLAGS, Event.INTERRUPT, Event.IRET, Event.SMI, Event.RSM, Event.INIT, Event.VMENTRY,
                    Event.VMEXIT, Event.SHUTDOWN, Event.UINTR, Event.UIRET ->
                    ev.ipSuppressed ? LOC_UNKNOWN : fromIp(ev.ip, ks);
            default -> LOC_UNKNOWN;
        };
    }

    private static int fromIp(long ip, long kernelStart) {
        return Long.compareUnsigned(ip, kernelStart) < 0 ? LOC_USER : LOC_KERNEL;
    }

    /** Tracing stopped without an IP: most likely it crossed between user and kernel. */
    private static int fromSuppressed(int from) {
        return switch (from) {
            case LOC_KERNEL, LOC_LIKELY_KERNEL -> LOC_LIKELY_USER;
            case LOC_USER, LOC_LIKELY_USER -> LOC_LIKELY_KERNEL;
            default -> LOC_UNKNOWN;
        };
    }

    /** ptxed's sideband message: errors always, warnings with --sb:warn; at the current record's offset. */
    private void report(Feed f, String what, boolean error) {
        if (!error && !warnings) {
            return;
        }
        out.ch('[').str(f.stream.name).ch(':').hex16(f.stream.current).str(" sideband ")
                .str(error ? "error: " : "warning: ").str(what).ch(']').nl();
    }
}

package ptfence.symbol;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import ptfence.image.Elf;
import ptfence.image.Symbols;
import ptfence.sideband.CodeMap;
import ptfence.sideband.Sideband;

/**
 * Names for a recording's code. User space: the process's mappings (MMAP2) at the time, the mapped file found as
 * the code map finds it (its path, --sysroot, next to the recording) or by the build id the recording gives (perf's
 * ~/.debug cache), its ELF symbols and DWARF lines. Kernel: BPF programs and their JITed functions, KSYMBOLs, then
 * kallsyms or vmlinux symbols (and vmlinux's lines). Safe to share between decoder threads.
 */
public final class RecordingSymbols implements Symbolizer {
    public static final String KERNEL_DSO = "[kernel.kallsyms]";

    private final Sideband sideband;
    private final CodeMap code;
    private final Path sysroot;
    private final Map<Integer, Mapped[]> byPid = new HashMap<>();
    private final Mapped[] all;
    /** Every mapping by process (anonymous and [vdso] ones too), the kernel's under {@link #KERNEL_PID}. */
    private final Map<Integer, Sideband.Mapping[]> namesByPid = new HashMap<>();
    private static final int KERNEL_PID = Integer.MIN_VALUE;
    /** The last process asked about and its mappings (decoders ask for one process for long stretches). */
    private volatile PidMappings lastPid = new PidMappings(Integer.MIN_VALUE, null);
    private final Map<String, byte[]> buildIds = new HashMap<>();
    private final Map<String, Optional<Dso>> dsos = new ConcurrentHashMap<>();
    private final List<Sideband.Mapping> kernelMappings = new ArrayList<>();
    private final Dso vmlinux;

    /**
     * @param recordedBuildIds build ids by file name from the recording's BUILD_ID header (MMAP2 ones are taken from
     *     the sideband)
     * @param vmlinux the kernel ELF given by the user (its DWARF lines name kernel code), or null
     */
    public RecordingSymbols(Sideband sideband, CodeMap code, Path sysroot, Map<String, byte[]> recordedBuildIds,
            Path vmlinux) {
        this.sideband = sideband;
        this.code = code;
        this.sysroot = sysroot;
        buildIds.putAll(recordedBuildIds);
        buildIds.putAll(sideband.buildIds());
        Map<Integer, List<Mapped>> lists = new HashMap<>();
        List<Mapped> every = new ArrayList<>();
        Map<Integer, List<Sideband.Mapping>> named = new HashMap<>();
        for (Sideband.Mapping m : sideband.mappings()) {
            named.computeIfAbsent(m.kernel() ? KERNEL_PID : m.pid(), p -> new ArrayList<>()).add(m);
            if (m.kernel() && m.file().startsWith(KERNEL_DSO)) {
                kernelMappings.add(m);
            }
            if (m.kernel() || m.file().startsWith("[") || m.file().startsWith("//")) {
                continue;
            }
            Mapped mm = new Mapped(m);
            lists.computeIfAbsent(m.pid(), p -> new ArrayList<>()).add(mm);
            every.add(mm);
        }
        lists.forEach((pid, l) -> byPid.put(pid, l.toArray(Mapped[]::new)));
        named.forEach((pid, l) -> namesByPid.put(pid, l.toArray(Sideband.Mapping[]::new)));
        all = every.toArray(Mapped[]::new);
        Elf v = vmlinux == null ? null : Elf.read(vmlinux);
        this.vmlinux = v == null ? null : new Dso(v, null, vmlinux.toString());
    }

    /** A mapping and, once looked up, its file's symbols. */
    private final class Mapped {
        final Sideband.Mapping m;
        private volatile Optional<Dso> dso;

        Mapped(Sideband.Mapping m) {
            this.m = m;
        }

        Dso dso() {
            Optional<Dso> d = dso;
            if (d == null) {
                d = dsos.computeIfAbsent(m.file(), f -> Optional.ofNullable(load(f)));
                dso = d;
            }
            return d.orElse(null);
        }
    }

    private record PidMappings(int pid, Mapped[] mappings) {
    }

    @Override
    public Symbol symbol(long address, long time, int pid) {
        if (address < 0) {
            return kernel(address, time);
        }
        Mapped mm = mapping(address, time, pid);
        Dso d = mm == null ? null : mm.dso();
        if (d == null) {
            // no file names it: the process's JIT (jitdump, perf-PID.map in anonymous memory), else tables tied to
            // no process (dynamic text in the archive, KSYMBOLs, a symbol file given with --kallsyms)
            Symbol j = jit(address, time, pid);
            return j != null ? j : kernel(address, time);
        }
        Sideband.Mapping m = mm.m;
        long vaddr = vaddr(d, m, address);
        Symbols.Entry e = vaddr == -1 ? null : d.symbols().at(vaddr);
        if (e == null) {
            return null;
        }
        long shift = address - vaddr;
        return new Symbol(e.name(), e.start() + shift, e.end() + shift, m.file(), m.time(), Long.MAX_VALUE,
                e.bind() < 0 ? 1 : e.bind());
    }

    @Override
    public String dso(long address, long time, int pid) {
        Symbol s = symbol(address, time, pid);
        if (s != null) {
            return s.dso();
        }
        if (address >= 0) {
            Mapped mm = mapping(address, time, pid); // a file's mapping (any process's for pid -1)
            if (mm != null) {
                return mm.m.file();
            }
        }
        Sideband.Mapping m = address < 0 ? newest(namesByPid.get(KERNEL_PID), address, -1) // the kernel stays mapped
                : newest(namesByPid.get(pid), address, time);
        if (m == null) {
            return address < 0 && kernelMapped(address, time) ? KERNEL_DSO : null;
        }
        if (!m.kernel()) {
            return ptfence.jit.JitProcesses.anonymous(m.file()) ? ptfence.jit.JitProcesses.mapName(m.pid()) : m.file();
        }
        if (m.file().startsWith(KERNEL_DSO)) {
            return KERNEL_DSO;
        }
        String f = m.file(); // a module: perf names it [name]
        int slash = f.lastIndexOf('/');
        String base = f.substring(slash + 1);
        int dot = base.indexOf('.');
        return slash >= 0 && base.endsWith(".ko") || base.endsWith(".ko.xz") || base.endsWith(".ko.zst")
                ? "[" + (dot > 0 ? base.substring(0, dot) : base).replace('-', '_') + "]" : f;
    }

    @Override
    public long mapAddress(long address, long time, int pid) {
        Mapped mm = address >= 0 ? mapping(address, time, pid) : null;
        return mm == null ? address : address - mm.m.address() + mm.m.pgoff();
    }

    @Override
    public long offsetAddress(long address, long time, int pid) {
        if (address < 0) {
            // a BPF program is a map of its own in perf (from its ksymbol, offset 0): the offset into it
            Symbol s = symbol(address, time, pid);
            return s != null && s.dso() != null && s.dso().startsWith("bpf_prog_") ? address - s.start() : address;
        }
        Mapped mm = mapping(address, time, pid);
        if (mm == null || mm.dso() != null && !mm.dso().elf().relocatable()) {
            return address; // perf: dso->adjust_symbols (ET_EXEC), or no map
        }
        return address - mm.m.address() + mm.m.pgoff();
    }

    @Override
    public String mapOf(long address, long time, int pid, long[] span) {
        if (address < 0) {
            // a BPF program is a map of its own in perf, from its ksymbol
            Symbol s = symbol(address, time, pid);
            if (s != null && s.dso() != null && s.dso().startsWith("bpf_prog_")) {
                span[0] = s.start();
                span[1] = s.end();
                return "";
            }
            // the kernel's or a module's map, from its MMAP record (perf record makes the kernel's reach the first
            // module), with the build id the recording lists for it ([kernel.kallsyms] for the kernel's text)
            Sideband.Mapping m = newest(namesByPid.get(KERNEL_PID), address, -1);
            if (m == null || !m.kernel()) {
                return null;
            }
            span[0] = m.address();
            span[1] = m.address() + m.length();
            byte[] id = buildIds.get(m.file().startsWith(KERNEL_DSO) ? KERNEL_DSO : m.file());
            return id == null ? "" : java.util.HexFormat.of().formatHex(id);
        }
        Mapped[] ms = mappings(pid);
        int i = ms == null ? -1 : newestAt(ms, address, time);
        if (i < 0) {
            return null;
        }
        Mapped mm = ms[i];
        long start = mm.m.address(), end = mm.m.address() + mm.m.length();
        // perf splits a map where a later one of the process lands over it (maps__fixup_overlappings: ld.so's
        // reservation, then the libraries mapped into its tail): the piece holding the address is the map
        for (int j = i + 1; pid >= 0 && j < ms.length; j++) {
            Sideband.Mapping n = ms[j].m;
            long ns = n.address(), ne = n.address() + n.length();
            if (time >= 0 && n.time() > time || ne <= start || ns >= end) {
                continue;
            }
            if (ne <= address) {
                start = ne;
            } else if (ns > address) {
                end = ns;
            }
        }
        span[0] = start;
        span[1] = end;
        byte[] id = buildIds.get(mm.m.file());
        return id == null ? "" : java.util.HexFormat.of().formatHex(id);
    }

    @Override
    public String srclineFallback(long address, long time, int pid) {
        if (address >= 0) {
            Mapped mm = mapping(address, time, pid);
            if (mm == null || mm.dso() != null) {
                return null; // a file perf can read but whose lines miss the address: perf prints nothing
            }
            String f = mm.m.file();
            return f.substring(f.lastIndexOf('/') + 1) + "[" + Long.toHexString(address - mm.m.address()
                    + mm.m.pgoff()) + "]";
        }
        Symbol s = symbol(address, time, pid);
        if (s != null && !s.dso().startsWith("[")) {
            return s.dso() + "[" + Long.toHexString(address - s.start()) + "]";
        }
        return vmlinux == null && KERNEL_DSO.equals(dso(address, time, pid))
                ? KERNEL_DSO + "[" + Long.toHexString(address) + "]" : null;
    }

    private static Sideband.Mapping newest(Sideband.Mapping[] ms, long address, long time) {
        if (ms == null) {
            return null;
        }
        for (int i = ms.length - 1; i >= 0; i--) {
            Sideband.Mapping m = ms[i];
            if (Long.compareUnsigned(address - m.address(), m.length()) < 0 && (time < 0 || m.time() <= time)) {
                return m;
            }
        }
        return null;
    }

    /** A kernel MMAP of the recording covers {@code address} (perf's kernel map reaches to the top of memory). */
    private boolean kernelMapped(long address, long time) {
        for (Sideband.Mapping m : kernelMappings) {
            if (Long.compareUnsigned(address, m.address()) >= 0 && (time < 0 || m.time() <= time)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public SourceLine line(long address, long time, int pid) {
        if (address < 0) {
            return vmlinux == null ? null : vmlinux.line(address);
        }
        Mapped mm = mapping(address, time, pid);
        Dso d = mm == null ? null : mm.dso();
        if (d == null && pid >= 0 && !code.jit().isEmpty()) {
            // JIT code: the lines its jitdump's debug info gives
            ptfence.jit.JitProcesses.Line j = code.jit().line(pid, address, time);
            return j == null ? null : new SourceLine(j.text(), j.start(), j.end());
        }
        long vaddr = d == null ? -1 : vaddr(d, mm.m, address);
        SourceLine l = vaddr == -1 ? null : d.line(vaddr);
        long shift = address - vaddr;
        return l == null || shift == 0 ? l : new SourceLine(l.text(), l.start() + shift, l.end() + shift,
                l.path());
    }

    @Override
    public List<Symbol> named(String name) {
        Map<String, Symbol> out = new LinkedHashMap<>();
        for (Mapped mm : all) {
            Dso d = mm.dso();
            Sideband.Mapping m = mm.m;
            if (d == null) {
                continue;
            }
            for (long[] s : d.symbols().named(name)) {
                long a = addressOf(d, m, s[0]);
                if (a != -1) {
                    out.putIfAbsent(a + "@" + m.time(), new Symbol(name, a, a + s[1], m.file(), m.time(),
                            Long.MAX_VALUE));
                }
            }
        }
        for (long[] s : code.symbols().named(name)) {
            out.putIfAbsent(s[0] + "@k", new Symbol(name, s[0], s[0] + s[1], KERNEL_DSO, Long.MIN_VALUE,
                    Long.MAX_VALUE));
        }
        return List.copyOf(out.values());
    }

    /** A name the process's JIT gave the code (perf-PID.map only inside its anonymous mappings), or null. */
    private Symbol jit(long address, long time, int pid) {
        ptfence.jit.JitProcesses jit = code.jit();
        if (pid < 0 || jit.isEmpty()) {
            return null;
        }
        Sideband.Mapping m = newest(namesByPid.get(pid), address, time);
        ptfence.jit.JitProcesses.Named n = jit.at(pid, address, time, m != null
                && ptfence.jit.JitProcesses.anonymous(m.file()));
        return n == null ? null : new Symbol(n.name(), n.start(), n.end(), n.dso(), n.from(), n.to());
    }

    /** Kernel code: a BPF program's function, a KSYMBOL, else kallsyms/vmlinux. */
    private Symbol kernel(long address, long time) {
        long t = time < 0 ? ptfence.image.CodeSpace.ANY_TIME : time;
        CodeMap.Program p = code.programAt(address, t);
        if (p != null) {
            for (CodeMap.Function f : p.functions()) {
                if (f.covers(address, t == ptfence.image.CodeSpace.ANY_TIME ? f.from() : t)) {
                    // perf makes a KSYMBOL's symbol with binding 0 (machine__process_ksymbol_register)
                    return new Symbol(f.name(), f.address(), f.address() + f.length(), p.fullName(), f.from(), f.to(),
                            0);
                }
            }
        }
        Sideband.KernelSymbol k = code.symbolAt(address, time < 0 ? Long.MAX_VALUE - 1 : time);
        if (k != null) {
            return new Symbol(k.name(), k.address(), k.address() + k.length(), k.bpf() ? k.name() : KERNEL_DSO,
                    k.from(), k.to(), 0);
        }
        Symbols.Entry e = code.symbols().at(address);
        return e == null ? null : new Symbol(e.name(), e.start(), e.end(), KERNEL_DSO, Long.MIN_VALUE, Long.MAX_VALUE);
    }

    /** The newest mapping of {@code pid} holding {@code address} at {@code time}; any process's when pid is unknown. */
    @Override
    public List<String> filesReadForVdso(int pid, long time) {
        Mapped[] ms = mappings(pid);
        if (ms == null || pid < 0) {
            return List.of();
        }
        long exec = sideband.execBefore(pid, time);
        java.util.TreeMap<Long, Mapped> byAddress = new java.util.TreeMap<>(Long::compareUnsigned);
        for (Mapped mm : ms) { // in recording order: a later mapping at an address replaces the one before
            if (mm.m.time() <= time && mm.m.time() >= exec && mm.m.file().startsWith("/")) {
                byAddress.put(mm.m.address(), mm);
            }
        }
        List<String> out = new ArrayList<>();
        for (Mapped mm : byAddress.values()) {
            if (mm.dso() != null) {
                break;
            }
            out.add(mm.m.file());
        }
        return out;
    }

    private Mapped mapping(long address, long time, int pid) {
        Mapped[] ms = mappings(pid);
        int i = ms == null ? -1 : newestAt(ms, address, time);
        return i < 0 ? null : ms[i];
    }

    /** The file mappings of {@code pid} in recording order; every process's when pid is unknown. */
    private Mapped[] mappings(int pid) {
        if (pid < 0) {
            return all;
        }
        PidMappings last = lastPid;
        if (last.pid() == pid) {
            return last.mappings();
        }
        Mapped[] ms = byPid.get(pid);
        lastPid = new PidMappings(pid, ms);
        return ms;
    }

    private static int newestAt(Mapped[] ms, long address, long time) {
        for (int i = ms.length - 1; i >= 0; i--) {
            Sideband.Mapping m = ms[i].m;
            if (Long.compareUnsigned(address - m.address(), m.length()) < 0 && (time < 0 || m.time() <= time)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * A file mapping whose file has no symbols perf can read (missing, not ELF, stripped of both tables) names no
     * function anywhere in it while it is the newest mapping there and nothing else names user addresses (a JIT
     * map, a kernel table reaching below the kernel's half): the whole mapping is one miss, until the first later
     * mapping over any of it. Line printers keep that range instead of asking again for every address.
     */
    @Override
    public String missSpan(long address, long time, int pid, long[] span) {
        if (address < 0 || pid < 0 || !code.jit().isEmpty() || kernelNamesUserCode()) {
            return null;
        }
        Mapped[] ms = mappings(pid);
        int i = ms == null ? -1 : newestAt(ms, address, time);
        if (i < 0 || ms[i].dso() != null) {
            return null;
        }
        Sideband.Mapping m = ms[i].m;
        long until = Long.MAX_VALUE;
        for (int j = i + 1; j < ms.length; j++) {
            Sideband.Mapping n = ms[j].m;
            if (Long.compareUnsigned(n.address() - m.address(), m.length()) < 0
                    || Long.compareUnsigned(m.address() - n.address(), n.length()) < 0) {
                until = Math.min(until, n.time());
            }
        }
        if (time >= 0 && until <= time) {
            return null; // a later mapping already covers part of it
        }
        span[0] = m.address();
        span[1] = m.address() + m.length();
        span[2] = m.time();
        span[3] = until; // Long.MAX_VALUE: also right for a trace without time (nothing later covers it)
        return m.file();
    }

    /** 1 once known that some kernel-side table (KSYMBOL, BPF program, kallsyms) names an address below 2^63. */
    private volatile int kernelNamesUser;

    private boolean kernelNamesUserCode() {
        int k = kernelNamesUser;
        if (k == 0) {
            boolean any = sideband.kernelSymbols().stream().anyMatch(s -> s.address() >= 0);
            for (CodeMap.Program p : code.programs()) {
                any |= p.functions().stream().anyMatch(f -> f.address() >= 0);
            }
            for (long s : code.symbols().starts()) {
                any |= s >= 0;
            }
            k = any ? 1 : 2;
            kernelNamesUser = k;
        }
        return k == 1;
    }

    /** The file's virtual address for a process address inside mapping {@code m}, or -1. */
    private static long vaddr(Dso d, Sideband.Mapping m, long address) {
        return d.elf().vaddrOf(address - m.address() + m.pgoff());
    }

    /** The process address of the file's virtual address {@code vaddr} through mapping {@code m}, or -1. */
    private static long addressOf(Dso d, Sideband.Mapping m, long vaddr) {
        for (Elf.Load l : d.elf().loads()) {
            if (vaddr - l.vaddr() >= 0 && vaddr - l.vaddr() < Math.max(l.filesz(), 1)) {
                long off = l.offset() + (vaddr - l.vaddr());
                if (off >= m.pgoff() && off - m.pgoff() < m.length()) {
                    return m.address() + off - m.pgoff();
                }
            }
        }
        return -1;
    }

    /** The file as recorded: where the code map finds it for the build id the recording gives. */
    private Dso load(String file) {
        Path p = code.fileOf(file, buildIds.get(file));
        Elf e = p == null ? null : Elf.read(p);
        return e == null ? null : new Dso(e, sysroot, file);
    }
}

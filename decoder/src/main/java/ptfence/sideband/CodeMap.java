package ptfence.sideband;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import ptfence.debuginfod.RemoteFiles;
import ptfence.image.CodeSpace;
import ptfence.image.ElfSegments;
import ptfence.image.Image;
import ptfence.image.Section;
import ptfence.image.Symbols;
import ptfence.image.TimedSections;
import ptfence.perfdata.Feature;
import ptfence.region.BpfMetadata;
import ptfence.region.Region;
import ptfence.region.RegionKind;

/**
 * A recording's code over address and time: every place the bytes that ran can come from, in the order the issue
 * of trust gives them: the archive (exact bytes captured by the fence, by boot, address and time), perf's own
 * BPF_PROG_INFO, a {@code --kcore} copy, {@code --vmlinux}, and the files processes mapped (MMAP2, under
 * {@code --sysroot}). TEXT_POKE records become new versions of the code they change. Times inside are TSC values
 * when the trace is timed (the decoder asks with its TSC), else perf time and every lookup takes the newest.
 */
public final class CodeMap {
    /** One JITed function (or symbol) of a program, valid during [from, to) in perf time. */
    public record Function(long address, long length, String name, long from, long to) {
        public boolean covers(long addr, long time) {
            return Long.compareUnsigned(addr - address, length) < 0 && time >= from && time < to;
        }
    }

    /**
     * A BPF program instance (or a plain symbol): its name as the kernel shows it, tag, program name and functions.
     */
    public record Program(String fullName, String tag, String progName, int progId, boolean bpf,
            List<Function> functions, BpfMetadata metadata) {
        public Program(String fullName, String tag, String progName, int progId, boolean bpf,
                List<Function> functions) {
            this(fullName, tag, progName, progId, bpf, functions, null);
        }
    }

    /** Converts between perf time and the decoder's clock. */
    public interface Clock {
        long toDecoder(long perfTime);

        long toPerf(long decoderTime);

        Clock IDENTITY = new Clock() {
            public long toDecoder(long t) {
                return t;
            }

            public long toPerf(long t) {
                return t;
            }
        };
    }

    private final Sideband sideband;
    private final Clock clock;
    private final boolean timed;
    private final TimedSections kernel = new TimedSections();
    private final Map<Integer, TimedSections> user = new HashMap<>();
    private final TimedSections global = new TimedSections();
    private final List<Program> programs = new ArrayList<>();
    private final Symbols symbols = new Symbols();
    private final Path sysroot;
    private final List<Path> searchDirs = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final Map<String, byte[]> headerBuildIds = new HashMap<>();
    private final Map<String, java.util.Optional<Path>> files = new java.util.concurrent.ConcurrentHashMap<>();
    private RemoteFiles remote;
    private final ptfence.jit.JitProcesses jit = new ptfence.jit.JitProcesses();

    public CodeMap(Sideband sideband, Clock clock, boolean timed, Path sysroot) {
        this.sideband = sideband;
        this.clock = clock;
        this.timed = timed;
        this.sysroot = sysroot;
    }

    private Section timedSection(String name, long address, byte[] bytes, long from, long to) {
        return Section.of(name, address, bytes).during(clock.toDecoder(from), clock.toDecoder(to));
    }

    /** Archive regions of one boot: exact bytes, each valid while it was loaded. */
    public void addArchiveRegions(List<Region> regions, java.util.function.Function<Region, byte[]> bytes) {
        Map<String, List<Function>> byProgram = new HashMap<>();
        Map<String, Program> heads = new HashMap<>();
        for (Region r : regions) {
            byte[] b = bytes.apply(r);
            if (b == null) {
                continue;
            }
            Section s = timedSection(r.name(), r.address(), b, r.validFrom(), r.validTo());
            (r.kind() == RegionKind.USER_FILE ? global : kernel).add(s);
            Function f = new Function(r.address(), r.length(), r.name(), r.validFrom(), r.validTo());
            if (r.kind() == RegionKind.BPF_PROG || r.kind() == RegionKind.BPF_SUBPROG) {
                String key;
                String tag = r.tag();
                String progName = nameAfterTag(r.name());
                int id = 0;
                if (r.metadata() instanceof BpfMetadata m) {
                    long[] ks = m.jitedKsyms();
                    key = "bpf:" + m.progId() + "@" + (ks.length > 0 ? ks[0] : r.address()) + "@" + m.loadTime() + "@"
                            + r.validFrom();
                    tag = m.tag().isEmpty() ? tag : m.tag();
                    progName = m.name().isEmpty() ? progName : m.name();
                    id = m.progId();
                    if (ks.length > 0 && ks[0] != r.address()) {
                        byProgram.computeIfAbsent(key, k -> new ArrayList<>()).add(f);
                        continue;
                    }
                } else {
                    key = "region:" + r.idHex();
                }
                byProgram.computeIfAbsent(key, k -> new ArrayList<>()).add(0, f);
                heads.put(key, new Program(r.name(), tag, progName, id, true, List.of(),
                        r.metadata() instanceof BpfMetadata m ? m : null));
            } else if (r.kind() != RegionKind.KERNEL_TEXT && r.kind() != RegionKind.USER_FILE) {
                programs.add(new Program(r.name(), "", r.name(), 0, false, List.of(f)));
            }
        }
        for (Map.Entry<String, Program> e : heads.entrySet()) {
            Program p = e.getValue();
            programs.add(new Program(p.fullName(), p.tag(), p.progName(), p.progId(), true,
                    List.copyOf(byProgram.get(e.getKey())), p.metadata()));
        }
    }

    /**
     * perf's BPF_PROG_INFO: each program's JITed code and function addresses, valid while that program instance's
     * KSYMBOLs were registered — the instance its BPF_EVENT(PROG_LOAD) names by id, so a program reloaded at one
     * address (a new version of the code, a new id) is bound to its own KSYMBOL register and unregister, not to the
     * last one at the address. From the start of the recording for programs loaded before it.
     */
    public void addBpfProgInfo(List<Feature.BpfProgInfo> infos) {
        Map<Long, List<Sideband.KernelSymbol>> byAddress = new HashMap<>();
        for (Sideband.KernelSymbol k : sideband.kernelSymbols()) {
            if (k.bpf()) {
                byAddress.computeIfAbsent(k.address(), a -> new ArrayList<>()).add(k);
            }
        }
        for (Feature.BpfProgInfo info : infos) {
            long[] ksyms = info.jitedKsyms();
            int[] lens = info.jitedFuncLens();
            ByteBuffer code = info.jitedInsns();
            byte[] all = new byte[code.remaining()];
            code.duplicate().get(all);
            String tag = java.util.HexFormat.of().formatHex(info.tag());
            long[] life = lifeOf(info.progId());
            List<Function> fns = new ArrayList<>();
            int off = 0;
            for (int i = 0; i < ksyms.length && i < lens.length; i++) {
                if (off + lens[i] > all.length) {
                    break;
                }
                byte[] fn = Arrays.copyOfRange(all, off, off + lens[i]);
                off += lens[i];
                Sideband.KernelSymbol k = symbolOf(byAddress.get(ksyms[i]), life, i == 0 ? "bpf_prog_" + tag : null);
                long from = k != null ? k.from() : life[0];
                long to = k != null ? k.to() : life[1];
                String name = k != null ? k.name() : "bpf_prog_" + tag + "_" + info.name();
                if (kernel.section(ksyms[i], clock.toDecoder(from == Long.MIN_VALUE ? sideband.firstTime() : from))
                        != null) {
                    continue; // the archive has it: its bytes are the ones that ran
                }
                kernel.add(timedSection(name + " (perf BPF_PROG_INFO)", ksyms[i], fn, from, to));
                fns.add(new Function(ksyms[i], lens[i], name, from, to));
            }
            if (!fns.isEmpty()) {
                programs.add(new Program(fns.get(0).name(), tag, info.name(), info.progId(), true, List.copyOf(fns)));
            }
        }
    }

    /**
     * When program {@code id} was loaded and unloaded by its BPF_EVENT records: {load, unload}, MIN where it was
     * loaded before the recording (or the records are missing), MAX where it outlived it.
     */
    private long[] lifeOf(int id) {
        long load = Long.MIN_VALUE;
        long unload = Long.MAX_VALUE;
        for (Sideband.BpfProgram b : sideband.bpfPrograms()) {
            if (b.id() != id) {
                continue;
            }
            if (b.load()) {
                load = b.time();
            } else if (b.time() >= load && unload == Long.MAX_VALUE) {
                unload = b.time();
            }
        }
        return new long[] {load, unload};
    }

    /**
     * The KSYMBOL registration of one function of a program instance: the one at its address live when the program
     * was loaded (its KSYMBOLs precede its BPF_EVENT), else one named with the program's tag, else the only one.
     */
    private static Sideband.KernelSymbol symbolOf(List<Sideband.KernelSymbol> atAddress, long[] life,
            String namePrefix) {
        if (atAddress == null) {
            return null;
        }
        if (life[0] != Long.MIN_VALUE) {
            for (Sideband.KernelSymbol k : atAddress) {
                if (k.from() <= life[0] && life[0] < k.to()) {
                    return k;
                }
            }
        }
        Sideband.KernelSymbol named = null;
        for (Sideband.KernelSymbol k : atAddress) {
            if (namePrefix != null && k.name().startsWith(namePrefix) && (life[0] == Long.MIN_VALUE
                    ? named == null : k.from() >= life[0] && (named == null || k.from() < named.from()))) {
                named = k;
            }
        }
        if (named != null || life[0] != Long.MIN_VALUE) {
            return named;
        }
        return atAddress.size() == 1 ? atAddress.get(0) : null;
    }

    /**
     * BPF and out-of-line KSYMBOLs the sources so far do not cover: programs known by name only (their bytes are
     * missing; {@link #missingAt} explains), so --func can still name them.
     */
    public void addSidebandSymbols() {
        Set<Long> known = new HashSet<>();
        for (Program p : programs) {
            for (Function f : p.functions()) {
                known.add(f.address());
            }
        }
        for (Sideband.KernelSymbol k : sideband.kernelSymbols()) {
            if (known.contains(k.address())) {
                continue;
            }
            Function f = new Function(k.address(), k.length(), k.name(), k.from(), k.to());
            programs.add(new Program(k.name(), k.bpf() ? tagOf(k.name()) : "", k.bpf() ? nameAfterTag(k.name())
                    : k.name(), 0, k.bpf(), List.of(f)));
        }
    }

    /**
     * TEXT_POKE records: from the poke on, the new bytes are a version of their own over the code they change (only
     * the poked bytes: a poke of kernel text must not copy the kernel), valid as long as the code it patched; the
     * code map's lookups hand out pieces that end where and when the poke begins.
     */
    public void applyPokes() {
        for (Sideband.Poke p : sideband.pokes()) {
            long t = clock.toDecoder(p.time());
            Section s = kernel.section(p.address(), t == Long.MIN_VALUE ? t : t - 1);
            Section now = kernel.section(p.address(), t);
            if (p.newBytes().length == 0 || now != null && now.validFrom() == t && now != s) {
                continue; // nothing to patch, or the archive already has this version
            }
            if (s != null) {
                kernel.add(Section.of(s.name() + " (text_poke)", p.address(), p.newBytes().clone()).during(t,
                        s.validTo()));
                continue;
            }
            // out-of-line text (ftrace trampolines, kprobe slots): the kernel announces it with a KSYMBOL(OOL)
            // and writes its bytes as a TEXT_POKE from nothing; as in perf, those bytes are its code while the
            // symbol lives
            Sideband.KernelSymbol ool = outOfLineAt(p.address(), p.time());
            if (ool != null) {
                kernel.add(Section.of(ool.name() + " (text_poke)", p.address(), p.newBytes().clone()).during(t,
                        ool.to() == Long.MAX_VALUE ? Long.MAX_VALUE : clock.toDecoder(ool.to())));
            }
        }
    }

    private Sideband.KernelSymbol outOfLineAt(long address, long time) {
        for (Sideband.KernelSymbol k : sideband.kernelSymbols()) {
            if (k.type() == ptfence.perfdata.PerfRecord.Ksymbol.TYPE_OOL && k.covers(address) && k.from() <= time
                    && time < k.to()) {
                return k;
            }
        }
        return null;
    }

    /** An ELF (vmlinux, a module) or a kcore copy's loadable segments, valid for the whole recording. */
    public void addKernelElf(Path file) {
        ElfSegments elf = new ElfSegments(file, 0);
        for (Section s : elf.sections()) {
            kernel.add(s.during(Long.MIN_VALUE, Long.MAX_VALUE));
        }
        symbols.addElf(elf);
    }

    public void addKallsyms(Path file) {
        symbols.addKallsyms(file);
    }

    /** A kallsyms text kept elsewhere (the archive's copy of a boot's /proc/kallsyms); {@code where} names it. */
    public void addKallsyms(String where, byte[] kallsyms) {
        symbols.addKallsyms(where, new String(kallsyms, java.nio.charset.StandardCharsets.UTF_8).lines());
    }

    /** Executable files processes mapped (MMAP2), read from the sysroot when they exist there. */
    public void addMappedFiles() {
        Map<String, byte[]> files = new HashMap<>();
        for (Sideband.Mapping m : sideband.mappings()) {
            if (m.file().startsWith("[") || m.file().startsWith("//")) {
                continue; // [vdso], [kernel.kallsyms]_text, //anon: nothing to read
            }
            byte[] all = files.computeIfAbsent(m.file(), f -> read(fileOf(f)));
            if (all == null || m.pgoff() >= all.length) {
                continue;
            }
            byte[] b = Arrays.copyOfRange(all, (int) m.pgoff(), (int) Math.min(all.length, m.pgoff() + m.length()));
            Section s = timedSection(m.file(), m.address(), b, m.time(), Long.MAX_VALUE);
            if (m.kernel()) {
                kernel.add(s);
            } else {
                user.computeIfAbsent(m.pid(), x -> new TimedSections()).add(s);
            }
        }
    }

    /**
     * User JIT code: each process's jitdump (a file {@code jit-PID.dump} the JIT mapped, so its MMAP is in the
     * recording) gives code bytes bound to their time windows, decoded like any other code of the process; its
     * {@code perf-PID.map} (searched in {@code mapDirs}, in order) names code in its anonymous mappings. Dumps are
     * searched in {@code dumpDirs}, then where {@link #locate} finds mapped files. A damaged dump or map is an error
     * naming the file and offset; a missing dump is a line of the list returned (its code is missing, as it would be
     * to perf without it).
     */
    public List<String> addJitCode(List<Path> dumpDirs, List<Path> mapDirs) {
        List<String> missing = new ArrayList<>();
        Set<String> dumps = new HashSet<>();
        Set<Integer> mapped = new HashSet<>();
        for (Sideband.Mapping m : sideband.mappings()) {
            if (m.kernel()) {
                continue;
            }
            if (ptfence.jit.JitProcesses.dumpPid(m.file()) >= 0 && dumps.add(m.pid() + "\0" + m.file())) {
                Path p = ptfence.jit.JitProcesses.find(dumpDirs, Path.of(m.file()).getFileName().toString());
                p = p != null ? p : locate(m.file());
                if (p == null) {
                    missing.add(m.file() + ": jitdump of process " + m.pid() + " not found here (its JIT code is "
                            + "missing; --jit-dir names where it is)");
                    continue;
                }
                ptfence.jit.JitDump d = ptfence.jit.JitDump.read(p);
                boolean tsc = d.archTimestamps();
                for (ptfence.jit.JitCode.Function f : jit.addDump(m.pid(), d, t -> tsc ? clock.toPerf(t) : t)) {
                    long from = tsc ? f.from() : clock.toDecoder(f.from());
                    long to = f.to() == Long.MAX_VALUE ? Long.MAX_VALUE : tsc ? f.to() : clock.toDecoder(f.to());
                    user.computeIfAbsent(m.pid(), x -> new TimedSections()).add(Section.of(f.name(), f.address(),
                            f.code()).during(from, to));
                }
            }
            if (ptfence.jit.JitProcesses.anonymous(m.file()) && mapped.add(m.pid())) {
                Path p = ptfence.jit.JitProcesses.find(mapDirs, "perf-" + m.pid() + ".map");
                if (p != null) {
                    jit.addMap(m.pid(), ptfence.jit.PerfMap.read(p));
                }
            }
        }
        return missing;
    }

    /** What the recorded processes' JITs said about their code (jitdumps, perf maps). */
    public ptfence.jit.JitProcesses jit() {
        return jit;
    }

    /**
     * Where a mapped file is here: under --sysroot, at its own path, else a file of the same name in one of the
     * search directories (the recording's, so a recording travels with its binaries).
     */
    public Path locate(String file) {
        Path own = sysroot == null ? Path.of(file) : sysroot.resolve(file.replaceFirst("^/+", ""));
        if (Files.isRegularFile(own)) {
            return own;
        }
        Path name = Path.of(file).getFileName();
        for (Path dir : searchDirs) {
            Path p = name == null ? null : dir.resolve(name);
            if (p != null && Files.isRegularFile(p)) {
                return p;
            }
        }
        return null;
    }

    /** Build ids the recording's BUILD_ID header gives, by file name (an MMAP2's own build id comes first). */
    public void useBuildIds(Map<String, byte[]> fromHeader) {
        headerBuildIds.putAll(fromHeader);
    }

    /** Where files with a recorded build id that are nowhere here are fetched from (debuginfod), or null. */
    public void fetchFilesFrom(RemoteFiles remote) {
        this.remote = remote;
    }

    /** The build id the recording gives for a mapped file: its MMAP2's, else the BUILD_ID header's, else null. */
    public byte[] recordedBuildId(String file) {
        byte[] id = sideband.buildIds().get(file);
        return id != null && id.length > 0 ? id : headerBuildIds.get(file);
    }

    /** The file the recording mapped as {@code file}, checked against its recorded build id ({@link #fileOf(String, byte[])}). */
    public Path fileOf(String file) {
        return fileOf(file, recordedBuildId(file));
    }

    /**
     * The file the recording mapped as {@code file}: where {@link #locate} finds it, unless {@code buildId} (when
     * known) says that is another build or it is nowhere; then perf's build-id cache ({@code ~/.debug}), then the
     * debuginfod servers (through the client cache). Decided once per file and build id.
     */
    public Path fileOf(String file, byte[] buildId) {
        String key = file + "\0" + (buildId == null ? "" : java.util.HexFormat.of().formatHex(buildId));
        return files.computeIfAbsent(key, k -> java.util.Optional.ofNullable(findFile(file, buildId))).orElse(null);
    }

    private Path findFile(String file, byte[] want) {
        Path p = locate(file);
        if (want == null || want.length == 0) {
            return p;
        }
        if (p != null) {
            ptfence.image.Elf e = ptfence.image.Elf.read(p);
            if (e != null && Arrays.equals(want, e.buildId())) {
                return p;
            }
        }
        String hex = java.util.HexFormat.of().formatHex(want);
        String home = System.getProperty("user.home");
        for (String c : new String[] {home + "/.debug/.build-id/" + hex.substring(0, 2) + "/" + hex.substring(2)
                + "/elf", home + "/.debug" + file + "/" + hex + "/elf"}) {
            Path cp = Path.of(c);
            if (Files.isRegularFile(cp) && ptfence.image.Elf.read(cp) != null) {
                return cp;
            }
        }
        Path fetched = remote == null ? null : remote.find(file, want);
        return fetched != null ? fetched : p;
    }

    /** Directories searched for a mapped file by its name when it is not at its path (or under --sysroot). */
    public void searchIn(Path dir) {
        searchDirs.add(dir);
    }

    private byte[] read(Path p) {
        if (p == null) {
            return null;
        }
        try {
            return Files.isRegularFile(p) ? ptfence.cli.Inputs.readAllBytes(p) : null;
        } catch (IOException e) {
            notes.add(p + ": " + e.getMessage());
            return null;
        }
    }

    /** The code one CPU's trace runs against. */
    public CodeSpace forCpu(int cpu, int fixedPid) {
        return new CodeSpace() {
            @Override
            public Image.Piece find(long addr, long time) {
                Image.Piece k = kernel.find(addr, time);
                if (k != null) {
                    return k;
                }
                Section s = null;
                if (addr >= 0) {
                    int pid = fixedPid;
                    long from = Long.MIN_VALUE;
                    long to = Long.MAX_VALUE;
                    if (pid < 0 && time != ANY_TIME) {
                        Sideband.Task t = sideband.taskAt(cpu, clock.toPerf(time));
                        pid = t == null ? -1 : t.pid();
                    }
                    TimedSections u = user.get(pid);
                    Image.Piece up = u == null ? null : u.find(addr, time);
                    s = up == null ? null : up.section;
                    if (s == null && time == ANY_TIME) {
                        // a trace without timing cannot tell which task ran: any process that mapped the address
                        for (TimedSections any : user.values()) {
                            s = any.section(addr, time);
                            if (s != null) {
                                return Image.Piece.of(s, s.address(), s.end(), Long.MIN_VALUE, Long.MAX_VALUE);
                            }
                        }
                    }
                    if (s != null) {
                        // another task may run this address with other code: ask again after the next switch
                        Sideband.Task next = sideband.taskAfter(cpu, clock.toPerf(time));
                        to = next == null ? to : clock.toDecoder(next.time());
                        Sideband.Task cur = sideband.taskAt(cpu, clock.toPerf(time));
                        from = cur == null ? from : clock.toDecoder(cur.time());
                        return up.during(from, to);
                    }
                }
                return global.find(addr, time);
            }

            @Override
            public boolean timed() {
                return timed;
            }
        };
    }

    public List<Program> programs() {
        return List.copyOf(programs);
    }

    public Symbols symbols() {
        return symbols;
    }

    public Clock clock() {
        return clock;
    }

    public boolean timed() {
        return timed;
    }

    public List<String> notes() {
        return List.copyOf(notes);
    }

    /** The code of the section holding {@code addr} at perf time {@code time} (kernel or archived user code). */
    public Section section(long addr, long time) {
        long t = time == Long.MIN_VALUE || time == Long.MAX_VALUE ? CodeSpace.ANY_TIME : clock.toDecoder(time);
        Section s = kernel.section(addr, t);
        return s != null ? s : global.section(addr, t);
    }

    /** The BPF program (any instance) holding {@code addr} at perf time {@code time}, or null. */
    public Program programAt(long addr, long time) {
        for (Program p : programs) {
            if (!p.bpf()) {
                continue;
            }
            for (Function f : p.functions()) {
                if (f.covers(addr, time == CodeSpace.ANY_TIME ? f.from() : time)) {
                    return p;
                }
            }
        }
        return null;
    }

    /**
     * A name for {@code addr} at perf time {@code time}: a symbol ("name+0x10"), else the program, KSYMBOL or code
     * region holding it, else null.
     */
    public String describe(long addr, long time) {
        long t = time < 0 ? CodeSpace.ANY_TIME : time;
        // dynamic text first: a kallsyms copy names an unloaded program's address after its neighbour
        Program p = programAt(addr, t);
        if (p != null) {
            for (Function f : p.functions()) {
                if (f.covers(addr, t == CodeSpace.ANY_TIME ? f.from() : t)) {
                    return offset(f.name(), addr - f.address());
                }
            }
        }
        Sideband.KernelSymbol k = symbolAt(addr, time < 0 ? Long.MAX_VALUE - 1 : time);
        if (k != null) {
            return offset(k.name(), addr - k.address());
        }
        String s = symbols.describe(addr);
        if (s != null) {
            return s;
        }
        Section sec = section(addr, time < 0 ? Long.MIN_VALUE : time);
        return sec == null ? null : offset(sec.name(), addr - sec.address());
    }

    private static String offset(String name, long off) {
        return off == 0 ? name : name + "+0x" + Long.toHexString(off);
    }

    /** The KSYMBOL that would have held {@code addr} at perf time {@code time}, if the sideband names one. */
    public Sideband.KernelSymbol symbolAt(long addr, long time) {
        if (!sideband.hasKernelSymbols()) {
            return null; // user code's symbol misses ask here for every address
        }
        Sideband.KernelSymbol best = null;
        for (Sideband.KernelSymbol k : sideband.kernelSymbols()) {
            if (k.covers(addr) && (time < k.to() || time == Long.MIN_VALUE) && (best == null || k.from() > best.from())
                    && (k.from() <= time || best == null)) {
                best = k;
            }
        }
        return best;
    }

    /** "bpf_prog_TAG_NAME" → TAG ("" if not that shape). */
    public static String tagOf(String name) {
        if (!name.startsWith("bpf_prog_") || name.length() < 25) {
            return "";
        }
        String t = name.substring(9, 25);
        return t.chars().allMatch(c -> Character.digit(c, 16) >= 0) ? t.toLowerCase(java.util.Locale.ROOT) : "";
    }

    /** "bpf_prog_TAG_NAME" → NAME; other names unchanged. */
    public static String nameAfterTag(String name) {
        if (tagOf(name).isEmpty()) {
            return name;
        }
        return name.length() > 26 ? name.substring(26) : "";
    }
}

package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * One feature section of a perf.data header (or a pipe-mode HEADER_FEATURE record), in perf's own layout
 * (tools/perf/util/header.c). Sections this reader does not model stay {@link Raw}.
 */
public sealed interface Feature {

    int TRACING_DATA = 1;
    int BUILD_ID = 2;
    int HOSTNAME = 3;
    int OSRELEASE = 4;
    int VERSION = 5;
    int ARCH = 6;
    int NRCPUS = 7;
    int CPUDESC = 8;
    int CPUID = 9;
    int TOTAL_MEM = 10;
    int CMDLINE = 11;
    int EVENT_DESC = 12;
    int CPU_TOPOLOGY = 13;
    int NUMA_TOPOLOGY = 14;
    int BRANCH_STACK = 15;
    int PMU_MAPPINGS = 16;
    int GROUP_DESC = 17;
    int AUXTRACE = 18;
    int STAT = 19;
    int CACHE = 20;
    int SAMPLE_TIME = 21;
    int MEM_TOPOLOGY = 22;
    int CLOCKID = 23;
    int DIR_FORMAT = 24;
    int BPF_PROG_INFO = 25;
    int BPF_BTF = 26;
    int COMPRESSED = 27;
    int CPU_PMU_CAPS = 28;
    int CLOCK_DATA = 29;
    int HYBRID_TOPOLOGY = 30;
    int PMU_CAPS = 31;
    /**
     * ptfence's own section (docs/perfdata.md, "Recordings that name their code"): the text regions a recording used.
     * The last bit of the header's 256-bit map, far from perf's own numbering (31 is its last in 6.1; upstream adds
     * about one a year); perf 6.1 skips feature bits it does not know without a word (report, script,
     * --header-only, -v).
     */
    int PTFENCE_TEXT = 255;
    /** Feature bits in the file header bitmap. */
    int MAX_BITS = 256;

    /** The HEADER_* number. */
    int id();

    /** A string feature: HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC or CPUID. */
    record Text(int id, String value) implements Feature {
        public Text {
            if (id != HOSTNAME && id != OSRELEASE && id != VERSION && id != ARCH && id != CPUDESC && id != CPUID) {
                throw new IllegalArgumentException("feature " + id + " is not a string feature");
            }
        }
    }

    record NrCpus(int available, int online) implements Feature {
        public int id() { return NRCPUS; }
    }

    record TotalMem(long kib) implements Feature {
        public int id() { return TOTAL_MEM; }
    }

    record Cmdline(List<String> args) implements Feature {
        public Cmdline {
            args = List.copyOf(args);
        }
        public int id() { return CMDLINE; }
    }

    record EventDescEntry(EventAttr attr, String name, List<Long> ids) {
        public EventDescEntry {
            ids = List.copyOf(ids);
        }
    }

    record EventDesc(List<EventDescEntry> events) implements Feature {
        public EventDesc {
            events = List.copyOf(events);
        }
        public int id() { return EVENT_DESC; }
    }

    /** One build id: {@code buildId} is the 24-byte field (20 bytes of id, then size byte when misc bit 15 is set). */
    record BuildIdEntry(int misc, int pid, ByteBuffer buildId, String filename) {
        public static final int MISC_BUILD_ID_SIZE = 1 << 15;

        public BuildIdEntry {
            buildId = buildId.asReadOnlyBuffer();
        }

        /** The id bytes: {@code size} of them if recorded, else all 20. */
        public byte[] id() {
            int recorded = buildId.remaining() > 20 ? buildId.get(buildId.position() + 20) & 0xff : 20;
            int n = Math.min((misc & MISC_BUILD_ID_SIZE) != 0 ? recorded : 20, Math.min(20, buildId.remaining()));
            byte[] out = new byte[n];
            buildId.duplicate().get(out);
            return out;
        }

        @Override
        public ByteBuffer buildId() {
            return buildId.duplicate();
        }
    }

    record BuildIds(List<BuildIdEntry> entries) implements Feature {
        public BuildIds {
            entries = List.copyOf(entries);
        }
        public int id() { return BUILD_ID; }
    }

    record PmuMapping(int type, String name) {}

    record PmuMappings(List<PmuMapping> pmus) implements Feature {
        public PmuMappings {
            pmus = List.copyOf(pmus);
        }
        public int id() { return PMU_MAPPINGS; }
    }

    /** Where each PERF_RECORD_AUXTRACE of the data section sits: record offset and header.size (48). */
    record AuxtraceIndexEntry(long fileOffset, long size) {}

    record AuxtraceIndex(List<AuxtraceIndexEntry> entries) implements Feature {
        public AuxtraceIndex {
            entries = List.copyOf(entries);
        }
        public int id() { return AUXTRACE; }
    }

    /** One CPU cache: level, line size, sets, ways, and perf's strings for type ("Data"), size ("32K"), CPU map. */
    record CacheLevel(int level, int lineSize, int sets, int ways, String type, String size, String cpus) {}

    /** CACHE: {@code version} is 1 in every perf that writes it. */
    record Caches(int version, List<CacheLevel> caches) implements Feature {
        public Caches {
            caches = List.copyOf(caches);
        }
        public int id() { return CACHE; }
    }

    /** One NUMA node: memory in KiB and its CPU list ("0-3"). */
    record NumaNode(int node, long memTotalKib, long memFreeKib, String cpus) {}

    record NumaTopology(List<NumaNode> nodes) implements Feature {
        public NumaTopology {
            nodes = List.copyOf(nodes);
        }
        public int id() { return NUMA_TOPOLOGY; }
    }

    record SampleTime(long start, long end) implements Feature {
        public int id() { return SAMPLE_TIME; }
    }

    record ClockId(long resolutionNs) implements Feature {
        public int id() { return CLOCKID; }
    }

    /**
     * One {@code struct perf_bpil}: which arrays were fetched ({@code arrays}, bit = BPF_PROG_INFO_* index), the
     * {@code struct bpf_prog_info} bytes, and the arrays' data. In the file, the info's pointer fields hold offsets
     * into {@code data} (perf's bpil_addr_to_offs).
     */
    record BpfProgInfo(long arrays, ByteBuffer info, ByteBuffer data) {
        public BpfProgInfo {
            info = info.asReadOnlyBuffer();
            data = data.asReadOnlyBuffer();
        }

        public static final int ARRAY_JITED_INSNS = 0;
        public static final int ARRAY_XLATED_INSNS = 1;
        public static final int ARRAY_MAP_IDS = 2;
        public static final int ARRAY_JITED_KSYMS = 3;
        public static final int ARRAY_JITED_FUNC_LENS = 4;
        public static final int ARRAY_FUNC_INFO = 5;
        public static final int ARRAY_LINE_INFO = 6;
        public static final int ARRAY_JITED_LINE_INFO = 7;
        public static final int ARRAY_PROG_TAGS = 8;

        /** Per array index: offset of its pointer field, of its count field, and its element size (or -field). */
        private static final int[][] ARRAY_FIELDS = {
            {24, 16, 1}, {32, 20, 1}, {56, 52, 4}, {112, 104, 8}, {120, 108, 4},
            {136, 144, -132}, {152, 148, -172}, {160, 168, -176}, {184, 180, 8},
        };

        /**
         * Lays out a program's arrays the way perf does (get_bpf_prog_info_linear + bpil_addr_to_offs): each
         * array 8-byte aligned in {@code data}, in index order, and the info's pointer fields set to their offsets.
         * {@code info} is a {@code struct bpf_prog_info} as the kernel filled it (its counts and record sizes
         * describe the arrays); {@code arrays} maps BPF_PROG_INFO_* indexes to their bytes.
         */
        public static BpfProgInfo linear(ByteBuffer info, java.util.Map<Integer, ByteBuffer> arrays) {
            ByteBuffer in = info.duplicate();
            ByteBuffer copy = ByteBuffer.allocate(in.remaining()).order(ByteOrder.LITTLE_ENDIAN);
            copy.put(in).flip();
            long mask = 0;
            int size = 0;
            for (int i = 0; i < ARRAY_FIELDS.length; i++) {
                ByteBuffer a = arrays.get(i);
                if (a != null) {
                    size = (size + 7) & ~7;
                    size += a.remaining();
                }
            }
            ByteBuffer data = ByteBuffer.allocate((size + 7) & ~7).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < ARRAY_FIELDS.length; i++) {
                ByteBuffer a = arrays.get(i);
                if (a == null) {
                    // A pointer the kernel filled for an array not stored here would point into another process.
                    if (ARRAY_FIELDS[i][0] + 8 <= copy.limit()) {
                        copy.putLong(ARRAY_FIELDS[i][0], 0);
                    }
                    continue;
                }
                if (ARRAY_FIELDS[i][0] + 8 > copy.limit()) {
                    throw new IllegalArgumentException("bpf_prog_info of " + copy.limit() + " bytes has no array " + i);
                }
                data.position((data.position() + 7) & ~7);
                copy.putLong(ARRAY_FIELDS[i][0], data.position());
                data.put(a.duplicate());
                mask |= 1L << i;
            }
            data.clear();
            return new BpfProgInfo(mask, copy, data);
        }

        /** The bytes of array {@code index} (a BPF_PROG_INFO_* number); empty if it was not fetched. */
        public ByteBuffer array(int index) {
            int[] f = ARRAY_FIELDS[index];
            long elem = f[2] > 0 ? f[2] : Integer.toUnsignedLong(infoU32(-f[2]));
            return array(index, f[0], elem * Integer.toUnsignedLong(infoU32(f[1])));
        }

        private ByteBuffer le() {
            return info.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        }

        private long infoU64(int off) {
            return off + 8 <= info.limit() ? le().getLong(off) : 0;
        }

        private int infoU32(int off) {
            return off + 4 <= info.limit() ? le().getInt(off) : 0;
        }

        public int progType() { return infoU32(0); }
        public int progId() { return infoU32(4); }

        public byte[] tag() {
            byte[] t = new byte[8];
            if (info.limit() >= 16) {
                le().position(8).get(t);
            }
            return t;
        }

        public String name() {
            byte[] n = new byte[16];
            if (info.limit() >= 80) {
                le().position(64).get(n);
            }
            int len = 0;
            while (len < n.length && n[len] != 0) {
                len++;
            }
            return new String(n, 0, len, java.nio.charset.StandardCharsets.UTF_8);
        }

        public long loadTime() { return infoU64(40); }
        public int jitedProgLen() { return infoU32(16); }
        public int nrJitedKsyms() { return infoU32(104); }
        public int nrJitedFuncLens() { return infoU32(108); }
        public int nrProgTags() { return infoU32(180); }
        /** The id of the program's BTF (a BPF_BTF entry), 0 for none. */
        public int btfId() { return infoU32(128); }
        public int funcInfoRecSize() { return infoU32(132); }

        private ByteBuffer array(int index, int offsetField, long length) {
            if ((arrays & (1L << index)) == 0) {
                return ByteBuffer.allocate(0);
            }
            long off = infoU64(offsetField);
            if (off < 0 || length < 0 || off + length > data.limit()) {
                throw new BadPerfData("bpf_prog_info array " + index + " outside its data (" + off + "+" + length
                        + " > " + data.limit() + ")");
            }
            return data.duplicate().position((int) off).limit((int) (off + length)).slice().order(ByteOrder.LITTLE_ENDIAN);
        }

        /** The JITed machine code of all functions, as perf serves it to its decoder. */
        public ByteBuffer jitedInsns() {
            return array(ARRAY_JITED_INSNS, 24, Integer.toUnsignedLong(jitedProgLen()));
        }

        /** Start address of each JITed function. */
        public long[] jitedKsyms() {
            ByteBuffer b = array(ARRAY_JITED_KSYMS, 112, 8L * Integer.toUnsignedLong(nrJitedKsyms()));
            long[] out = new long[b.remaining() / 8];
            for (int i = 0; i < out.length; i++) {
                out[i] = b.getLong(i * 8);
            }
            return out;
        }

        /** Length of each JITed function. */
        public int[] jitedFuncLens() {
            ByteBuffer b = array(ARRAY_JITED_FUNC_LENS, 120, 4L * Integer.toUnsignedLong(nrJitedFuncLens()));
            int[] out = new int[b.remaining() / 4];
            for (int i = 0; i < out.length; i++) {
                out[i] = b.getInt(i * 4);
            }
            return out;
        }

        @Override
        public ByteBuffer info() {
            return info.duplicate();
        }

        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }
    }

    record BpfProgInfos(List<BpfProgInfo> programs) implements Feature {
        public BpfProgInfos {
            programs = List.copyOf(programs);
        }
        public int id() { return BPF_PROG_INFO; }
    }

    record BpfBtf(int btfId, ByteBuffer data) {
        public BpfBtf {
            data = data.asReadOnlyBuffer();
        }

        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }
    }

    record BpfBtfs(List<BpfBtf> btfs) implements Feature {
        public BpfBtfs {
            btfs = List.copyOf(btfs);
        }
        public int id() { return BPF_BTF; }
    }

    /**
     * One dynamic text region a recording used: where and when its bytes were, what it was, and the content key
     * (SHA-256 of the bytes, 64 hex digits) its image is archived and published under.
     */
    record TextRegion(long address, long length, long validFrom, long validTo, String kind, String name,
            String key) {
        public TextRegion {
            if (key.length() != 64 || !key.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
                throw new IllegalArgumentException("content key must be 64 hex digits: " + key);
            }
            key = key.toLowerCase(java.util.Locale.ROOT);
        }
    }

    /**
     * {@link #PTFENCE_TEXT}: the recording's id in the archive that wrote it, its host's boot id, its start and end in
     * perf time ({@code Long.MAX_VALUE} while it runs), and every text region it used.
     */
    record TextRegions(String recordingId, String bootId, long start, long end, List<TextRegion> regions)
            implements Feature {
        public TextRegions {
            regions = List.copyOf(regions);
        }
        public int id() { return PTFENCE_TEXT; }
    }

    /**
     * CPU_TOPOLOGY: the package (socket) and core sibling lists, and what follows them: per CPU its core and socket
     * id, then die lists and ids (perf 5.x on). How many CPUs that tail holds is NRCPUS' "available", a section
     * of its own, so the tail is kept as bytes and read by {@link #cpus}.
     */
    record CpuTopology(List<String> packageCpus, List<String> coreCpus, ByteBuffer rest) implements Feature {
        public CpuTopology {
            packageCpus = List.copyOf(packageCpus);
            coreCpus = List.copyOf(coreCpus);
            rest = rest.asReadOnlyBuffer().order(rest.order());
        }

        public int id() { return CPU_TOPOLOGY; }

        @Override
        public ByteBuffer rest() {
            return rest.duplicate().order(rest.order());
        }

        /** Per CPU ids: core and socket, and (when recorded) die lists and die ids; dies empty when none. */
        public record CpuIds(int[] core, int[] socket, List<String> dieCpus, int[] die) {}

        /**
         * The per-CPU ids for {@code nrCpus} CPUs (NRCPUS' available), as perf's process_cpu_topology reads them;
         * empty where the section stops after the sibling lists (an old perf) or a socket id is out of range and
         * {@code checkSockets} (perf skips that check for s390 and aarch64).
         */
        public java.util.Optional<CpuIds> cpus(int nrCpus, boolean checkSockets) {
            ByteBuffer b = rest();
            if (!b.hasRemaining() || nrCpus < 0) {
                return java.util.Optional.empty();
            }
            Cursor c = new Cursor(b);
            try {
                int[] core = new int[nrCpus];
                int[] socket = new int[nrCpus];
                for (int i = 0; i < nrCpus; i++) {
                    core[i] = c.u32();
                    socket[i] = c.u32();
                    if (checkSockets && socket[i] != -1 && Integer.toUnsignedLong(socket[i]) > nrCpus) {
                        return java.util.Optional.empty();
                    }
                }
                List<String> dies = new java.util.ArrayList<>();
                int[] die = new int[0];
                if (c.remaining() > 0) {
                    int n = c.count(Integer.toUnsignedLong(c.u32()), 4, "die lists");
                    for (int i = 0; i < n; i++) {
                        dies.add(c.perfString("die cpus"));
                    }
                    die = new int[nrCpus];
                    for (int i = 0; i < nrCpus; i++) {
                        die[i] = c.u32();
                    }
                }
                return java.util.Optional.of(new CpuIds(core, socket, dies, die));
            } catch (BadPerfData e) {
                return java.util.Optional.empty(); // perf drops the per-CPU ids it cannot read
            }
        }
    }

    /** One event group: its name ("{anon_group}" for none), leader's index among the events, member count. */
    record Group(String name, int leaderIdx, int members) {}

    record GroupDesc(List<Group> groups) implements Feature {
        public GroupDesc {
            groups = List.copyOf(groups);
        }
        public int id() { return GROUP_DESC; }
    }

    /** One memory node of MEM_TOPOLOGY: node id, its size field, and the bitmap of its memory blocks. */
    record MemoryNode(long node, long size, long bits, List<Long> words) {
        public MemoryNode {
            words = List.copyOf(words);
        }
    }

    /** MEM_TOPOLOGY: version (1), the memory block size in bytes, and each node's blocks. */
    record MemTopology(long version, long blockSize, List<MemoryNode> nodes) implements Feature {
        public MemTopology {
            nodes = List.copyOf(nodes);
        }
        public int id() { return MEM_TOPOLOGY; }
    }

    /** CLOCK_DATA: version (1), the clock perf used (-k), and one reference time of day and of that clock (ns). */
    record ClockData(int version, int clockid, long todNs, long clockidNs) implements Feature {
        public int id() { return CLOCK_DATA; }
    }

    /** COMPRESSED: perf record -z's version, type (1: Zstd), level, ratio and mmap length. */
    record Compressed(int version, int type, int level, int ratio, int mmapLength) implements Feature {
        public int id() { return COMPRESSED; }
    }

    /** One capability of a PMU (sysfs caps/NAME holds VALUE). */
    record PmuCap(String name, String value) {}

    /** One PMU's capabilities, with the PMU's name (null in CPU_PMU_CAPS: it is "cpu"). */
    record PmuCaps(List<PmuCap> caps, String pmu) {
        public PmuCaps {
            caps = List.copyOf(caps);
        }
    }

    /** CPU_PMU_CAPS (one, no name) or PMU_CAPS (several, named). */
    record PmuCapsList(int id, List<PmuCaps> pmus) implements Feature {
        public PmuCapsList {
            if (id != CPU_PMU_CAPS && id != PMU_CAPS) {
                throw new IllegalArgumentException("feature " + id + " is not a pmu caps feature");
            }
            pmus = List.copyOf(pmus);
        }
    }

    /** One HYBRID_TOPOLOGY node: a core PMU's name and its CPU list. */
    record HybridNode(String pmu, String cpus) {}

    record HybridTopology(List<HybridNode> nodes) implements Feature {
        public HybridTopology {
            nodes = List.copyOf(nodes);
        }
        public int id() { return HYBRID_TOPOLOGY; }
    }

    /** A section kept as bytes (topologies, caches, group desc, pmu caps, ...). */
    record Raw(int id, ByteBuffer data) implements Feature {
        public Raw {
            data = data.asReadOnlyBuffer();
        }

        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }
    }
}

package ptfence.perfdata;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The perf.data header as text, as perf 6.1 prints it for {@code perf script --header}, {@code --header-only} and
 * {@code perf report --header-only} (header.c's perf_header__fprintf_info and its print_* functions): the file
 * header's numbers, one or more lines per feature section present, in bit order, and the features missing.
 * {@code full} is perf's -I: the topologies and caches in full rather than "... info available". In pipe mode the
 * features come as records: {@link #feature} gives the lines of one as it arrives. docs/script.md ("--header")
 * lists where these lines are not perf's.
 */
public final class HeaderInfo {
    /** perf 6.1's feature names, by bit (HEADER_LAST_FEATURE is 32 there). */
    private static final String[] NAMES = {null, "TRACING_DATA", "BUILD_ID", "HOSTNAME", "OSRELEASE", "VERSION",
        "ARCH", "NRCPUS", "CPUDESC", "CPUID", "TOTAL_MEM", "CMDLINE", "EVENT_DESC", "CPU_TOPOLOGY", "NUMA_TOPOLOGY",
        "BRANCH_STACK", "PMU_MAPPINGS", "GROUP_DESC", "AUXTRACE", "STAT", "CACHE", "SAMPLE_TIME", "MEM_TOPOLOGY",
        "CLOCKID", "DIR_FORMAT", "BPF_PROG_INFO", "BPF_BTF", "COMPRESSED", "CPU_PMU_CAPS", "CLOCK_DATA",
        "HYBRID_TOPOLOGY", "PMU_CAPS"};
    private static final int LAST_FEATURE = NAMES.length;
    /** The sections perf prints only with -I. */
    private static final java.util.Set<Integer> FULL_ONLY = java.util.Set.of(Feature.CPU_TOPOLOGY,
            Feature.NUMA_TOPOLOGY, Feature.CACHE, Feature.MEM_TOPOLOGY, Feature.HYBRID_TOPOLOGY);

    private HeaderInfo() {
    }

    /**
     * perf_session__fprintf_info: the lines between "# ========" and "# ========\n#", for {@code f} last modified at
     * {@code mtime} (perf's fstat of its input), in {@code zone}. A pipe-mode recording has no header: its numbers
     * are 0 and its features come later ({@link #feature}).
     */
    public static String text(PerfDataFile f, Instant mtime, ZoneId zone, boolean full) {
        StringBuilder sb = new StringBuilder();
        sb.append("# ========\n");
        sb.append("# captured on    : ").append(ctime(mtime, zone)).append('\n');
        sb.append("# header version : 1\n");
        FileHeader h = f.header();
        long offset = h.pipeMode() ? 0 : h.data().offset();
        long size = h.pipeMode() ? 0 : h.data().size();
        sb.append("# data offset    : ").append(Long.toUnsignedString(offset)).append('\n');
        sb.append("# data size      : ").append(Long.toUnsignedString(size)).append('\n');
        sb.append("# feat offset    : ").append(Long.toUnsignedString(offset + size)).append('\n');
        if (!h.pipeMode()) {
            Features features = f.features();
            for (Map.Entry<Integer, Feature> e : new TreeMap<>(features.all()).entrySet()) {
                sb.append(feature(e.getValue(), features, f.attrs(), full));
            }
            sb.append("# missing features: ");
            for (int bit = 1; bit < LAST_FEATURE; bit++) {
                if (!h.hasFeature(bit)) {
                    sb.append(NAMES[bit]).append(' ');
                }
            }
            sb.append('\n');
        }
        sb.append("# ========\n#\n");
        return sb.toString();
    }

    /** C's ctime without its newline: "Sun Nov 29 05:44:53 2026". */
    static String ctime(Instant t, ZoneId zone) {
        ZonedDateTime z = t.atZone(zone);
        return String.format(Locale.ROOT, "%s %s%3d %02d:%02d:%02d %d",
                z.getDayOfWeek().getDisplayName(java.time.format.TextStyle.SHORT, Locale.US),
                z.getMonth().getDisplayName(java.time.format.TextStyle.SHORT, Locale.US), z.getDayOfMonth(),
                z.getHour(), z.getMinute(), z.getSecond(), z.getYear());
    }

    /**
     * The lines perf prints for one feature section ("" for those it prints nothing for: TRACING_DATA, BUILD_ID,
     * bits past its last). {@code all} and {@code attrs} are what else it reads: the CPU count for the topology, the
     * events for the groups, the BTF for BPF program names.
     */
    public static String feature(Feature f, Features all, List<AttrIds> attrs, boolean full) {
        int id = f.id();
        if (id <= 0 || id >= LAST_FEATURE || id == Feature.TRACING_DATA || id == Feature.BUILD_ID) {
            return "";
        }
        if (FULL_ONLY.contains(id) && !full) {
            return "# " + NAMES[id] + " info available, use -I to display\n";
        }
        StringBuilder sb = new StringBuilder();
        switch (id) {
            case Feature.HOSTNAME -> line(sb, "# hostname : ", text(f));
            case Feature.OSRELEASE -> line(sb, "# os release : ", text(f));
            case Feature.VERSION -> line(sb, "# perf version : ", text(f));
            case Feature.ARCH -> line(sb, "# arch : ", text(f));
            case Feature.CPUDESC -> line(sb, "# cpudesc : ", text(f));
            case Feature.CPUID -> line(sb, "# cpuid : ", text(f));
            case Feature.NRCPUS -> {
                Feature.NrCpus n = f instanceof Feature.NrCpus c ? c : new Feature.NrCpus(0, 0);
                line(sb, "# nrcpus online : ", Integer.toUnsignedString(n.online()));
                line(sb, "# nrcpus avail : ", Integer.toUnsignedString(n.available()));
            }
            case Feature.TOTAL_MEM -> line(sb, "# total memory : ",
                    Long.toUnsignedString(f instanceof Feature.TotalMem m ? m.kib() : 0) + " kB");
            case Feature.CMDLINE -> cmdline(sb, f);
            case Feature.EVENT_DESC -> eventDesc(sb, f);
            case Feature.CPU_TOPOLOGY -> cpuTopology(sb, f, all);
            case Feature.NUMA_TOPOLOGY -> {
                if (f instanceof Feature.NumaTopology t) {
                    for (Feature.NumaNode n : t.nodes()) {
                        String node = Integer.toUnsignedString(n.node());
                        sb.append("# node").append(node).append(" meminfo  : total = ")
                                .append(Long.toUnsignedString(n.memTotalKib())).append(" kB, free = ")
                                .append(Long.toUnsignedString(n.memFreeKib())).append(" kB\n");
                        sb.append("# node").append(node).append(" cpu list : ").append(CpuList.normalize(n.cpus()))
                                .append('\n');
                    }
                }
            }
            case Feature.BRANCH_STACK -> sb.append("# contains samples with branch stack\n");
            case Feature.PMU_MAPPINGS -> pmuMappings(sb, f);
            case Feature.GROUP_DESC -> groups(sb, f, all, attrs);
            case Feature.AUXTRACE -> sb.append("# contains AUX area data (e.g. instruction trace)\n");
            case Feature.STAT -> sb.append("# contains stat data\n");
            case Feature.CACHE -> {
                sb.append("# CPU cache info:\n");
                if (f instanceof Feature.Caches c && c.version() == 1) {
                    for (Feature.CacheLevel l : c.caches()) {
                        sb.append(String.format(Locale.ROOT, "#  L%d %-15s %8s [%s]\n", l.level(), l.type(),
                                l.size(), l.cpus()));
                    }
                }
            }
            case Feature.SAMPLE_TIME -> {
                Feature.SampleTime t = f instanceof Feature.SampleTime s ? s : new Feature.SampleTime(0, 0);
                line(sb, "# time of first sample : ", usec(t.start()));
                line(sb, "# time of last sample : ", usec(t.end()));
                // C's %10.3f rounds the double's exact value to nearest-even; Java's %f rounds its shortest
                // decimal half up (0.2455 ms would differ)
                String ms = new java.math.BigDecimal((double) (t.end() - t.start()) / 1_000_000)
                        .setScale(3, java.math.RoundingMode.HALF_EVEN).toPlainString();
                sb.append("# sample duration : ").append(" ".repeat(Math.max(0, 10 - ms.length()))).append(ms)
                        .append(" ms\n");
            }
            case Feature.MEM_TOPOLOGY -> memTopology(sb, f);
            case Feature.CLOCKID -> line(sb, "# clockid frequency: ",
                    Long.toUnsignedString((f instanceof Feature.ClockId c ? c.resolutionNs() : 0) * 1000) + " MHz");
            case Feature.DIR_FORMAT -> line(sb, "# directory data version : ", Long.toUnsignedString(
                    f instanceof Feature.Raw r && r.data().remaining() >= 8 ? r.data().getLong() : 0));
            case Feature.BPF_PROG_INFO -> bpfProgInfo(sb, f, all);
            case Feature.BPF_BTF -> {
                TreeMap<Integer, Feature.BpfBtf> byId = new TreeMap<>(Integer::compareUnsigned);
                all.bpfBtf().forEach(b -> byId.putIfAbsent(b.btfId(), b));
                byId.keySet().forEach(i -> line(sb, "# btf info of id ", Integer.toUnsignedString(i)));
            }
            case Feature.COMPRESSED -> {
                Feature.Compressed z = f instanceof Feature.Compressed c ? c : new Feature.Compressed(0, 0, 0, 0, 0);
                sb.append("# compressed : ").append(z.type() == 1 ? "Zstd" : "Unknown").append(", level = ")
                        .append(z.level()).append(", ratio = ").append(z.ratio()).append('\n');
            }
            case Feature.CPU_PMU_CAPS -> pmuCaps(sb, f instanceof Feature.PmuCapsList p && !p.pmus().isEmpty()
                    ? p.pmus().get(0).caps() : List.of(), "cpu");
            case Feature.CLOCK_DATA -> clockData(sb, f);
            case Feature.HYBRID_TOPOLOGY -> {
                sb.append("# hybrid cpu system:\n");
                if (f instanceof Feature.HybridTopology t) {
                    t.nodes().forEach(n -> sb.append("# ").append(n.pmu()).append(" cpu list : ").append(n.cpus())
                            .append('\n'));
                }
            }
            case Feature.PMU_CAPS -> {
                if (f instanceof Feature.PmuCapsList p) {
                    p.pmus().forEach(c -> pmuCaps(sb, c.caps(), c.pmu()));
                }
            }
            default -> {
            }
        }
        return sb.toString();
    }

    private static void line(StringBuilder sb, String head, String value) {
        sb.append(head).append(value).append('\n');
    }

    private static String text(Feature f) {
        return f instanceof Feature.Text t ? t.value() : "(null)";
    }

    /** timestamp__scnprintf_usec: seconds and microseconds. */
    private static String usec(long ns) {
        return Long.toUnsignedString(Long.divideUnsigned(ns, 1_000_000_000L)) + "."
                + String.format(Locale.ROOT, "%06d", Long.remainderUnsigned(ns, 1_000_000_000L) / 1000);
    }

    private static void cmdline(StringBuilder sb, Feature f) {
        sb.append("# cmdline : ");
        if (f instanceof Feature.Cmdline c) {
            // perf escapes a quote in an argument as \'
            c.args().forEach(a -> sb.append(a.replace("'", "\\'")).append(' '));
        }
        sb.append('\n');
    }

    private static void eventDesc(StringBuilder sb, Feature f) {
        if (!(f instanceof Feature.EventDesc d)) {
            sb.append("# event desc: not available or unable to read\n");
            return;
        }
        for (Feature.EventDescEntry e : d.events()) {
            if (e.attr().size() == 0) {
                break; // perf's list of events ends at an attr of size 0
            }
            sb.append("# event : name = ").append(e.name()).append(", ");
            if (!e.ids().isEmpty()) {
                sb.append(", id = {");
                for (int j = 0; j < e.ids().size(); j++) {
                    sb.append(j > 0 ? ", " : " ").append(Long.toUnsignedString(e.ids().get(j)));
                }
                sb.append(" }");
            }
            AttrText.append(sb, e.attr());
            sb.append('\n');
        }
    }

    private static void cpuTopology(StringBuilder sb, Feature f, Features all) {
        if (!(f instanceof Feature.CpuTopology t)) {
            return;
        }
        t.packageCpus().forEach(s -> line(sb, "# sibling sockets : ", s));
        int nr = all.nrCpus().map(Feature.NrCpus::available).orElse(0);
        String arch = all.arch().orElse("");
        var ids = t.cpus(nr, !arch.startsWith("s390") && !arch.startsWith("aarch64"));
        boolean dies = ids.isPresent() && !ids.get().dieCpus().isEmpty();
        if (dies) {
            ids.get().dieCpus().forEach(s -> line(sb, "# sibling dies    : ", s));
        }
        t.coreCpus().forEach(s -> line(sb, "# sibling threads : ", s));
        if (ids.isEmpty()) {
            sb.append("# Core ID and Socket ID information is not available\n");
            return;
        }
        Feature.CpuTopology.CpuIds c = ids.get();
        for (int i = 0; i < nr; i++) {
            sb.append("# CPU ").append(i).append(": Core ID ").append(c.core()[i]);
            if (dies) {
                sb.append(", Die ID ").append(c.die()[i]);
            }
            sb.append(", Socket ID ").append(c.socket()[i]).append('\n');
        }
    }

    private static void pmuMappings(StringBuilder sb, Feature f) {
        if (!(f instanceof Feature.PmuMappings p) || p.pmus().isEmpty()) {
            sb.append("# pmu mappings: not available\n");
            return;
        }
        String delimiter = "# pmu mappings: ";
        for (Feature.PmuMapping m : p.pmus()) {
            sb.append(delimiter).append(m.name()).append(" = ").append(Integer.toUnsignedString(m.type()));
            delimiter = ", ";
        }
        sb.append('\n');
    }

    /** print_group_desc: each group's leader and members by event name, from the events' order. */
    private static void groups(StringBuilder sb, Feature f, Features all, List<AttrIds> attrs) {
        if (!(f instanceof Feature.GroupDesc g)) {
            return;
        }
        List<String> names = new ArrayList<>();
        List<Feature.EventDescEntry> desc = all.eventDesc();
        for (int i = 0; i < attrs.size(); i++) {
            names.add(i < desc.size() ? desc.get(i).name() : EventNames.perfName(attrs.get(i).attr()));
        }
        Map<Integer, Feature.Group> leaders = new TreeMap<>();
        g.groups().forEach(e -> leaders.putIfAbsent(e.leaderIdx(), e));
        int members = 0;
        for (int i = 0; i < names.size(); i++) {
            Feature.Group leader = leaders.get(i);
            if (leader != null && leader.members() > 1) {
                String name = leader.name().equals("{anon_group}") ? "" : leader.name();
                sb.append("# group: ").append(name).append('{').append(names.get(i));
                members = leader.members() - 1;
            } else if (members > 0) {
                sb.append(',').append(names.get(i));
                if (--members == 0) {
                    sb.append("}\n");
                }
            }
        }
    }

    private static void memTopology(StringBuilder sb, Feature f) {
        if (!(f instanceof Feature.MemTopology m) || m.version() != 1) {
            sb.append("# memory nodes (nr 0, block size 0x0):\n");
            return;
        }
        sb.append("# memory nodes (nr ").append(m.nodes().size()).append(", block size 0x")
                .append(Long.toHexString(m.blockSize())).append("):\n");
        for (Feature.MemoryNode n : m.nodes()) {
            long[] words = n.words().stream().mapToLong(Long::longValue).toArray();
            long weight = 0;
            for (long w : words) {
                weight += Long.bitCount(w);
            }
            String map = CpuList.bits(words, n.bits());
            sb.append(String.format(Locale.ROOT, "#  %3s [%s]: %s\n", Long.toUnsignedString(n.node()),
                    units(m.blockSize() * weight), map.length() > 99 ? map.substring(0, 99) : map));
        }
    }

    /** unit_number__scnprintf: B, K, M or G, dividing while more than one of the next unit remains. */
    private static String units(long n) {
        String unit = "BKMG";
        int i = 0;
        while (Long.divideUnsigned(n, 1024) > 1 && i < 3) {
            n = Long.divideUnsigned(n, 1024);
            i++;
        }
        return Long.toUnsignedString(n) + unit.charAt(i);
    }

    /** bpf_event__print_bpf_prog_info for each program, by id (perf keeps them in a tree; a repeated id once). */
    private static void bpfProgInfo(StringBuilder sb, Feature f, Features all) {
        if (!(f instanceof Feature.BpfProgInfos p)) {
            return;
        }
        TreeMap<Integer, Feature.BpfProgInfo> byId = new TreeMap<>(Integer::compareUnsigned);
        p.programs().forEach(b -> byId.putIfAbsent(b.progId(), b));
        for (Feature.BpfProgInfo b : byId.values()) {
            long[] addrs = b.jitedKsyms();
            int[] lens = b.jitedFuncLens();
            java.nio.ByteBuffer tags = b.array(Feature.BpfProgInfo.ARRAY_PROG_TAGS);
            int n = addrs.length;
            if (n != b.nrJitedKsyms() || n != b.nrProgTags() || n != b.nrJitedFuncLens() || lens.length != n
                    || tags.remaining() < 8L * n) {
                continue; // perf prints nothing for a program whose counts disagree
            }
            String id = Integer.toUnsignedString(b.progId());
            ptfence.bpf.Btf btf = btfOf(b, all);
            if (n == 1) {
                sb.append("# bpf_prog_info ").append(id).append(": ").append(progName(b, btf, tags, 0, 1))
                        .append(" addr 0x").append(Long.toHexString(addrs[0])).append(" size ")
                        .append(Integer.toUnsignedString(lens[0])).append('\n');
                continue;
            }
            sb.append("# bpf_prog_info ").append(id).append(":\n");
            for (int i = 0; i < n; i++) {
                sb.append("# \tsub_prog ").append(i).append(": ").append(progName(b, btf, tags, i, n)).append(" addr 0x")
                        .append(Long.toHexString(addrs[i])).append(" size ").append(Integer.toUnsignedString(lens[i]))
                        .append('\n');
            }
        }
    }

    /** The program's BTF (its btf_id among the BPF_BTF sections, the first of an id), or null as perf's btf__new. */
    private static ptfence.bpf.Btf btfOf(Feature.BpfProgInfo b, Features all) {
        int btfId = b.btfId();
        if (btfId == 0) {
            return null;
        }
        for (Feature.BpfBtf e : all.bpfBtf()) {
            if (e.btfId() == btfId) {
                byte[] raw = new byte[e.data().remaining()];
                e.data().get(raw);
                try {
                    return ptfence.bpf.Btf.parse(raw, "btf " + Integer.toUnsignedString(btfId));
                } catch (RuntimeException bad) {
                    return null; // perf: btf__new fails, the program is named without it
                }
            }
        }
        return null;
    }

    /**
     * synthesize_bpf_prog_name: "bpf_prog_", the function's tag, then with BTF the function's name from its
     * func_info record, without it the program's name when it is one function, "F" for each of several.
     */
    private static String progName(Feature.BpfProgInfo b, ptfence.bpf.Btf btf, java.nio.ByteBuffer tags, int sub,
            int count) {
        StringBuilder s = new StringBuilder("bpf_prog_");
        for (int k = 0; k < 8; k++) {
            s.append(String.format(Locale.ROOT, "%02x", tags.get(tags.position() + sub * 8 + k) & 0xff));
        }
        String fromBtf = btf == null ? null : funcName(b, btf, sub);
        if (fromBtf != null) {
            s.append('_').append(fromBtf);
        } else if (btf == null && count == 1 && !b.name().isEmpty()) {
            s.append('_').append(b.name());
        } else if (btf == null && count > 1) {
            s.append("_F");
        }
        return s.toString();
    }

    /** The name of function {@code sub}'s FUNC type (func_info's type_id), or null where the records do not say. */
    private static String funcName(Feature.BpfProgInfo b, ptfence.bpf.Btf btf, int sub) {
        int rec = b.funcInfoRecSize();
        java.nio.ByteBuffer funcs = b.array(Feature.BpfProgInfo.ARRAY_FUNC_INFO);
        long at = (long) sub * rec + 4;
        if (rec < 8 || at + 4 > funcs.remaining()) {
            return null;
        }
        try {
            return btf.type(funcs.getInt(funcs.position() + (int) at)).name();
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static void pmuCaps(StringBuilder sb, List<Feature.PmuCap> caps, String pmu) {
        if (caps.isEmpty()) {
            sb.append("# ").append(pmu).append(" pmu capabilities: not available\n");
            return;
        }
        sb.append("# ").append(pmu).append(" pmu capabilities: ");
        String delimiter = "";
        for (Feature.PmuCap c : caps) {
            sb.append(delimiter).append(c.name()).append('=').append(c.value());
            delimiter = ", ";
        }
        sb.append('\n');
    }

    private static void clockData(StringBuilder sb, Feature f) {
        if (!(f instanceof Feature.ClockData c) || c.version() != 1) {
            sb.append("# reference time disabled\n");
            return;
        }
        long todSec = Long.divideUnsigned(c.todNs(), 1_000_000_000L);
        long todUsec = Long.remainderUnsigned(c.todNs(), 1_000_000_000L) / 1000;
        long clkSec = Long.divideUnsigned(c.clockidNs(), 1_000_000_000L);
        long clkNsec = Long.remainderUnsigned(c.clockidNs(), 1_000_000_000L);
        ZonedDateTime t = Instant.ofEpochSecond(todSec).atZone(ZoneId.systemDefault());
        String date = String.format(Locale.ROOT, "%04d-%02d-%02d %02d:%02d:%02d.%06d", t.getYear(),
                t.getMonthValue(), t.getDayOfMonth(), t.getHour(), t.getMinute(), t.getSecond(), todUsec);
        String clock = clockName(c.clockid());
        sb.append("# clockid: ").append(clock).append(" (").append(Integer.toUnsignedString(c.clockid())).append(")\n");
        sb.append(String.format(Locale.ROOT, "# reference time: %s = %d.%06d (TOD) = %d.%09d (%s)\n", date, todSec,
                todUsec, clkSec, clkNsec, clock));
    }

    /** perf's clockid_name: the first name its table has for the clock. */
    private static String clockName(int clockid) {
        return switch (clockid) {
            case 0 -> "realtime";
            case 1 -> "monotonic";
            case 4 -> "monotonic_raw";
            case 7 -> "boottime";
            case 11 -> "tai";
            default -> "(not found)";
        };
    }
}

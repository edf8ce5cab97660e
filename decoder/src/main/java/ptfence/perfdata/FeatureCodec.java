package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import ptfence.perfdata.Feature.AuxtraceIndex;
import ptfence.perfdata.Feature.AuxtraceIndexEntry;
import ptfence.perfdata.Feature.BpfBtf;
import ptfence.perfdata.Feature.BpfBtfs;
import ptfence.perfdata.Feature.BpfProgInfo;
import ptfence.perfdata.Feature.BpfProgInfos;
import ptfence.perfdata.Feature.BuildIdEntry;
import ptfence.perfdata.Feature.BuildIds;
import ptfence.perfdata.Feature.ClockId;
import ptfence.perfdata.Feature.Cmdline;
import ptfence.perfdata.Feature.EventDesc;
import ptfence.perfdata.Feature.EventDescEntry;
import ptfence.perfdata.Feature.NrCpus;
import ptfence.perfdata.Feature.PmuMapping;
import ptfence.perfdata.Feature.PmuMappings;
import ptfence.perfdata.Feature.Raw;
import ptfence.perfdata.Feature.SampleTime;
import ptfence.perfdata.Feature.Text;
import ptfence.perfdata.Feature.TotalMem;

/** Parser and encoder for feature sections, in the layout of perf's header.c (write_* / process_*). */
final class FeatureCodec {
    /** perf rejects a bpf_prog_info longer than its own struct; 6.1 reads up to this many bytes. */
    static final int BPF_PROG_INFO_MAX = 4096;

    private FeatureCodec() {}

    /** Parses one section; {@code section} spans exactly the section, in the file's byte order. */
    static Feature parse(int id, ByteBuffer section) {
        Cursor c = new Cursor(section);
        switch (id) {
            case Feature.HOSTNAME, Feature.OSRELEASE, Feature.VERSION, Feature.ARCH, Feature.CPUDESC, Feature.CPUID:
                return new Text(id, c.perfString("string feature " + id));
            case Feature.NRCPUS:
                return new NrCpus(c.u32(), c.u32());
            case Feature.TOTAL_MEM:
                return new TotalMem(c.u64());
            case Feature.CMDLINE: {
                int n = c.count(Integer.toUnsignedLong(c.u32()), 4, "cmdline");
                List<String> args = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    args.add(c.perfString("cmdline arg"));
                }
                return new Cmdline(args);
            }
            case Feature.EVENT_DESC:
                return parseEventDesc(c);
            case Feature.BUILD_ID:
                return parseBuildIds(c);
            case Feature.PMU_MAPPINGS: {
                int n = c.count(Integer.toUnsignedLong(c.u32()), 8, "pmu mappings");
                List<PmuMapping> pmus = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    int type = c.u32();
                    pmus.add(new PmuMapping(type, c.perfString("pmu name")));
                }
                return new PmuMappings(pmus);
            }
            case Feature.AUXTRACE: {
                int n = c.count(c.u64(), 16, "auxtrace index");
                List<AuxtraceIndexEntry> entries = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    entries.add(new AuxtraceIndexEntry(c.u64(), c.u64()));
                }
                return new AuxtraceIndex(entries);
            }
            case Feature.CACHE: {
                int version = c.u32();
                int n = c.count(Integer.toUnsignedLong(c.u32()), 28, "caches");
                List<Feature.CacheLevel> caches = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    int level = c.u32();
                    int line = c.u32();
                    int sets = c.u32();
                    int ways = c.u32();
                    String type = c.perfString("cache type");
                    String size = c.perfString("cache size");
                    caches.add(new Feature.CacheLevel(level, line, sets, ways, type, size, c.perfString("cache map")));
                }
                return new Feature.Caches(version, caches);
            }
            case Feature.NUMA_TOPOLOGY: {
                int n = c.count(Integer.toUnsignedLong(c.u32()), 24, "numa nodes");
                List<Feature.NumaNode> nodes = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    int node = c.u32();
                    long total = c.u64();
                    long free = c.u64();
                    nodes.add(new Feature.NumaNode(node, total, free, c.perfString("numa cpus")));
                }
                return new Feature.NumaTopology(nodes);
            }
            case Feature.SAMPLE_TIME:
                return new SampleTime(c.u64(), c.u64());
            case Feature.CLOCKID:
                return new ClockId(c.u64());
            case Feature.BPF_PROG_INFO: {
                int n = c.count(Integer.toUnsignedLong(c.u32()), 16, "bpf_prog_info");
                List<BpfProgInfo> progs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    long infoLen = Integer.toUnsignedLong(c.u32());
                    long dataLen = Integer.toUnsignedLong(c.u32());
                    if (infoLen > BPF_PROG_INFO_MAX) {
                        throw new BadPerfData("bpf_prog_info length " + infoLen + " at +" + (c.position() - 8));
                    }
                    long arrays = c.u64();
                    ByteBuffer info = c.bytes(infoLen, "bpf_prog_info");
                    ByteBuffer data = c.bytes(dataLen, "bpf_prog_info data");
                    progs.add(new BpfProgInfo(arrays, info, data));
                }
                return new BpfProgInfos(progs);
            }
            case Feature.BPF_BTF: {
                int n = c.count(Integer.toUnsignedLong(c.u32()), 8, "bpf btf");
                List<BpfBtf> btfs = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    int btfId = c.u32();
                    long size = Integer.toUnsignedLong(c.u32());
                    btfs.add(new BpfBtf(btfId, c.bytes(size, "btf data")));
                }
                return new BpfBtfs(btfs);
            }
            case Feature.CPU_TOPOLOGY, Feature.GROUP_DESC, Feature.MEM_TOPOLOGY, Feature.CLOCK_DATA,
                    Feature.COMPRESSED, Feature.CPU_PMU_CAPS, Feature.PMU_CAPS, Feature.HYBRID_TOPOLOGY: {
                // Described for the header's lines only: a section that does not read as perf writes it stays
                // bytes (perf too goes on without it), the recording still decodes.
                int start = c.position();
                try {
                    return parseDescriptive(id, c);
                } catch (BadPerfData e) {
                    return new Raw(id, section.duplicate().position(start).slice().order(section.order()));
                }
            }
            case Feature.PTFENCE_TEXT:
                if (c.remaining() < TEXT_MAGIC.length + 8 || !hasMagic(section)) {
                    return new Raw(id, c.bytes(c.remaining(), "feature")); // another tool's use of the bit
                }
                return parseTextRegions(c);
            default:
                return new Raw(id, c.bytes(c.remaining(), "feature"));
        }
    }

    private static Feature parseDescriptive(int id, Cursor c) {
        switch (id) {
            case Feature.CPU_TOPOLOGY: {
                List<String> packages = strings(c, "package cpus");
                List<String> cores = strings(c, "core cpus");
                return new Feature.CpuTopology(packages, cores, c.bytes(c.remaining(), "cpu ids"));
            }
            case Feature.GROUP_DESC: {
                int n = c.count(Integer.toUnsignedLong(c.u32()), 12, "groups");
                List<Feature.Group> groups = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    String name = c.perfString("group name");
                    groups.add(new Feature.Group(name, c.u32(), c.u32()));
                }
                return new Feature.GroupDesc(groups);
            }
            case Feature.MEM_TOPOLOGY: {
                long version = c.u64();
                long bsize = c.u64();
                int n = c.count(c.u64(), 24, "memory nodes");
                List<Feature.MemoryNode> nodes = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    long node = c.u64();
                    long size = c.u64();
                    long bits = c.u64();
                    int words = c.count((bits + 63) >>> 6, 8, "memory bitmap");
                    if (bits < 0) {
                        throw new BadPerfData("memory bitmap of " + Long.toUnsignedString(bits) + " bits");
                    }
                    List<Long> w = new ArrayList<>(words);
                    for (int k = 0; k < words; k++) {
                        w.add(c.u64());
                    }
                    nodes.add(new Feature.MemoryNode(node, size, bits, w));
                }
                return new Feature.MemTopology(version, bsize, nodes);
            }
            case Feature.CLOCK_DATA:
                return new Feature.ClockData(c.u32(), c.u32(), c.u64(), c.u64());
            case Feature.COMPRESSED:
                return new Feature.Compressed(c.u32(), c.u32(), c.u32(), c.u32(), c.u32());
            case Feature.CPU_PMU_CAPS:
                return new Feature.PmuCapsList(id, List.of(pmuCaps(c, false)));
            case Feature.PMU_CAPS: {
                int n = c.count(Integer.toUnsignedLong(c.u32()), 8, "pmus with caps");
                List<Feature.PmuCaps> pmus = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    pmus.add(pmuCaps(c, true));
                }
                return new Feature.PmuCapsList(id, pmus);
            }
            default: { // HYBRID_TOPOLOGY
                int n = c.count(Integer.toUnsignedLong(c.u32()), 8, "hybrid nodes");
                List<Feature.HybridNode> nodes = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    String pmu = c.perfString("hybrid pmu");
                    nodes.add(new Feature.HybridNode(pmu, c.perfString("hybrid cpus")));
                }
                return new Feature.HybridTopology(nodes);
            }
        }
    }

    private static List<String> strings(Cursor c, String what) {
        int n = c.count(Integer.toUnsignedLong(c.u32()), 4, what);
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(c.perfString(what));
        }
        return out;
    }

    private static Feature.PmuCaps pmuCaps(Cursor c, boolean named) {
        int n = c.count(Integer.toUnsignedLong(c.u32()), 8, "pmu caps");
        List<Feature.PmuCap> caps = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String name = c.perfString("cap name");
            caps.add(new Feature.PmuCap(name, c.perfString("cap value")));
        }
        return new Feature.PmuCaps(caps, named ? c.perfString("pmu name") : null);
    }

    /** Magic and version leading {@link Feature#PTFENCE_TEXT}: a section another tool put there is left raw. */
    private static final byte[] TEXT_MAGIC = "PTFTEXT\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final int TEXT_VERSION = 1;

    private static boolean hasMagic(ByteBuffer section) {
        for (int i = 0; i < TEXT_MAGIC.length; i++) {
            if (section.get(section.position() + i) != TEXT_MAGIC[i]) {
                return false;
            }
        }
        return section.duplicate().order(ByteOrder.LITTLE_ENDIAN).getInt(section.position() + TEXT_MAGIC.length)
                == TEXT_VERSION;
    }

    private static Feature.TextRegions parseTextRegions(Cursor c) {
        c.skip(TEXT_MAGIC.length + 4);
        int n = c.count(Integer.toUnsignedLong(c.u32()), 72, "text regions");
        long start = c.u64();
        long end = c.u64();
        String recording = shortString(c, "recording id");
        String boot = shortString(c, "boot id");
        c.skip(padding(c.position()));
        List<Feature.TextRegion> regions = new ArrayList<>(n);
        java.util.HexFormat hex = java.util.HexFormat.of();
        for (int i = 0; i < n; i++) {
            long address = c.u64();
            long length = c.u64();
            long from = c.u64();
            long to = c.u64();
            ByteBuffer key = c.bytes(32, "content key");
            byte[] k = new byte[32];
            key.get(k);
            String kind = shortString(c, "region kind");
            String name = shortString(c, "region name");
            c.skip(padding(c.position()));
            regions.add(new Feature.TextRegion(address, length, from, to, kind, name, hex.formatHex(k)));
        }
        return new Feature.TextRegions(recording, boot, start, end, regions);
    }

    private static String shortString(Cursor c, String what) {
        return c.cstring(c.u16(), what);
    }

    private static int padding(int position) {
        return (8 - position % 8) % 8;
    }

    private static void encodeTextRegions(Out o, Feature.TextRegions t) {
        o.bytes(TEXT_MAGIC).u32(TEXT_VERSION).u32(t.regions().size()).u64(t.start()).u64(t.end());
        shortString(o, t.recordingId());
        shortString(o, t.bootId());
        o.pad(8);
        java.util.HexFormat hex = java.util.HexFormat.of();
        for (Feature.TextRegion r : t.regions()) {
            o.u64(r.address()).u64(r.length()).u64(r.validFrom()).u64(r.validTo()).bytes(hex.parseHex(r.key()));
            shortString(o, r.kind());
            shortString(o, r.name());
            o.pad(8);
        }
    }

    private static void shortString(Out o, String s) {
        byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (b.length > 0xffff) {
            throw new IllegalArgumentException("string of " + b.length + " bytes in a text region");
        }
        o.u16(b.length).bytes(b);
    }

    private static EventDesc parseEventDesc(Cursor c) {
        int n = c.count(Integer.toUnsignedLong(c.u32()), 8, "event_desc");
        long attrSize = Integer.toUnsignedLong(c.u32());
        if (attrSize < EventAttr.SIZE_VER0 || attrSize > EventAttr.SIZE_MAX) {
            throw new BadPerfData("event_desc attr size " + attrSize);
        }
        List<EventDescEntry> events = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            EventAttr attr = RecordParser.attr(c.bytes(attrSize, "event_desc attr"));
            int nrIds = c.count(Integer.toUnsignedLong(c.u32()), 8, "event_desc ids");
            String name = c.perfString("event name");
            List<Long> ids = new ArrayList<>(nrIds);
            for (int k = 0; k < nrIds; k++) {
                ids.add(c.u64());
            }
            events.add(new EventDescEntry(attr, name, ids));
        }
        return new EventDesc(events);
    }

    private static BuildIds parseBuildIds(Cursor c) {
        List<BuildIdEntry> entries = new ArrayList<>();
        while (c.remaining() >= 8) {
            int start = c.position();
            c.u32(); // header.type: unused by perf
            int misc = c.u16();
            int size = c.u16();
            if (size < 36 || size - 8 > c.remaining()) {
                throw new BadPerfData("build id entry size " + size + " at +" + start);
            }
            int pid = c.u32();
            ByteBuffer id = c.bytes(24, "build id");
            String name = c.cstring(size - 36, "build id filename");
            entries.add(new BuildIdEntry(misc, pid, id, name));
        }
        return new BuildIds(entries);
    }

    /** Encodes a feature in perf's layout (little-endian). */
    static ByteBuffer encode(Feature f) {
        Out o = new Out();
        if (f instanceof Text t) {
            o.perfString(t.value());
        } else if (f instanceof NrCpus n) {
            o.u32(n.available()).u32(n.online());
        } else if (f instanceof TotalMem m) {
            o.u64(m.kib());
        } else if (f instanceof Cmdline cl) {
            o.u32(cl.args().size());
            cl.args().forEach(o::perfString);
        } else if (f instanceof EventDesc ed) {
            int attrSize = EventAttr.SIZE_VER0;
            for (EventDescEntry e : ed.events()) {
                attrSize = Math.max(attrSize, e.attr().length());
            }
            o.u32(ed.events().size()).u32(attrSize);
            for (EventDescEntry e : ed.events()) {
                o.bytes(e.attr().raw()).zeros(attrSize - e.attr().length());
                o.u32(e.ids().size()).perfString(e.name());
                e.ids().forEach(o::u64);
            }
        } else if (f instanceof BuildIds b) {
            for (BuildIdEntry e : b.entries()) {
                int start = o.length();
                o.u32(0).u16(e.misc()).u16(0).u32(e.pid());
                fixed(o, e.buildId(), 24);
                o.paddedString(e.filename(), 64);
                o.u16At(start + 6, o.length() - start);
            }
        } else if (f instanceof PmuMappings p) {
            o.u32(p.pmus().size());
            for (PmuMapping m : p.pmus()) {
                o.u32(m.type()).perfString(m.name());
            }
        } else if (f instanceof AuxtraceIndex a) {
            o.u64(a.entries().size());
            for (AuxtraceIndexEntry e : a.entries()) {
                o.u64(e.fileOffset()).u64(e.size());
            }
        } else if (f instanceof Feature.Caches ca) {
            o.u32(ca.version()).u32(ca.caches().size());
            for (Feature.CacheLevel l : ca.caches()) {
                o.u32(l.level()).u32(l.lineSize()).u32(l.sets()).u32(l.ways()).perfString(l.type()).perfString(l.size())
                        .perfString(l.cpus());
            }
        } else if (f instanceof Feature.NumaTopology nt) {
            o.u32(nt.nodes().size());
            for (Feature.NumaNode n : nt.nodes()) {
                o.u32(n.node()).u64(n.memTotalKib()).u64(n.memFreeKib()).perfString(n.cpus());
            }
        } else if (f instanceof SampleTime s) {
            o.u64(s.start()).u64(s.end());
        } else if (f instanceof ClockId c) {
            o.u64(c.resolutionNs());
        } else if (f instanceof BpfProgInfos p) {
            o.u32(p.programs().size());
            for (BpfProgInfo b : p.programs()) {
                o.u32(b.info().remaining()).u32(b.data().remaining()).u64(b.arrays());
                o.bytes(b.info()).bytes(b.data());
            }
        } else if (f instanceof BpfBtfs b) {
            o.u32(b.btfs().size());
            for (BpfBtf e : b.btfs()) {
                o.u32(e.btfId()).u32(e.data().remaining()).bytes(e.data());
            }
        } else if (f instanceof Feature.CpuTopology t) {
            o.u32(t.packageCpus().size());
            t.packageCpus().forEach(o::perfString);
            o.u32(t.coreCpus().size());
            t.coreCpus().forEach(o::perfString);
            o.bytes(t.rest());
        } else if (f instanceof Feature.GroupDesc g) {
            o.u32(g.groups().size());
            for (Feature.Group e : g.groups()) {
                o.perfString(e.name()).u32(e.leaderIdx()).u32(e.members());
            }
        } else if (f instanceof Feature.MemTopology m) {
            o.u64(m.version()).u64(m.blockSize()).u64(m.nodes().size());
            for (Feature.MemoryNode n : m.nodes()) {
                o.u64(n.node()).u64(n.size()).u64(n.bits());
                n.words().forEach(o::u64);
            }
        } else if (f instanceof Feature.ClockData cd) {
            o.u32(cd.version()).u32(cd.clockid()).u64(cd.todNs()).u64(cd.clockidNs());
        } else if (f instanceof Feature.Compressed z) {
            o.u32(z.version()).u32(z.type()).u32(z.level()).u32(z.ratio()).u32(z.mmapLength());
        } else if (f instanceof Feature.PmuCapsList p) {
            if (p.id() == Feature.PMU_CAPS) {
                o.u32(p.pmus().size());
            }
            for (Feature.PmuCaps caps : p.pmus()) {
                o.u32(caps.caps().size());
                for (Feature.PmuCap cap : caps.caps()) {
                    o.perfString(cap.name()).perfString(cap.value());
                }
                if (caps.pmu() != null) {
                    o.perfString(caps.pmu());
                }
            }
        } else if (f instanceof Feature.HybridTopology h) {
            o.u32(h.nodes().size());
            for (Feature.HybridNode n : h.nodes()) {
                o.perfString(n.pmu()).perfString(n.cpus());
            }
        } else if (f instanceof Feature.TextRegions t) {
            encodeTextRegions(o, t);
        } else if (f instanceof Raw r) {
            o.bytes(r.data());
        }
        return o.toBuffer();
    }

    private static void fixed(Out o, ByteBuffer b, int n) {
        ByteBuffer d = b.duplicate();
        if (d.remaining() > n) {
            d.limit(d.position() + n);
        }
        int k = d.remaining();
        o.bytes(d).zeros(n - k);
    }

    static ByteBuffer le(ByteBuffer b) {
        return b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }
}

package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import ptfence.perfdata.PerfRecord.*;

/** Example records of every type and example features, for round trips through the writer and reader. */
final class Samples {
    static final long SID_LAYOUT = SampleType.TID | SampleType.TIME | SampleType.CPU | SampleType.IDENTIFIER;
    static final long PT_SAMPLE_TYPE = SampleType.IP | SID_LAYOUT;
    static final int INTEL_PT_TYPE = 8;

    private Samples() {}

    static ByteBuffer bytes(int... b) {
        ByteBuffer out = ByteBuffer.allocate(b.length);
        for (int x : b) {
            out.put((byte) x);
        }
        return out.flip();
    }

    static ByteBuffer bytes(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    static ByteBuffer longs(long... v) {
        ByteBuffer b = ByteBuffer.allocate(8 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long x : v) {
            b.putLong(x);
        }
        return b.flip();
    }

    static EventAttr ptAttr() {
        return EventAttr.builder().type(INTEL_PT_TYPE).config(0x300e601).samplePeriod(1).sampleType(PT_SAMPLE_TYPE)
                .readFormat(4).flags(EventAttr.FLAG_DISABLED | EventAttr.FLAG_INHERIT | EventAttr.FLAG_EXCLUDE_KERNEL
                        | EventAttr.FLAG_EXCLUDE_HV | EventAttr.FLAG_ENABLE_ON_EXEC | EventAttr.FLAG_SAMPLE_ID_ALL)
                .build();
    }

    static EventAttr sidebandAttr(long sampleType) {
        return EventAttr.builder().type(1).config(9).samplePeriod(1).sampleType(sampleType).readFormat(4)
                .flags(EventAttr.FLAG_INHERIT | EventAttr.FLAG_EXCLUDE_KERNEL | EventAttr.FLAG_EXCLUDE_HV
                        | EventAttr.FLAG_MMAP | EventAttr.FLAG_COMM | EventAttr.FLAG_TASK | EventAttr.FLAG_MMAP2
                        | EventAttr.FLAG_COMM_EXEC | EventAttr.FLAG_CONTEXT_SWITCH | EventAttr.FLAG_KSYMBOL
                        | EventAttr.FLAG_BPF_EVENT | EventAttr.FLAG_TEXT_POKE | EventAttr.FLAG_SAMPLE_ID_ALL)
                .build();
    }

    static SampleId sid(long layout, int cpu, long time, long identifier) {
        return new SampleId(layout, 1000 + cpu, 1000 + cpu, time, 0, 0, cpu, 0, identifier);
    }

    static IntelPtInfo ptInfo(String filter) {
        return new IntelPtInfo(INTEL_PT_TYPE, 31, 672770566, 0xfffffffd108e9db0L, true, 0x400, 0x800, 3, false, true,
                0x200, 0x3c000, 266, 2, 0x2, 32, filter, 0);
    }

    /** A trace-looking AUX payload: PSB, PSBEND, then a few PADs. */
    static ByteBuffer ptBytes(int n) {
        ByteBuffer b = ByteBuffer.allocate(n);
        for (int i = 0; i < 8 && b.remaining() >= 2; i++) {
            b.put((byte) 0x02).put((byte) 0x82);
        }
        if (b.remaining() >= 2) {
            b.put((byte) 0x02).put((byte) 0x23);
        }
        while (b.hasRemaining()) {
            b.put((byte) 0);
        }
        return b.flip();
    }

    /** One record of every type perf report -D knows (plus one unknown), trailers per {@code layout}. */
    static List<PerfRecord> everyType(long layout, long identifier) {
        List<PerfRecord> r = new ArrayList<>();
        SampleId s = sid(layout, 2, 969350059467795L, identifier);
        r.add(TimeConv.of(31, 672770566, 0xfffffffd108e9db0L, 123, -1, true, true));
        r.add(ptInfo("filter 0x400000/0x1000@/bin/ls").toRecord());
        r.add(new Mmap(0x2, 1, 1, 0x400000, 0x1000, 0, "/bin/ls", s));
        r.add(new Lost(0, identifier, 17, s));
        r.add(new Comm(PerfRecord.MISC_COMM_EXEC, 19233, 19233, "loopy", s));
        r.add(new Exit(0, 19233, 19230, 19233, 19230, 969350059467000L, s));
        r.add(new Fork(0, 19234, 19233, 19234, 19233, 969350059467001L, s));
        r.add(new Throttle(0, 969350059467002L, identifier, 0, s));
        r.add(new Unthrottle(0, 969350059467003L, identifier, 0, s));
        r.add(new Read(0, 19233, 19233, longs(42, identifier), s));
        r.add(new Mmap2(0x2, 19233, 19233, 0x400000, 0x2000, 0, 8, 1, 1234567, 1, 5, 2, "/home/x/loopy", s));
        ByteBuffer bid = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
        bid.put((byte) 20).put((byte) 0).putShort((short) 0);
        for (int i = 0; i < 20; i++) {
            bid.put((byte) (0xa0 + i));
        }
        bid.flip();
        r.add(new Mmap2(0x2 | PerfRecord.MISC_MMAP_BUILD_ID, 19233, 19233, 0x7f0000000000L, 0x1000, 0, bid.getInt(0),
                bid.getInt(4), bid.getLong(8), bid.getLong(16), 5, 2, "/lib/libc.so.6", s));
        r.add(new Aux(0, 0, 0x570, PerfRecord.Aux.FLAG_TRUNCATED | PerfRecord.Aux.FLAG_PARTIAL, s));
        r.add(new Aux(0, 0x570, 0x10, PerfRecord.Aux.FLAG_COLLISION, s));
        r.add(new ItraceStart(0, 19233, 19233, s));
        r.add(new LostSamples(0, 3, s));
        r.add(new Switch(PerfRecord.MISC_SWITCH_OUT, s));
        r.add(new SwitchCpuWide(PerfRecord.MISC_SWITCH_OUT | PerfRecord.MISC_SWITCH_OUT_PREEMPT, 0, 0, s));
        r.add(new Namespaces(0, 19233, 19233, List.of(new Namespace(4, 0xf0000001L), new Namespace(4, 0xf0000002L)), s));
        r.add(new Ksymbol(0, 0xffffffffc0001000L, 0x5c, PerfRecord.Ksymbol.TYPE_BPF, 0,
                "bpf_prog_6deef7357e7b4530_sd_fw_egress", s));
        r.add(new BpfEvent(0, PerfRecord.BpfEvent.PROG_LOAD, 0, 42, bytes(0x6d, 0xee, 0xf7, 0x35, 0x7e, 0x7b, 0x45, 0x30), s));
        r.add(new Cgroup(0, 77, "/system.slice/ssh.service", s));
        r.add(new Mmap(0, -1, 0, 0xffffffff81000000L, 0x1000000, 0xffffffff81000000L, "[kernel.kallsyms]_text",
                s));
        r.add(new TextPoke(0, 0xffffffff81000000L, bytes(0x0f, 0x1f, 0x44, 0x00, 0x00), bytes(0xe9, 1, 2, 3, 4), s));
        r.add(new AuxOutputHwId(0, 5, s));
        r.add(new HeaderEventType(0, 99, "cycles"));
        r.add(new HeaderTracingData(0, bytes("tracing data of 21 b.")));
        r.add(new HeaderBuildId(0x8001, 19233, bid.duplicate(), "/home/x/loopy"));
        r.add(new FinishedRound(0));
        r.add(new IdIndex(0, List.of(new IdIndexEntry(153, 0, 0, -1), new IdIndexEntry(154, 1, 1, -1))));
        r.add(new Auxtrace(0, 0x570, 0, 0xafe29e3ab9540L, 2, 19233, 2, 0, ptBytes(0x570)));
        r.add(new AuxtraceError(0, 1, 6, 2, 19233, 19233, 1, 0x400123, "Failed to get instruction", longs(9876)));
        r.add(new ThreadMap(0, List.of(new ThreadMapEntry(19233, "loopy"), new ThreadMapEntry(19234, "worker"))));
        r.add(new CpuMap(0, longs(0x0000000400000000L, 0x0000000100000000L)));
        r.add(new StatConfig(0, longs(1, 0, 2, 1)));
        r.add(new Stat(0, 153, 1, 0, 100, 200, 300));
        r.add(new StatRound(0, 1, 123456));
        r.add(new EventUpdate(0, 1, 153, bytes("cpu/cycles/\0\0\0\0\0")));
        r.add(new HeaderFeature(0, new Feature.Text(Feature.HOSTNAME, "eddie")));
        r.add(new HeaderFeature(0, new Feature.NrCpus(4, 4)));
        r.add(new Compressed(0, bytes(0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0)));
        r.add(new FinishedInit(0));
        r.add(new Sample(1, layout | SampleType.IP, identifier, 0x400123, 19233, 19233, 969350059467800L, 0, 0, 0,
                2, 0, 0, ByteBuffer.allocate(0)));
        r.add(new Unknown(99, 0, longs(1, 2, 3)));
        return r;
    }

    /** Example features of every modelled kind. */
    static Map<Integer, Feature> features(EventAttr... attrs) {
        Map<Integer, Feature> f = new LinkedHashMap<>();
        ByteBuffer bid = ByteBuffer.allocate(24);
        for (int i = 0; i < 20; i++) {
            bid.put((byte) i);
        }
        bid.put((byte) 20).flip().limit(24);
        f.put(Feature.BUILD_ID, new Feature.BuildIds(List.of(
                // misc: MISC_BUILD_ID_SIZE | cpumode (2 user, 1 kernel)
                new Feature.BuildIdEntry(0x8002, -1, bid, "/home/x/loopy"),
                new Feature.BuildIdEntry(0x8001, -1, bid.duplicate(), "[kernel.kallsyms]"))));
        f.put(Feature.HOSTNAME, new Feature.Text(Feature.HOSTNAME, "eddie"));
        f.put(Feature.OSRELEASE, new Feature.Text(Feature.OSRELEASE, "6.1.0-ptfence"));
        f.put(Feature.VERSION, new Feature.Text(Feature.VERSION, "6.1.76"));
        f.put(Feature.ARCH, new Feature.Text(Feature.ARCH, "x86_64"));
        f.put(Feature.NRCPUS, new Feature.NrCpus(4, 4));
        f.put(Feature.CPUDESC, new Feature.Text(Feature.CPUDESC, "Intel(R) Core(TM) i5-6500 CPU @ 3.20GHz"));
        f.put(Feature.CPUID, new Feature.Text(Feature.CPUID, "GenuineIntel,6,94,3"));
        f.put(Feature.TOTAL_MEM, new Feature.TotalMem(16183444));
        f.put(Feature.CMDLINE, new Feature.Cmdline(List.of("ptrec", "-o", "x.perf", "--", "loopy", "a b")));
        List<Feature.EventDescEntry> ev = new ArrayList<>();
        String[] names = {"intel_pt//u", "dummy:u", "dummy:k"};
        for (int i = 0; i < attrs.length; i++) {
            ev.add(new Feature.EventDescEntry(attrs[i], names[i % names.length], List.of(1L + 2 * i, 2L + 2 * i)));
        }
        f.put(Feature.EVENT_DESC, new Feature.EventDesc(ev));
        f.put(Feature.PMU_MAPPINGS, new Feature.PmuMappings(List.of(new Feature.PmuMapping(INTEL_PT_TYPE, "intel_pt"),
                new Feature.PmuMapping(1, "software"))));
        f.put(Feature.SAMPLE_TIME, new Feature.SampleTime(100, 200));
        f.put(Feature.CACHE, new Feature.Caches(1, List.of(new Feature.CacheLevel(1, 64, 64, 8, "Data", "32K", "0-1"),
                new Feature.CacheLevel(3, 64, 8192, 16, "Unified", "6144K", "0-3"))));
        f.put(Feature.NUMA_TOPOLOGY, new Feature.NumaTopology(List.of(new Feature.NumaNode(0, 16183444, 5189036, "0-3"))));
        f.put(Feature.CLOCKID, new Feature.ClockId(1));
        f.put(Feature.BPF_PROG_INFO, new Feature.BpfProgInfos(List.of(bpfProg(42, "sd_fw_egress",
                new byte[] {0x0f, 0x1f, 0x44, 0, 0, 0x55, 0x48, (byte) 0x89, (byte) 0xe5, (byte) 0xc9, (byte) 0xc3},
                0xffffffffc0001000L))));
        f.put(Feature.BPF_BTF, new Feature.BpfBtfs(List.of(new Feature.BpfBtf(7, bytes(0x9f, 0xeb, 1, 0, 24, 0, 0, 0)))));
        f.put(Feature.PTFENCE_TEXT, textRegions());
        return f;
    }

    /** ptfence's list of text regions: names of odd lengths (padding), an open region, a long name. */
    static Feature.TextRegions textRegions() {
        return new Feature.TextRegions("0b9f8c3e-6c1e-4d0a-9d43-1b2f1a7c9e11", "5f0e4b7a-boot", 1_000_000, Long.MAX_VALUE,
                List.of(new Feature.TextRegion(0xffffffffc0001000L, 92, 1_000_100, 1_009_000, "BPF_PROG",
                                "bpf_prog_6deef7357e7b4530_sd_fw_egress", "ab".repeat(32)),
                        new Feature.TextRegion(0xffffffffc0002000L, 7, 1_000_200, Long.MAX_VALUE, "BPF_SUBPROG",
                                "f", "0123456789abcdef".repeat(4)),
                        new Feature.TextRegion(0xffffffff81000000L, 4096, 0, Long.MAX_VALUE, "TEXT_POKE",
                                "x".repeat(300), "fe".repeat(32))));
    }

    /**
     * A perf_bpil as perf 6.1 writes it: a 224-byte bpf_prog_info whose jited insns, ksyms and func lens
     * pointers are offsets into data.
     */
    static Feature.BpfProgInfo bpfProg(int id, String name, byte[] code, long addr) {
        ByteBuffer info = ByteBuffer.allocate(224).order(ByteOrder.LITTLE_ENDIAN);
        info.putInt(0, 2).putInt(4, id);
        byte[] tag = {1, 2, 3, 4, 5, 6, 7, 8};
        info.put(8, tag);
        info.putInt(16, code.length);
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        info.put(64, n, 0, Math.min(15, n.length));
        info.putInt(104, 1).putInt(108, 1).putInt(180, 1);
        return Feature.BpfProgInfo.linear(info, Map.of(
                Feature.BpfProgInfo.ARRAY_JITED_INSNS, ByteBuffer.wrap(code),
                Feature.BpfProgInfo.ARRAY_JITED_KSYMS, longs(addr),
                Feature.BpfProgInfo.ARRAY_JITED_FUNC_LENS,
                ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, code.length),
                Feature.BpfProgInfo.ARRAY_PROG_TAGS, ByteBuffer.wrap(tag)));
    }
}

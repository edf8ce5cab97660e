package ptfence.bpf;

import ptfence.perfdata.Feature;
import ptfence.sys.Bpf;
import ptfence.sys.BpfException;
import ptfence.sys.BpfFd;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Everything bpf() tells about one program: its {@link ProgInfo} and the raw bytes of its BTF (what perf stores in
 * HEADER_BPF_BTF), plus the kallsyms name of each JITed function derived from them.
 */
public record ProgramMetadata(ProgInfo info, byte[] btf) {
    private static final int BTF_INFO_SIZE = 32, BTF_PTR = 0, BTF_SIZE = 8;

    /** Fetches info and BTF while {@code prog} holds the program alive. */
    public static ProgramMetadata fetch(BpfFd prog) throws BpfException {
        ProgInfo info = ProgInfo.fetch(prog);
        byte[] btf = new byte[0];
        if (info.btfId() != 0) {
            try (BpfFd b = Bpf.get().btfGetFdById(info.btfId())) {
                if (b != null) btf = btfBytes(b);
            }
        }
        return new ProgramMetadata(info, btf);
    }

    private static byte[] btfBytes(BpfFd btfFd) throws BpfException {
        byte[] first = new byte[BTF_INFO_SIZE];
        Bpf.get().objGetInfo(btfFd, first, List.of());
        int size = ByteBuffer.wrap(first).order(ByteOrder.LITTLE_ENDIAN).getInt(BTF_SIZE);
        byte[] second = new byte[BTF_INFO_SIZE], data = new byte[size];
        ByteBuffer.wrap(second).order(ByteOrder.LITTLE_ENDIAN).putInt(BTF_SIZE, size);
        Bpf.get().objGetInfo(btfFd, second, List.of(new Bpf.InfoArray(BTF_PTR, data)));
        return data;
    }

    /** perf's BPIL array indexes (tools/perf/util/bpf-utils.h) with the bpf_prog_info fields of each array. */
    private static final int[][] PERF_ARRAYS = {
            // index, pointer offset, count offset, element size (> 0) or offset of its rec_size field (< 0)
            {Feature.BpfProgInfo.ARRAY_JITED_INSNS, 24, 16, 1},
            {Feature.BpfProgInfo.ARRAY_XLATED_INSNS, 32, 20, 1},
            {Feature.BpfProgInfo.ARRAY_MAP_IDS, 56, 52, 4},
            {Feature.BpfProgInfo.ARRAY_JITED_KSYMS, 112, 104, 8},
            {Feature.BpfProgInfo.ARRAY_JITED_FUNC_LENS, 120, 108, 4},
            {Feature.BpfProgInfo.ARRAY_FUNC_INFO, 136, 144, -132},
            {Feature.BpfProgInfo.ARRAY_LINE_INFO, 152, 148, -172},
            {Feature.BpfProgInfo.ARRAY_JITED_LINE_INFO, 160, 168, -176},
            {Feature.BpfProgInfo.ARRAY_PROG_TAGS, 184, 180, 8},
    };

    /** The arrays `perf record` stores (everything but translated instructions and map ids). */
    public static final long PERF_RECORD_ARRAYS = 0x1f9;

    /**
     * This program as one entry of perf's HEADER_BPF_PROG_INFO ({@code struct perf_bpil}): the info struct with
     * each stored array's pointer turned into an offset into the data, arrays 8-aligned in index order — what
     * perf's get_bpf_prog_info_linear + bpil_addr_to_offs produce.
     */
    public Feature.BpfProgInfo toPerfBpil() {
        ByteBuffer in = ByteBuffer.wrap(info.raw().clone()).order(ByteOrder.LITTLE_ENDIAN);
        byte[][] contents = new byte[9][];
        contents[Feature.BpfProgInfo.ARRAY_JITED_INSNS] = info.jitedInsns();
        contents[Feature.BpfProgInfo.ARRAY_XLATED_INSNS] = info.xlatedInsns();
        contents[Feature.BpfProgInfo.ARRAY_MAP_IDS] = le32(info.mapIds());
        contents[Feature.BpfProgInfo.ARRAY_JITED_KSYMS] = le64(info.jitedKsyms());
        contents[Feature.BpfProgInfo.ARRAY_JITED_FUNC_LENS] = le32(info.jitedFuncLens());
        contents[Feature.BpfProgInfo.ARRAY_FUNC_INFO] = info.funcInfo();
        contents[Feature.BpfProgInfo.ARRAY_LINE_INFO] = info.lineInfo();
        contents[Feature.BpfProgInfo.ARRAY_JITED_LINE_INFO] = le64(info.jitedLineInfo());
        ByteBuffer tags = ByteBuffer.allocate(8 * info.progTags().length);
        for (long t : info.progTags()) tags.putLong(t);
        contents[Feature.BpfProgInfo.ARRAY_PROG_TAGS] = tags.array();
        int total = 0;
        for (int[] a : PERF_ARRAYS) {
            if ((PERF_RECORD_ARRAYS & (1L << a[0])) != 0) total += align8(contents[a[0]].length);
        }
        ByteBuffer data = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        for (int[] a : PERF_ARRAYS) {
            if ((PERF_RECORD_ARRAYS & (1L << a[0])) == 0) {
                in.putLong(a[1], 0);
                continue;
            }
            in.putLong(a[1], data.position());
            data.put(contents[a[0]]);
            data.position(align8(data.position()));
        }
        return new Feature.BpfProgInfo(PERF_RECORD_ARRAYS, in.rewind(), data.rewind());
    }

    /** What the archive keeps about the program (region metadata). */
    public ptfence.region.BpfMetadata toArchive() {
        ByteBuffer jl = ByteBuffer.allocate(8 * info.jitedLineInfo().length).order(ByteOrder.LITTLE_ENDIAN);
        for (long a : info.jitedLineInfo()) jl.putLong(a);
        return new ptfence.region.BpfMetadata(info.id(), info.tagHex(), info.name(), info.type(), info.jitedKsyms(),
                info.jitedFuncLens(), info.lineInfo(), info.lineInfoRecSize(), jl.array(),
                info.jitedLineInfo().length == 0 ? 0 : 8, info.funcInfo(), info.funcInfoRecSize(), info.btfId(), btf,
                info.xlatedInsns(), info.loadTimeBoottimeNs(), info.createdByUid());
    }

    /** This program's BTF as one entry of perf's HEADER_BPF_BTF; empty if it has none. */
    public java.util.Optional<Feature.BpfBtf> toPerfBtf() {
        if (btf.length == 0) return java.util.Optional.empty();
        return java.util.Optional.of(new Feature.BpfBtf(info.btfId(), ByteBuffer.wrap(btf.clone())));
    }

    private static int align8(int n) { return (n + 7) & ~7; }

    private static byte[] le32(int[] xs) {
        ByteBuffer b = ByteBuffer.allocate(4 * xs.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int x : xs) b.putInt(x);
        return b.array();
    }

    private static byte[] le64(long[] xs) {
        ByteBuffer b = ByteBuffer.allocate(8 * xs.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long x : xs) b.putLong(x);
        return b.array();
    }

    /**
     * The kallsyms name of each JITed function (kernel/bpf/core.c bpf_prog_ksym_set_name): "bpf_prog_" + tag,
     * then "_" + the BTF name of the function if the program has func_info, else the program name for the main
     * function and "F" for subprograms. The main function carries the program's tag, subprogram i its own.
     */
    public List<String> ksymNames() {
        List<String> names = new ArrayList<>(info.functionCount());
        Btf parsed = btf.length == 0 ? null : Btf.parse(btf, "BTF of prog " + info.id());
        ByteBuffer fi = ByteBuffer.wrap(info.funcInfo()).order(ByteOrder.LITTLE_ENDIAN);
        int rec = info.funcInfoRecSize();
        int nFuncInfo = rec == 0 ? 0 : info.funcInfo().length / rec;
        for (int i = 0; i < Math.max(1, info.functionCount()); i++) {
            long tag = i == 0 || i >= info.progTags().length ? info.tag() : info.progTags()[i];
            String suffix;
            if (parsed != null && i < nFuncInfo) {
                suffix = parsed.type(fi.getInt(i * rec + 4)).name();
            } else {
                suffix = i == 0 ? info.name() : "F";
            }
            names.add("bpf_prog_" + ProgInfo.tagHex(tag) + (suffix.isEmpty() ? "" : "_" + suffix));
        }
        return names;
    }
}

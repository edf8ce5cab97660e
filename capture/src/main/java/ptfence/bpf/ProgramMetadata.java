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
public record ProgramMetadata(ProgInfo info, byte[] btf, Attach attach) {
    private static final int BTF_INFO_SIZE = 32, BTF_PTR = 0, BTF_SIZE = 8;

    /**
     * What bpf_prog_info does not say about a program's attachment, read by the fence in the kernel: the expected
     * attach type (enum bpf_attach_type), the target function's name (fentry/fexit/LSM/tp_btf) and the target
     * program's id (freplace, fentry on a BPF program); 0 and "" where none.
     */
    public record Attach(int expectedAttachType, String functionName, int targetProgId) {
        public static final Attach NONE = new Attach(0, "", 0);
    }

    public ProgramMetadata {
        attach = attach == null ? Attach.NONE : attach;
    }

    public ProgramMetadata(ProgInfo info, byte[] btf) {
        this(info, btf, Attach.NONE);
    }

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

    /** The raw bytes of the BTF object behind {@code btfFd} (BPF_OBJ_GET_INFO_BY_FD, two calls). */
    public static byte[] btfBytes(BpfFd btfFd) throws BpfException {
        byte[] first = new byte[BTF_INFO_SIZE];
        Bpf.get().objGetInfo(btfFd, first, List.of());
        int size = ByteBuffer.wrap(first).order(ByteOrder.LITTLE_ENDIAN).getInt(BTF_SIZE);
        byte[] second = new byte[BTF_INFO_SIZE], data = new byte[size];
        ByteBuffer.wrap(second).order(ByteOrder.LITTLE_ENDIAN).putInt(BTF_SIZE, size);
        Bpf.get().objGetInfo(btfFd, second, List.of(new Bpf.InfoArray(BTF_PTR, data)));
        return data;
    }

    /**
     * This program as one entry of perf's HEADER_BPF_PROG_INFO ({@code struct perf_bpil}): the info struct with
     * each stored array's pointer turned into an offset into the data, arrays 8-aligned in index order — what
     * perf's get_bpf_prog_info_linear + bpil_addr_to_offs produce.
     */
    public Feature.BpfProgInfo toPerfBpil() {
        java.util.Map<Integer, ByteBuffer> arrays = new java.util.HashMap<>();
        arrays.put(Feature.BpfProgInfo.ARRAY_JITED_INSNS, ByteBuffer.wrap(info.jitedInsns()));
        arrays.put(Feature.BpfProgInfo.ARRAY_JITED_KSYMS, ByteBuffer.wrap(le64(info.jitedKsyms())));
        arrays.put(Feature.BpfProgInfo.ARRAY_JITED_FUNC_LENS, ByteBuffer.wrap(le32(info.jitedFuncLens())));
        arrays.put(Feature.BpfProgInfo.ARRAY_FUNC_INFO, ByteBuffer.wrap(info.funcInfo()));
        arrays.put(Feature.BpfProgInfo.ARRAY_LINE_INFO, ByteBuffer.wrap(info.lineInfo()));
        arrays.put(Feature.BpfProgInfo.ARRAY_JITED_LINE_INFO, ByteBuffer.wrap(le64(info.jitedLineInfo())));
        ByteBuffer tags = ByteBuffer.allocate(8 * info.progTags().length);
        for (long t : info.progTags()) tags.putLong(t);
        arrays.put(Feature.BpfProgInfo.ARRAY_PROG_TAGS, tags.flip());
        return Feature.BpfProgInfo.linear(ByteBuffer.wrap(info.raw()).order(ByteOrder.LITTLE_ENDIAN), arrays);
    }

    /** What the archive keeps about the program (region metadata). */
    public ptfence.region.BpfMetadata toArchive() {
        ByteBuffer jl = ByteBuffer.allocate(8 * info.jitedLineInfo().length).order(ByteOrder.LITTLE_ENDIAN);
        for (long a : info.jitedLineInfo()) jl.putLong(a);
        return new ptfence.region.BpfMetadata(info.id(), info.tagHex(), info.name(), info.type(), info.jitedKsyms(),
                info.jitedFuncLens(), info.lineInfo(), info.lineInfoRecSize(), jl.array(),
                info.jitedLineInfo().length == 0 ? 0 : 8, info.funcInfo(), info.funcInfoRecSize(), info.btfId(), btf,
                info.xlatedInsns(), info.loadTimeBoottimeNs(), info.createdByUid(), info.mapIds(), info.progTags(),
                attach.expectedAttachType(), info.attachBtfObjId(), info.attachBtfId(), attach.functionName(),
                attach.targetProgId(), info.gplCompatible(), info.verifiedInsns(), null, null);
    }

    /** This program's BTF as one entry of perf's HEADER_BPF_BTF; empty if it has none. */
    public java.util.Optional<Feature.BpfBtf> toPerfBtf() {
        if (btf.length == 0) return java.util.Optional.empty();
        return java.util.Optional.of(new Feature.BpfBtf(info.btfId(), ByteBuffer.wrap(btf.clone())));
    }

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

package ptfence.bpf;

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

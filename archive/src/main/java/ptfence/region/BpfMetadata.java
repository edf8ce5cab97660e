package ptfence.region;

import java.util.Arrays;
import java.util.Objects;
import ptfence.store.ContentKey;

/**
 * What the kernel says about a BPF program (struct bpf_prog_info and the arrays it points to), kept so
 * a trace can be explained down to BPF source lines long after the program is gone. Raw kernel arrays
 * are kept verbatim as bytes, in the kernel's record layout, with their record sizes.
 *
 * @param progId               prog id at load time
 * @param tag                  8-byte program tag, 16 hex digits (as bpftool and perf print it)
 * @param name                 program name (BPF_OBJ_NAME_LEN-limited)
 * @param type                 enum bpf_prog_type value
 * @param jitedKsyms           start address of each JITed function (main program first)
 * @param jitedFuncLens        length of each JITed function, same order
 * @param lineInfo             struct bpf_line_info records
 * @param lineInfoRecSize      size of one line info record
 * @param jitedLineInfo        JITed address of each line info record (u64 each)
 * @param jitedLineInfoRecSize size of one JITed line info record
 * @param funcInfo             struct bpf_func_info records
 * @param funcInfoRecSize      size of one func info record
 * @param btfId                id of the program's BTF object
 * @param btf                  raw BTF blob (may be empty)
 * @param xlatedInsns          translated (post-verifier) instructions
 * @param loadTime             load time, ns since boot (as bpf_prog_info.load_time)
 * @param uid                  uid that loaded it
 */
public record BpfMetadata(int progId, String tag, String name, int type, long[] jitedKsyms, int[] jitedFuncLens,
        byte[] lineInfo, int lineInfoRecSize, byte[] jitedLineInfo, int jitedLineInfoRecSize, byte[] funcInfo,
        int funcInfoRecSize, int btfId, byte[] btf, byte[] xlatedInsns, long loadTime, int uid)
        implements RegionMetadata {

    public BpfMetadata {
        Objects.requireNonNull(name, "name");
        tag = tag == null ? "" : tag.toLowerCase(java.util.Locale.ROOT);
        if (!tag.isEmpty() && (tag.length() != 16 || !ContentKey.isHex(tag))) {
            throw new IllegalArgumentException("BPF tag must be 16 hex digits: " + tag);
        }
        jitedKsyms = orEmpty(jitedKsyms);
        jitedFuncLens = jitedFuncLens == null ? new int[0] : jitedFuncLens.clone();
        lineInfo = orEmpty(lineInfo);
        jitedLineInfo = orEmpty(jitedLineInfo);
        funcInfo = orEmpty(funcInfo);
        btf = orEmpty(btf);
        xlatedInsns = orEmpty(xlatedInsns);
    }

    /** A minimal record: id, tag, name and type only. */
    public static BpfMetadata of(int progId, String tag, String name, int type) {
        return new BpfMetadata(progId, tag, name, type, null, null, null, 0, null, 0, null, 0, 0, null, null, 0, 0);
    }

    @Override public long[] jitedKsyms() { return jitedKsyms.clone(); }
    @Override public int[] jitedFuncLens() { return jitedFuncLens.clone(); }
    @Override public byte[] lineInfo() { return lineInfo.clone(); }
    @Override public byte[] jitedLineInfo() { return jitedLineInfo.clone(); }
    @Override public byte[] funcInfo() { return funcInfo.clone(); }
    @Override public byte[] btf() { return btf.clone(); }
    @Override public byte[] xlatedInsns() { return xlatedInsns.clone(); }

    @Override
    public boolean equals(Object o) {
        return o instanceof BpfMetadata m && progId == m.progId && tag.equals(m.tag) && name.equals(m.name)
                && type == m.type && Arrays.equals(jitedKsyms, m.jitedKsyms)
                && Arrays.equals(jitedFuncLens, m.jitedFuncLens) && Arrays.equals(lineInfo, m.lineInfo)
                && lineInfoRecSize == m.lineInfoRecSize && Arrays.equals(jitedLineInfo, m.jitedLineInfo)
                && jitedLineInfoRecSize == m.jitedLineInfoRecSize && Arrays.equals(funcInfo, m.funcInfo)
                && funcInfoRecSize == m.funcInfoRecSize && btfId == m.btfId && Arrays.equals(btf, m.btf)
                && Arrays.equals(xlatedInsns, m.xlatedInsns) && loadTime == m.loadTime && uid == m.uid;
    }

    @Override
    public int hashCode() {
        return Objects.hash(progId, tag, name, type, loadTime, uid) * 31 + Arrays.hashCode(xlatedInsns);
    }

    @Override
    public String toString() {
        return "BpfMetadata[progId=" + progId + ", tag=" + tag + ", name=" + name + ", type=" + type
                + ", functions=" + jitedKsyms.length + ", lineInfo=" + lineInfo.length + "B, funcInfo="
                + funcInfo.length + "B, btf=" + btf.length + "B, xlated=" + xlatedInsns.length + "B, loadTime="
                + loadTime + ", uid=" + uid + "]";
    }

    private static byte[] orEmpty(byte[] b) {
        return b == null ? new byte[0] : b.clone();
    }

    private static long[] orEmpty(long[] b) {
        return b == null ? new long[0] : b.clone();
    }
}

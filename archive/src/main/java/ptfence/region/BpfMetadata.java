package ptfence.region;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import ptfence.store.ContentKey;

/**
 * What the kernel says about a BPF program (struct bpf_prog_info and the arrays it points to, what the fence read
 * of its attachment), kept so a trace can be explained down to BPF source lines long after the program is gone.
 * Raw kernel arrays are kept verbatim as bytes, in the kernel's record layout, with their record sizes. This is the
 * one record the archive keeps per BPF region; every region of one program instance carries the same.
 * <p>
 * The program's BTF is stored once by content, like an image: in the archive a region's record holds its
 * {@code btfKey} and {@link RegionIndex#withContent} puts the bytes back; in memory (capture, bundles being written)
 * {@code btf} may hold them.
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
 * @param btf                  raw BTF blob (empty when unknown, or when only {@code btfKey} is known)
 * @param xlatedInsns          translated (post-verifier) instructions, as BPF_OBJ_GET_INFO_BY_FD dumps them
 * @param loadTime             load time, ns since boot (as bpf_prog_info.load_time)
 * @param uid                  uid that loaded it
 * @param mapIds               ids of the maps it uses
 * @param progTags             each JITed function's own tag (bpf_prog_info.prog_tags)
 * @param expectedAttachType   enum bpf_attach_type given at load (0 where not known)
 * @param attachBtfObjId       BTF object of the attach target (fentry, fexit, LSM, freplace)
 * @param attachBtfId          the target's BTF type id
 * @param attachTarget         the target function's name ("" where none or not known)
 * @param targetProgId         the target program's id (freplace, fentry on a BPF program), 0 where none
 * @param gplCompatible        the license is GPL-compatible
 * @param verifiedInsns        instructions the verifier processed
 * @param btfKey               content key of the BTF blob in the archive, or null
 * @param sources              source files found for a program without line info (bcc's program store)
 */
public record BpfMetadata(int progId, String tag, String name, int type, long[] jitedKsyms, int[] jitedFuncLens,
        byte[] lineInfo, int lineInfoRecSize, byte[] jitedLineInfo, int jitedLineInfoRecSize, byte[] funcInfo,
        int funcInfoRecSize, int btfId, byte[] btf, byte[] xlatedInsns, long loadTime, int uid, int[] mapIds,
        long[] progTags, int expectedAttachType, int attachBtfObjId, int attachBtfId, String attachTarget,
        int targetProgId, boolean gplCompatible, int verifiedInsns, ContentKey btfKey, List<SourceFile> sources)
        implements RegionMetadata {

    /** A source file kept with a program (its name as the store names it, and its bytes). */
    public record SourceFile(String name, byte[] content) {
        public SourceFile {
            Objects.requireNonNull(name, "name");
            content = content.clone();
        }

        @Override
        public byte[] content() {
            return content.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof SourceFile f && name.equals(f.name) && Arrays.equals(content, f.content);
        }

        @Override
        public int hashCode() {
            return name.hashCode() * 31 + Arrays.hashCode(content);
        }
    }

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
        mapIds = mapIds == null ? new int[0] : mapIds.clone();
        progTags = orEmpty(progTags);
        attachTarget = attachTarget == null ? "" : attachTarget;
        if (btf.length > 0) {
            ContentKey k = ContentKey.of(btf);
            if (btfKey != null && !btfKey.equals(k)) {
                throw new IllegalArgumentException("BTF bytes do not match their key " + btfKey.hex());
            }
            btfKey = k;
        }
        sources = sources == null ? List.of() : List.copyOf(sources);
    }

    /** The fields bpf_prog_info had before the fence read attachments (older records, tests). */
    public BpfMetadata(int progId, String tag, String name, int type, long[] jitedKsyms, int[] jitedFuncLens,
            byte[] lineInfo, int lineInfoRecSize, byte[] jitedLineInfo, int jitedLineInfoRecSize, byte[] funcInfo,
            int funcInfoRecSize, int btfId, byte[] btf, byte[] xlatedInsns, long loadTime, int uid) {
        this(progId, tag, name, type, jitedKsyms, jitedFuncLens, lineInfo, lineInfoRecSize, jitedLineInfo,
                jitedLineInfoRecSize, funcInfo, funcInfoRecSize, btfId, btf, xlatedInsns, loadTime, uid, null, null, 0,
                0, 0, "", 0, false, 0, null, null);
    }

    /** A minimal record: id, tag, name and type only. */
    public static BpfMetadata of(int progId, String tag, String name, int type) {
        return new BpfMetadata(progId, tag, name, type, null, null, null, 0, null, 0, null, 0, 0, null, null, 0, 0);
    }

    /** The same record with its BTF bytes (they must match {@link #btfKey} where that is set). */
    public BpfMetadata withBtf(byte[] bytes) {
        return new BpfMetadata(progId, tag, name, type, jitedKsyms, jitedFuncLens, lineInfo, lineInfoRecSize,
                jitedLineInfo, jitedLineInfoRecSize, funcInfo, funcInfoRecSize, btfId, bytes, xlatedInsns, loadTime,
                uid, mapIds, progTags, expectedAttachType, attachBtfObjId, attachBtfId, attachTarget, targetProgId,
                gplCompatible, verifiedInsns, btfKey, sources);
    }

    /** The same record without the BTF bytes, keeping their key (how a region record stores it). */
    public BpfMetadata withoutBtfBytes() {
        return new BpfMetadata(progId, tag, name, type, jitedKsyms, jitedFuncLens, lineInfo, lineInfoRecSize,
                jitedLineInfo, jitedLineInfoRecSize, funcInfo, funcInfoRecSize, btfId, null, xlatedInsns, loadTime,
                uid, mapIds, progTags, expectedAttachType, attachBtfObjId, attachBtfId, attachTarget, targetProgId,
                gplCompatible, verifiedInsns, btfKey, sources);
    }

    /** The same record with these source files. */
    public BpfMetadata withSources(List<SourceFile> files) {
        return new BpfMetadata(progId, tag, name, type, jitedKsyms, jitedFuncLens, lineInfo, lineInfoRecSize,
                jitedLineInfo, jitedLineInfoRecSize, funcInfo, funcInfoRecSize, btfId, btf, xlatedInsns, loadTime,
                uid, mapIds, progTags, expectedAttachType, attachBtfObjId, attachBtfId, attachTarget, targetProgId,
                gplCompatible, verifiedInsns, btfKey, files);
    }

    /** Whether the program has BTF that is not in this record's bytes (resolve it with {@link RegionIndex#withContent}). */
    public boolean btfElsewhere() {
        return btf.length == 0 && btfKey != null;
    }

    @Override public long[] jitedKsyms() { return jitedKsyms.clone(); }
    @Override public int[] jitedFuncLens() { return jitedFuncLens.clone(); }
    @Override public byte[] lineInfo() { return lineInfo.clone(); }
    @Override public byte[] jitedLineInfo() { return jitedLineInfo.clone(); }
    @Override public byte[] funcInfo() { return funcInfo.clone(); }
    @Override public byte[] btf() { return btf.clone(); }
    @Override public byte[] xlatedInsns() { return xlatedInsns.clone(); }
    @Override public int[] mapIds() { return mapIds.clone(); }
    @Override public long[] progTags() { return progTags.clone(); }

    @Override
    public boolean equals(Object o) {
        return o instanceof BpfMetadata m && progId == m.progId && tag.equals(m.tag) && name.equals(m.name)
                && type == m.type && Arrays.equals(jitedKsyms, m.jitedKsyms)
                && Arrays.equals(jitedFuncLens, m.jitedFuncLens) && Arrays.equals(lineInfo, m.lineInfo)
                && lineInfoRecSize == m.lineInfoRecSize && Arrays.equals(jitedLineInfo, m.jitedLineInfo)
                && jitedLineInfoRecSize == m.jitedLineInfoRecSize && Arrays.equals(funcInfo, m.funcInfo)
                && funcInfoRecSize == m.funcInfoRecSize && btfId == m.btfId && Arrays.equals(btf, m.btf)
                && Arrays.equals(xlatedInsns, m.xlatedInsns) && loadTime == m.loadTime && uid == m.uid
                && Arrays.equals(mapIds, m.mapIds) && Arrays.equals(progTags, m.progTags)
                && expectedAttachType == m.expectedAttachType && attachBtfObjId == m.attachBtfObjId
                && attachBtfId == m.attachBtfId && attachTarget.equals(m.attachTarget)
                && targetProgId == m.targetProgId && gplCompatible == m.gplCompatible
                && verifiedInsns == m.verifiedInsns && Objects.equals(btfKey, m.btfKey) && sources.equals(m.sources);
    }

    @Override
    public int hashCode() {
        return Objects.hash(progId, tag, name, type, loadTime, uid) * 31 + Arrays.hashCode(xlatedInsns);
    }

    @Override
    public String toString() {
        return "BpfMetadata[progId=" + progId + ", tag=" + tag + ", name=" + name + ", type=" + type
                + ", functions=" + jitedKsyms.length + ", lineInfo=" + lineInfo.length + "B, funcInfo="
                + funcInfo.length + "B, btf=" + (btfElsewhere() ? btfKey.shortHex() : btf.length + "B") + ", xlated="
                + xlatedInsns.length + "B, maps=" + Arrays.toString(mapIds) + ", loadTime=" + loadTime + ", uid=" + uid
                + (attachTarget.isEmpty() ? "" : ", attach=" + attachTarget) + (sources.isEmpty() ? ""
                : ", sources=" + sources.stream().map(SourceFile::name).toList()) + "]";
    }

    private static byte[] orEmpty(byte[] b) {
        return b == null ? new byte[0] : b.clone();
    }

    private static long[] orEmpty(long[] b) {
        return b == null ? new long[0] : b.clone();
    }
}

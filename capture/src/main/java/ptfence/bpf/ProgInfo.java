package ptfence.bpf;

import ptfence.sys.Bpf;
import ptfence.sys.BpfException;
import ptfence.sys.BpfFd;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * What BPF_OBJ_GET_INFO_BY_FD tells about a program (struct bpf_prog_info, 232 bytes), with every array fetched
 * by the two-call pattern: sizes first, then arrays, then a check that no count grew in between.
 */
public record ProgInfo(int type, int id, long tag, String name, long loadTimeBoottimeNs, int createdByUid,
                       int btfId, int verifiedInsns, boolean gplCompatible,
                       byte[] jitedInsns, byte[] xlatedInsns, long[] jitedKsyms, int[] jitedFuncLens,
                       long[] progTags, int[] mapIds,
                       int funcInfoRecSize, byte[] funcInfo, int lineInfoRecSize, byte[] lineInfo,
                       long[] jitedLineInfo, long runTimeNs, long runCount, long recursionMisses, byte[] raw) {

    public static final int SIZE = 232;
    // Offsets in struct bpf_prog_info (uapi).
    private static final int TYPE = 0, ID = 4, TAG = 8, JITED_LEN = 16, XLATED_LEN = 20, JITED_INSNS = 24,
            XLATED_INSNS = 32, LOAD_TIME = 40, UID = 48, NR_MAP_IDS = 52, MAP_IDS = 56, NAME = 64, GPL = 84,
            NR_JITED_KSYMS = 104, NR_JITED_FUNC_LENS = 108, JITED_KSYMS = 112, JITED_FUNC_LENS = 120,
            BTF_ID = 128, FUNC_INFO_REC_SIZE = 132, FUNC_INFO = 136, NR_FUNC_INFO = 144, NR_LINE_INFO = 148,
            LINE_INFO = 152, JITED_LINE_INFO = 160, NR_JITED_LINE_INFO = 168, LINE_INFO_REC_SIZE = 172,
            JITED_LINE_INFO_REC_SIZE = 176, NR_PROG_TAGS = 180, PROG_TAGS = 184, RUN_TIME_NS = 192, RUN_CNT = 200,
            RECURSION_MISSES = 208, VERIFIED_INSNS = 216, ATTACH_BTF_OBJ_ID = 220, ATTACH_BTF_ID = 224;

    /** Thrown when the program changed between the two calls (a count grew); the caller may retry. */
    public static final class Raced extends RuntimeException {
        Raced(String what) { super(what); }
    }

    /**
     * Fetches everything. The kernel dumps translated instructions through one kmalloc'ed copy, which fails with
     * ENOMEM beyond about 4 MB (a ~500k-instruction program); the fetch is then repeated without them (the
     * returned xlatedInsns is empty).
     */
    public static ProgInfo fetch(BpfFd prog) throws BpfException {
        boolean xlated = true;
        for (int attempt = 0; ; attempt++) {
            try {
                return fetchOnce(prog, xlated);
            } catch (Raced r) {
                if (attempt >= 3) throw r;
            } catch (BpfException e) {
                if (e.errno() != ENOMEM || !xlated) throw e;
                xlated = false;
            }
        }
    }

    private static final int ENOMEM = 12;

    private static ProgInfo fetchOnce(BpfFd prog, boolean withXlated) throws BpfException {
        Bpf bpf = Bpf.get();
        byte[] first = new byte[SIZE];
        bpf.objGetInfo(prog, first, List.of());
        ByteBuffer f = le(first);
        int jitedLen = f.getInt(JITED_LEN), xlatedLen = withXlated ? f.getInt(XLATED_LEN) : 0;
        int nKsyms = f.getInt(NR_JITED_KSYMS), nLens = f.getInt(NR_JITED_FUNC_LENS);
        int nFuncInfo = f.getInt(NR_FUNC_INFO), funcRec = f.getInt(FUNC_INFO_REC_SIZE);
        int nLineInfo = f.getInt(NR_LINE_INFO), lineRec = f.getInt(LINE_INFO_REC_SIZE);
        int nJitedLine = f.getInt(NR_JITED_LINE_INFO), jitedLineRec = f.getInt(JITED_LINE_INFO_REC_SIZE);
        int nTags = f.getInt(NR_PROG_TAGS), nMaps = f.getInt(NR_MAP_IDS);

        byte[] second = new byte[SIZE];
        ByteBuffer s = le(second);
        byte[] jited = new byte[jitedLen], xlated = new byte[xlatedLen], ksyms = new byte[8 * nKsyms],
                lens = new byte[4 * nLens], funcInfo = new byte[nFuncInfo * funcRec],
                lineInfo = new byte[nLineInfo * lineRec], jitedLine = new byte[nJitedLine * jitedLineRec],
                tags = new byte[8 * nTags], maps = new byte[4 * nMaps];
        s.putInt(JITED_LEN, jitedLen).putInt(XLATED_LEN, xlatedLen)
                .putInt(NR_JITED_KSYMS, nKsyms).putInt(NR_JITED_FUNC_LENS, nLens)
                .putInt(NR_FUNC_INFO, nFuncInfo).putInt(FUNC_INFO_REC_SIZE, funcRec)
                .putInt(NR_LINE_INFO, nLineInfo).putInt(LINE_INFO_REC_SIZE, lineRec)
                .putInt(NR_JITED_LINE_INFO, nJitedLine).putInt(JITED_LINE_INFO_REC_SIZE, jitedLineRec)
                .putInt(NR_PROG_TAGS, nTags).putInt(NR_MAP_IDS, nMaps);
        List<Bpf.InfoArray> arrays = new ArrayList<>();
        add(arrays, JITED_INSNS, jited);
        add(arrays, XLATED_INSNS, xlated);
        add(arrays, JITED_KSYMS, ksyms);
        add(arrays, JITED_FUNC_LENS, lens);
        add(arrays, FUNC_INFO, funcInfo);
        add(arrays, LINE_INFO, lineInfo);
        add(arrays, JITED_LINE_INFO, jitedLine);
        add(arrays, PROG_TAGS, tags);
        add(arrays, MAP_IDS, maps);
        bpf.objGetInfo(prog, second, arrays);
        check("jited_prog_len", jitedLen, s.getInt(JITED_LEN));
        if (withXlated) check("xlated_prog_len", xlatedLen, s.getInt(XLATED_LEN));
        check("nr_jited_ksyms", nKsyms, s.getInt(NR_JITED_KSYMS));
        check("nr_jited_func_lens", nLens, s.getInt(NR_JITED_FUNC_LENS));
        check("nr_map_ids", nMaps, s.getInt(NR_MAP_IDS));

        byte[] nameBytes = new byte[16];
        s.get(NAME, nameBytes);
        int nl = 0;
        while (nl < 16 && nameBytes[nl] != 0) nl++;
        return new ProgInfo(s.getInt(TYPE), s.getInt(ID), Long.reverseBytes(s.getLong(TAG)),
                new String(nameBytes, 0, nl, StandardCharsets.US_ASCII), s.getLong(LOAD_TIME), s.getInt(UID),
                s.getInt(BTF_ID), s.getInt(VERIFIED_INSNS), (s.getInt(GPL) & 1) != 0,
                jited, xlated, longs(ksyms), ints(lens), tagsOf(tags), ints(maps),
                funcRec, funcInfo, lineRec, lineInfo, longs(jitedLine), s.getLong(RUN_TIME_NS), s.getLong(RUN_CNT),
                s.getLong(RECURSION_MISSES), second);
    }

    /**
     * A ProgInfo from what the fence read in the kernel (no bpf() call): {@code raw} is filled as
     * BPF_OBJ_GET_INFO_BY_FD fills struct bpf_prog_info for a privileged caller (counts, record sizes, ids; run
     * statistics 0), so {@link ProgramMetadata#toPerfBpil} gives perf the same entry.
     */
    public static ProgInfo of(int type, int id, long tag, String name, long loadTime, int uid, int btfId,
            int verifiedInsns, boolean gpl, byte[] jited, byte[] xlated, long[] ksyms, int[] lens, long[] progTags,
            int[] mapIds, int funcInfoRecSize, byte[] funcInfo, int lineInfoRecSize, byte[] lineInfo,
            long[] jitedLineInfo, int attachBtfObjId, int attachBtfId) {
        ByteBuffer r = le(new byte[SIZE]);
        byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
        r.putInt(TYPE, type).putInt(ID, id).putLong(TAG, Long.reverseBytes(tag)).putInt(JITED_LEN, jited.length)
                .putInt(XLATED_LEN, xlated.length).putLong(LOAD_TIME, loadTime).putInt(UID, uid)
                .putInt(NR_MAP_IDS, mapIds.length).put(NAME, nameBytes, 0, Math.min(15, nameBytes.length))
                .putInt(GPL, gpl ? 1 : 0).putInt(NR_JITED_KSYMS, ksyms.length).putInt(NR_JITED_FUNC_LENS, lens.length)
                .putInt(BTF_ID, btfId).putInt(FUNC_INFO_REC_SIZE, funcInfoRecSize)
                .putInt(NR_FUNC_INFO, funcInfoRecSize == 0 ? 0 : funcInfo.length / funcInfoRecSize)
                .putInt(NR_LINE_INFO, lineInfoRecSize == 0 ? 0 : lineInfo.length / lineInfoRecSize)
                .putInt(NR_JITED_LINE_INFO, jitedLineInfo.length).putInt(LINE_INFO_REC_SIZE, lineInfoRecSize)
                .putInt(JITED_LINE_INFO_REC_SIZE, 8).putInt(NR_PROG_TAGS, progTags.length)
                .putInt(VERIFIED_INSNS, verifiedInsns).putInt(ATTACH_BTF_OBJ_ID, attachBtfObjId)
                .putInt(ATTACH_BTF_ID, attachBtfId);
        return new ProgInfo(type, id, tag, name, loadTime, uid, btfId, verifiedInsns, gpl, jited, xlated,
                ksyms.clone(), lens.clone(), progTags.clone(), mapIds.clone(), funcInfoRecSize, funcInfo,
                lineInfoRecSize, lineInfo, jitedLineInfo.clone(), 0, 0, 0, r.array());
    }

    /** attach_btf_obj_id: the BTF object of the function an fentry/fexit/LSM/freplace program attaches to. */
    public int attachBtfObjId() { return raw.length >= SIZE ? le(raw).getInt(ATTACH_BTF_OBJ_ID) : 0; }

    /** attach_btf_id: that function's BTF type id. */
    public int attachBtfId() { return raw.length >= SIZE ? le(raw).getInt(ATTACH_BTF_ID) : 0; }

    /** The tag as kallsyms and perf print it (16 hex digits, byte order). */
    public static String tagHex(long tag) {
        return HexFormat.of().toHexDigits(tag);
    }

    public String tagHex() { return tagHex(tag); }

    /** Image of JITed function i: jited_prog_insns is the concatenation of every function in order. */
    public byte[] functionImage(int i) {
        int from = 0;
        for (int j = 0; j < i; j++) from += jitedFuncLens[j];
        return java.util.Arrays.copyOfRange(jitedInsns, from, from + jitedFuncLens[i]);
    }

    public int functionCount() { return jitedKsyms.length; }

    private static void add(List<Bpf.InfoArray> arrays, int ptrOffset, byte[] buffer) {
        if (buffer.length > 0) arrays.add(new Bpf.InfoArray(ptrOffset, buffer));
    }

    private static void check(String what, int asked, int got) {
        if (got > asked) throw new Raced(what + " grew from " + asked + " to " + got + " between the two calls");
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static long[] longs(byte[] b) {
        long[] out = new long[b.length / 8];
        le(b).asLongBuffer().get(out);
        return out;
    }

    private static int[] ints(byte[] b) {
        int[] out = new int[b.length / 4];
        le(b).asIntBuffer().get(out);
        return out;
    }

    private static long[] tagsOf(byte[] b) {
        long[] out = new long[b.length / 8];
        ByteBuffer be = ByteBuffer.wrap(b); // tags are byte strings: big-endian reading keeps the print order
        for (int i = 0; i < out.length; i++) out[i] = be.getLong(8 * i);
        return out;
    }
}

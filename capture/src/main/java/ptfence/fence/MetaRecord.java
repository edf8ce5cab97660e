package ptfence.fence;

import ptfence.bpf.ProgInfo;
import ptfence.bpf.ProgramMetadata;
import ptfence.bpf.XlatedDump;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The LOAD hook's metadata record (kind {@link FenceRecord#KIND_META}): what bpf_prog_info would tell about a
 * program, read from the kernel's own structures in the hook, before the loader returns — so it exists for every
 * program the fence sees, however short its life. It precedes the program's image records in the ring.
 * <pre>
 * [0, 80)   the common header ({@link FenceRecord}): start = bpf_func, len = cap = record size, prog_id, tag,
 *           func_cnt, pid/tid, ts
 * u32 type@80  u32 expected_attach_type@84  u32 attach_btf_id@88  u32 attach_btf_obj_id@92  u64 load_time@96
 * u32 uid@104  u32 gpl@108  char name[16]@112  u32 insn_cnt@128  u32 nr_linfo@132  u32 nr_finfo@136
 * u32 nr_maps@140  u32 btf_id@144  u32 btf_size@148  u32 verified_insns@152  u32 dst_prog_id@156
 * u32 func_cnt@160  u32 meta_flags@164  section table@168: 7 x {u32 off, u32 len, s32 err, u32 pad}
 * char attach_func_name[64]@280  sections@344: xlated (kernel form), line info, JITed line info (u64 each),
 * func info, maps {u64 address, u32 id, u32 type, u32 max_entries, u32 value_size}, function tags (8 each), BTF
 * </pre>
 * The BTF is sent once per BTF object id ({@link #F_BTF_SEEN} later); the consumer keeps what it got.
 */
public record MetaRecord(int progId, long tag, long monotonicNs, int pid, int tid, int type, int expectedAttachType,
        int attachBtfId, int attachBtfObjId, long loadTime, int uid, boolean gpl, String name, int btfId,
        int btfSize, int verifiedInsns, int dstProgId, int funcCnt, int flags, String attachFuncName,
        byte[] xlatedKernel, byte[] lineInfo, long[] jitedLineInfo, byte[] funcInfo, List<MapRef> maps,
        long[] functionTags, byte[] btf, int[] errors) {

    public static final int TYPE = 80, EXPECTED_ATTACH_TYPE = 84, ATTACH_BTF_ID = 88, ATTACH_BTF_OBJ_ID = 92,
            LOAD_TIME = 96, UID = 104, GPL = 108, NAME = 112, INSN_CNT = 128, NR_LINFO = 132, NR_FINFO = 136,
            NR_MAPS = 140, BTF_ID = 144, BTF_SIZE = 148, VERIFIED_INSNS = 152, DST_PROG_ID = 156, FUNC_CNT = 160,
            META_FLAGS = 164, SECTION_TABLE = 168, ATTACH_FUNC_NAME = 280, ATTACH_FUNC_NAME_MAX = 64,
            SECTIONS_START = 344;
    public static final int XLATED = 0, LINE_INFO = 1, JITED_LINE_INFO = 2, FUNC_INFO = 3, MAPS = 4, FUNC_TAGS = 5,
            BTF = 6, SECTION_COUNT = 7;
    public static final int MAP_ENTRY = 24, LINE_INFO_REC = 16, FUNC_INFO_REC = 8;
    /** The BTF object was sent with this record. */
    public static final int F_BTF_INCLUDED = 1;
    /** An earlier record sent this BTF object. */
    public static final int F_BTF_SEEN = 2;
    /** The translated instructions did not fit the record's limit. */
    public static final int F_XLATED_DROPPED = 4;
    /** The BTF did not fit ({@link #MAX_BTF}, or with everything else under {@link #MAX_RECORD}). */
    public static final int F_BTF_DROPPED = 8;
    /** More than 64 maps (the kernel's own limit): the rest are not listed. */
    public static final int F_MAPS_TRUNC = 16;
    /** A ring record's size limit (dynptr: 2^24 - 1 bytes) with margin. */
    public static final int MAX_RECORD = (1 << 24) - 8;
    public static final int MAX_BTF = 8 << 20;

    /** One map the program uses: its kernel address (to recognise it in the translated instructions) and id. */
    public record MapRef(long address, int id, int type, int maxEntries, int valueSize) {}

    /** Parses the payload of a META record. */
    public static MetaRecord parse(ByteBuffer ring, int at, int payloadLen) {
        if (payloadLen < SECTIONS_START) throw new IllegalArgumentException("metadata record of " + payloadLen + " bytes");
        ByteBuffer b = ring.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int[] errors = new int[SECTION_COUNT];
        byte[][] sections = new byte[SECTION_COUNT][];
        for (int i = 0; i < SECTION_COUNT; i++) {
            int e = at + SECTION_TABLE + 16 * i;
            int off = b.getInt(e), len = b.getInt(e + 4);
            errors[i] = b.getInt(e + 8);
            if (off < SECTIONS_START || len < 0 || (long) off + len > payloadLen)
                throw new IllegalArgumentException("metadata section " + i + " [" + off + ", +" + len
                        + ") outside the record of " + payloadLen + " bytes");
            sections[i] = new byte[errors[i] == 0 ? len : 0];
            b.get(at + off, sections[i]);
        }
        ByteBuffer maps = ByteBuffer.wrap(sections[MAPS]).order(ByteOrder.LITTLE_ENDIAN);
        List<MapRef> mapRefs = new ArrayList<>();
        for (int p = 0; p + MAP_ENTRY <= maps.limit(); p += MAP_ENTRY) {
            mapRefs.add(new MapRef(maps.getLong(p), maps.getInt(p + 8), maps.getInt(p + 12), maps.getInt(p + 16),
                    maps.getInt(p + 20)));
        }
        long[] tags = new long[sections[FUNC_TAGS].length / 8];
        ByteBuffer tb = ByteBuffer.wrap(sections[FUNC_TAGS]); // byte strings: big-endian keeps the print order
        for (int i = 0; i < tags.length; i++) tags[i] = tb.getLong(8 * i);
        long[] jited = new long[sections[JITED_LINE_INFO].length / 8];
        ByteBuffer.wrap(sections[JITED_LINE_INFO]).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(jited);
        return new MetaRecord(b.getInt(at + FenceRecord.PROG_ID), Long.reverseBytes(b.getLong(at + FenceRecord.TAG)),
                b.getLong(at + FenceRecord.TS), b.getInt(at + FenceRecord.PID), b.getInt(at + FenceRecord.TID),
                b.getInt(at + TYPE), b.getInt(at + EXPECTED_ATTACH_TYPE), b.getInt(at + ATTACH_BTF_ID),
                b.getInt(at + ATTACH_BTF_OBJ_ID), b.getLong(at + LOAD_TIME), b.getInt(at + UID),
                b.getInt(at + GPL) != 0, cString(b, at + NAME, 16), b.getInt(at + BTF_ID), b.getInt(at + BTF_SIZE),
                b.getInt(at + VERIFIED_INSNS), b.getInt(at + DST_PROG_ID), b.getInt(at + FUNC_CNT),
                b.getInt(at + META_FLAGS), cString(b, at + ATTACH_FUNC_NAME, ATTACH_FUNC_NAME_MAX),
                sections[XLATED], sections[LINE_INFO], jited, sections[FUNC_INFO], List.copyOf(mapRefs), tags,
                sections[BTF], errors);
    }

    /** Whether every section the kernel had was copied (no fault, nothing dropped for size). */
    public boolean complete() {
        for (int e : errors) if (e != 0) return false;
        return (flags & (F_XLATED_DROPPED | F_BTF_DROPPED | F_MAPS_TRUNC)) == 0;
    }

    /**
     * The program's metadata as bpf() would report it: the translated instructions in the form
     * BPF_OBJ_GET_INFO_BY_FD dumps them ({@link XlatedDump}), the JITed code and function addresses from the
     * program's image records ({@code images}, in function order), and {@code btf} (this record's, or the one an
     * earlier record of the same BTF object sent; empty when unknown); {@code arrayValueOffset} is the running
     * kernel's offsetof(struct bpf_array, value).
     */
    public ProgramMetadata toMetadata(List<CapturedText> images, byte[] btf, int arrayValueOffset) {
        int n = images.size();
        long[] ksyms = new long[n];
        int[] lens = new int[n];
        int total = 0;
        for (int i = 0; i < n; i++) {
            ksyms[i] = images.get(i).address();
            lens[i] = images.get(i).bytes().length;
            total += lens[i];
        }
        byte[] jited = new byte[total];
        int off = 0;
        for (CapturedText t : images) {
            System.arraycopy(t.bytes(), 0, jited, off, t.bytes().length);
            off += t.bytes().length;
        }
        int[] mapIds = maps.stream().mapToInt(MapRef::id).toArray();
        byte[] xlated = XlatedDump.prepare(xlatedKernel, maps.stream().map(m -> new XlatedDump.Map(m.address(), m.id(),
                m.type(), m.maxEntries(), m.valueSize())).toList(), arrayValueOffset);
        ProgInfo info = ProgInfo.of(type, progId, tag, name, loadTime, uid, btfId, verifiedInsns, gpl, jited, xlated,
                ksyms, lens, functionTags, mapIds, FUNC_INFO_REC, funcInfo, LINE_INFO_REC, lineInfo, jitedLineInfo,
                attachBtfObjId, attachBtfId);
        return new ProgramMetadata(info, btf == null ? new byte[0] : btf,
                new ProgramMetadata.Attach(expectedAttachType, attachFuncName, dstProgId));
    }

    private static String cString(ByteBuffer b, int at, int max) {
        int n = 0;
        while (n < max && b.get(at + n) != 0) n++;
        byte[] s = new byte[n];
        b.get(at, s);
        return new String(s, StandardCharsets.UTF_8);
    }
}

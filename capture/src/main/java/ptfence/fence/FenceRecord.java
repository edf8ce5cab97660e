package ptfence.fence;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The layout of one fence ring-buffer record (the payload after the ring's 8-byte header), written by the BPF
 * programs in {@link FencePrograms} and parsed here. One record per JITed function; the image follows the header.
 * <pre>
 * u64 start@0  u64 end@8  u64 ts@16 (CLOCK_MONOTONIC)  u32 kind@24  u32 off@28
 * u32 len@32   u32 cap@36  s32 name_len@40  s32 err@44  u32 pid@48  u32 tid@52  u32 prog_id@56
 * u16 func_idx@60  u16 func_cnt@62  u8 tag[8]@64  u32 flags@72  u32 pad@76  char name[512]@80  u8 image[len]@592
 * </pre>
 */
public final class FenceRecord {
    private FenceRecord() {}

    public static final int START = 0, END = 8, TS = 16, KIND = 24, OFF = 28, LEN = 32, CAP = 36, NAME_LEN = 40,
            ERR = 44, PID = 48, TID = 52, PROG_ID = 56, FUNC_IDX = 60, FUNC_CNT = 62, TAG = 64, FLAGS = 72, PAD = 76,
            NAME = 80, NAME_MAX = 512, IMAGE = 592, HEADER = 80;

    public static final int KIND_LOAD = 8, KIND_FREE = 9, KIND_TRAMP_FREE = 10, KIND_PEEK = 11, KIND_META = 12,
            KIND_ATTACH = 13, KIND_FRAG = 14;
    /**
     * The half of a BPF dispatcher's page in force, copied in the kernel at the return of the update that switched
     * to it (fexit bpf_dispatcher_change_prog): start is the half's address, name the dispatcher's ksym.
     */
    public static final int KIND_DISPATCHER = 15;
    /**
     * A BPF trampoline image as its build returns (fexit arch_prepare_bpf_trampoline), before the attach poke makes
     * it reachable: start is the image, len the bytes written, name the image's ksym ({@link TrampolineCopies}).
     */
    public static final int KIND_TRAMP_BUILT = 16;
    /**
     * A BPF trampoline image as the update that attached it returns (fexit bpf_trampoline_update, where the build
     * hook cannot attach): tr->cur_image, copied after its attach poke and before any later update can poke inside
     * it; start is the image, len its extent, name its ksym ({@link TrampolineCopies}).
     */
    public static final int KIND_TRAMP_UPDATED = 17;
    /**
     * A fragment of a record of another kind, where the kernel lacks the dynptr-read kfuncs ({@link FragmentAssembler}):
     * <pre>
     * u64 key@0 (ktime at the record's start)  u32 cpu@8  u32 total@12 (the record's length)  u32 off@16  u32 len@20
     * u32 kind@24 (KIND_FRAG)  u32 pad@28  u8 data[len]@32
     * </pre>
     */
    public static final int FRAG_KEY = 0, FRAG_CPU = 8, FRAG_TOTAL = 12, FRAG_OFF = 16, FRAG_LEN = 20, FRAG_PAD = 28,
            FRAG_HEADER = 32;
    public static final int F_LAST = 1, F_TRUNC = 2, F_FTRUNC = 8;

    /**
     * One image per record, up to the dynptr size limit (2^24 - 1 bytes with the header); a JIT image of a
     * 1M-instruction program fits. Larger ones would be truncated and flagged F_TRUNC.
     */
    public static final int MAX_IMAGE = (1 << 24) - 1 - IMAGE;
    /** Functions per program the hooks walk; more are flagged F_FTRUNC. */
    public static final int MAX_FUNCS = 256;

    /** A parsed record; the image bytes are copied out of the ring. */
    public record Parsed(long start, long end, long monotonicNs, int kind, int offset, int len, int nameLen, int err,
                         int pid, int tid, int progId, int funcIdx, int funcCnt, long tag, int flags, String name,
                         byte[] image) {
        /** The copy is exact only when the kernel read succeeded and nothing was cut off. */
        public boolean complete() {
            return err == 0 && (flags & F_TRUNC) == 0 && len == end - start;
        }
    }

    /** The record's kind (its header is common to every kind), or -1 if the record is too short to say. */
    public static int kind(ByteBuffer ring, int at, int payloadLen) {
        return payloadLen < FRAG_HEADER ? -1 : ring.duplicate().order(ByteOrder.LITTLE_ENDIAN).getInt(at + KIND);
    }

    public static Parsed parse(ByteBuffer ring, int at, int payloadLen) {
        ByteBuffer b = ring.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (payloadLen < IMAGE) throw new IllegalArgumentException("fence record of " + payloadLen + " bytes");
        int len = b.getInt(at + LEN);
        int nameLen = b.getInt(at + NAME_LEN);
        int n = Math.max(0, Math.min(NAME_MAX, nameLen) - 1); // incl. NUL
        byte[] name = new byte[n];
        b.get(at + NAME, name);
        int imageLen = Math.max(0, Math.min(len, payloadLen - IMAGE));
        byte[] image = new byte[imageLen];
        b.get(at + IMAGE, image);
        return new Parsed(b.getLong(at + START), b.getLong(at + END), b.getLong(at + TS), b.getInt(at + KIND),
                b.getInt(at + OFF), len, nameLen, b.getInt(at + ERR), b.getInt(at + PID), b.getInt(at + TID),
                b.getInt(at + PROG_ID), b.getShort(at + FUNC_IDX) & 0xffff, b.getShort(at + FUNC_CNT) & 0xffff,
                Long.reverseBytes(b.getLong(at + TAG)), b.getInt(at + FLAGS),
                new String(name, StandardCharsets.US_ASCII), image);
    }
}

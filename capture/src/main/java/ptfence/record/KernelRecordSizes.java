package ptfence.record;

import java.nio.ByteBuffer;
import ptfence.perfdata.RecordTypes;

/**
 * The true length of the kernel-text sideband records, from their content. Observed on 6.18: when several events on
 * a CPU listen for ksymbol/bpf_event (ptrec's and, say, a concurrent perf record's), some KSYMBOL records arrive
 * with header.size 32 bytes (one sample_id trailer) larger than what the kernel wrote — the output function adds
 * the id header size to the shared event header for each listener — and the surplus is stale ring memory. perf 6.1
 * then fails on the record ("failed to process type: 17 [Bad address]"). ptrec writes such records with their true
 * size and counts them.
 */
final class KernelRecordSizes {
    private KernelRecordSizes() {}

    /** The size the record's content implies, or its header size when the type is not one of these. */
    static int trueSize(ByteBuffer rec, int headerSize, int trailer) {
        int type = rec.getInt(0);
        int size;
        switch (type) {
            case RecordTypes.KSYMBOL -> {
                int end = 24;
                while (end < headerSize && rec.get(end) != 0) end++;
                size = 24 + align8(end - 24 + 1) + trailer;
            }
            case RecordTypes.BPF_EVENT -> size = 24 + trailer;
            case RecordTypes.TEXT_POKE -> {
                int oldLen = Short.toUnsignedInt(rec.getShort(16)), newLen = Short.toUnsignedInt(rec.getShort(18));
                size = 16 + align8(4 + oldLen + newLen) + trailer;
            }
            default -> size = headerSize;
        }
        return size < headerSize ? size : headerSize;
    }

    private static int align8(int n) {
        return (n + 7) & ~7;
    }
}

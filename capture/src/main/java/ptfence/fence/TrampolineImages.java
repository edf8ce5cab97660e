package ptfence.fence;

/**
 * How much of a BPF trampoline's "page" is its image. Since 6.x (6.12 here) trampolines are allocated from the BPF
 * program pack in 64-byte chunks, but bpf_image_ksym_add still announces each with a KSYMBOL of PAGE_SIZE: a copy of
 * that length holds the neighbours too (other trampolines, the XDP dispatcher, programs), whose bytes change on their
 * own; in the guest 6.12 churn 76 of 112 trampoline copies and 13 of 67 dispatcher copies differed from kcore's only
 * there (the 4096-byte trampoline versions covered the dispatcher's page). The pack fills free space with int3
 * (0xcc), so an image ends where a run of 0xcc reaching a chunk boundary begins after its code (its generated size
 * leaves zeros, or its last instruction, before the fill); one not written yet (all fill, a KSYMBOL's copy on 6.12)
 * is one chunk. Where no such run is found (a whole page of its own, as on
 * 6.1, or a neighbour right after the image) the copy keeps its length.
 */
final class TrampolineImages {
    static final int CHUNK = 64; // BPF_PROG_CHUNK_SIZE

    private TrampolineImages() {}

    /** The image's length within {@code bytes} read at {@code address}. */
    static int length(long address, byte[] bytes) {
        int first = (int) (CHUNK - Long.remainderUnsigned(address, CHUNK)) % CHUNK;
        for (int end = first == 0 ? CHUNK : first; end <= bytes.length; end += CHUNK) {
            if ((bytes[end - 1] & 0xff) != 0xcc) continue;
            int s = end - 1;
            while (s > 0 && (bytes[s - 1] & 0xff) == 0xcc) s--;
            if (s == 0) return Math.min(end, bytes.length); // nothing written yet: one chunk of the fill
            int before = bytes[s - 1] & 0xff;
            if (before == 0x00 || before == 0xc3) return s;
        }
        return bytes.length;
    }

    /** {@code bytes} cut to the image's length. */
    static byte[] image(long address, byte[] bytes) {
        int n = length(address, bytes);
        return n == bytes.length ? bytes : java.util.Arrays.copyOf(bytes, n);
    }
}

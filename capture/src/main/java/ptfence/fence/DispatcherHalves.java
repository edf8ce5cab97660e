package ptfence.fence;

/**
 * The geometry of a BPF dispatcher's image (kernel/bpf/dispatcher.c, bpf_dispatcher_update): one page, two halves
 * at offsets 0 and page/2. An update writes the dispatch code for the new set of programs into the idle half and then
 * switches the dispatcher's static call (older kernels: the jump at the dispatcher function's entry) to that half's
 * first byte; a detach switches it back to bpf_dispatcher_nop_func. So a version of a dispatcher is a half, and the
 * switch is a TEXT_POKE whose new bytes are a call or jump to it.
 */
final class DispatcherHalves {
    private DispatcherHalves() {}

    /** The target of a 5-byte {@code call rel32} (e8) or {@code jmp rel32} (e9) written at {@code address}, else 0. */
    static long branchTarget(long address, byte[] insn) {
        if (insn.length != 5 || (insn[0] & 0xff) != 0xe8 && (insn[0] & 0xff) != 0xe9) return 0;
        int rel = (insn[1] & 0xff) | (insn[2] & 0xff) << 8 | (insn[3] & 0xff) << 16 | insn[4] << 24;
        return address + 5 + rel;
    }

    /** {@code target} where it is the first byte of a half of the page {@code [page, page + length)}, else 0. */
    static long halfOf(long page, int length, long target) {
        return target != 0 && (target == page || target == page + length / 2) ? target : 0;
    }
}

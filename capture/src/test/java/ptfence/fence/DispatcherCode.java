package ptfence.fence;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** What a BPF dispatcher's x86-64 image says about its targets (arch/x86/net/bpf_jit_comp.c emit_bpf_dispatcher). */
public final class DispatcherCode {
    private DispatcherCode() {}

    /** The compare of the program pointer with a target: {@code cmp rdx, imm32} (the address's low half). */
    public static byte[] compareWith(long progAddr) {
        return ByteBuffer.allocate(7).order(ByteOrder.LITTLE_ENDIAN).put((byte) 0x48).put((byte) 0x81)
                .put((byte) 0xfa).putInt((int) progAddr).array();
    }

    /** Whether {@code image} dispatches to the program at {@code progAddr}. */
    public static boolean dispatchesTo(byte[] image, long progAddr) {
        return TextFenceTest.indexOf(image, compareWith(progAddr)) >= 0;
    }
}

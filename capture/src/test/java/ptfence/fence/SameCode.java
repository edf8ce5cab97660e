package ptfence.fence;

/**
 * Compares two JIT images of the same program at different addresses: equal except in 32-bit PC-relative fields
 * that reach the same absolute target from both (e.g. the final jmp __x86_return_thunk). Makes no assumption
 * about instruction boundaries beyond "a differing byte lies in such a field".
 */
public final class SameCode {
    private SameCode() {}

    public static boolean relocatedEqual(byte[] a, long addrA, byte[] b, long addrB) {
        if (a.length != b.length) return false;
        int i = 0;
        while (i < a.length) {
            if (a[i] == b[i]) { i++; continue; }
            boolean explained = false;
            for (int k = Math.max(0, i - 3); k <= i && k + 4 <= a.length && !explained; k++) {
                long targetA = addrA + k + 4 + rel32(a, k), targetB = addrB + k + 4 + rel32(b, k);
                if (targetA == targetB) {
                    explained = true;
                    i = k + 4;
                }
            }
            if (!explained) return false;
        }
        return true;
    }

    private static int rel32(byte[] x, int at) {
        return (x[at] & 0xff) | (x[at + 1] & 0xff) << 8 | (x[at + 2] & 0xff) << 16 | x[at + 3] << 24;
    }
}

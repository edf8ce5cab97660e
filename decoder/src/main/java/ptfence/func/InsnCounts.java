package ptfence.func;

import java.util.Arrays;

/** Instructions per invocation, gathered one invocation at a time: count, min, median, max. */
public final class InsnCounts {
    private int[] counts = new int[64];
    private int n;
    private boolean sorted = true;

    public void add(int instructions) {
        if (n == counts.length) {
            counts = Arrays.copyOf(counts, n * 2);
        }
        sorted &= n == 0 || counts[n - 1] <= instructions;
        counts[n++] = instructions;
    }

    public int count() {
        return n;
    }

    public int min() {
        return n == 0 ? 0 : sorted()[0];
    }

    /** The upper median (the middle one of an odd count, the higher middle one of an even count). */
    public int median() {
        return n == 0 ? 0 : sorted()[n / 2];
    }

    public int max() {
        return n == 0 ? 0 : sorted()[n - 1];
    }

    private int[] sorted() {
        if (!sorted) {
            Arrays.sort(counts, 0, n);
            sorted = true;
        }
        return counts;
    }
}

package ptfence.image;

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * Ranges of addresses (code, symbols) sorted by start, for the question "which of them hold this address": a binary
 * search to the last range starting at or before it, then a walk back while some range so far still reaches past it
 * (each position keeps the greatest end up to it). Addresses compare unsigned. Callers walk with primitives:
 * {@code for (int i = r.lastAtOrBefore(a); i >= 0 && r.reaches(i, a); i--)}. Equal starts keep the input order.
 */
public final class AddressRanges<T> {
    private final T[] byStart;
    private final long[] starts;
    /** Greatest end (biased by MIN_VALUE, for signed compares) among ranges 0..i. */
    private final long[] maxEnd;

    public AddressRanges(List<T> ranges, ToLongFunction<T> start, ToLongFunction<T> end, T[] type) {
        byStart = ranges.toArray(Arrays.copyOf(type, 0));
        Arrays.sort(byStart, Comparator.comparingLong(r -> start.applyAsLong(r) ^ Long.MIN_VALUE));
        starts = new long[byStart.length];
        maxEnd = new long[byStart.length];
        long m = Long.MIN_VALUE;
        for (int i = 0; i < byStart.length; i++) {
            starts[i] = start.applyAsLong(byStart[i]) ^ Long.MIN_VALUE;
            m = Math.max(m, end.applyAsLong(byStart[i]) ^ Long.MIN_VALUE);
            maxEnd[i] = m;
        }
    }

    public int size() {
        return byStart.length;
    }

    public T get(int i) {
        return byStart[i];
    }

    /** Index of the last range starting at or before {@code address}; -1 if none. */
    public int lastAtOrBefore(long address) {
        return last(address ^ Long.MIN_VALUE, true);
    }

    /** Index of the last range starting before {@code address}; -1 if none. */
    public int lastBefore(long address) {
        return last(address ^ Long.MIN_VALUE, false);
    }

    /** Whether a range at index ≤ i ends after {@code address} (else none of them, nor any before, holds it). */
    public boolean reaches(int i, long address) {
        return maxEnd[i] > (address ^ Long.MIN_VALUE);
    }

    private int last(long key, boolean inclusive) {
        int lo = 0;
        int hi = starts.length - 1;
        int last = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (starts[mid] < key || inclusive && starts[mid] == key) {
                last = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return last;
    }
}

package ptfence.func;

/** Lookups in arrays of addresses sorted as unsigned numbers (kernel addresses are negative as longs). */
final class SortedAddresses {
    private SortedAddresses() {}

    /** Index of the last element at or below {@code address}, or -1 when every element is above it. */
    static int lastAtOrBelow(long[] sorted, long address) {
        int lo = 0, hi = sorted.length - 1, found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(sorted[mid], address) <= 0) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found;
    }
}

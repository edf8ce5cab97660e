package ptfence.region;

/**
 * The answer to "which bytes were at this address then": the region and its verified image.
 *
 * @param region the region holding the address at that time
 * @param bytes  the region's whole image, verified against its key
 */
public record ImageAt(Region region, byte[] bytes) {
    /** Offset of an address inside {@link #bytes()}. */
    public int offsetOf(long address) {
        return (int) (address - region.address());
    }
}

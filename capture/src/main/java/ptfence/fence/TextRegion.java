package ptfence.fence;

/**
 * A time-bounded text region as the archive keeps it: these {@code bytes} were at {@code address} on boot
 * {@code bootId} from {@code validFromNs} to {@code validToNs} (CLOCK_MONOTONIC; 0 = already there before the
 * fence started, {@link #OPEN} = still live).
 */
public record TextRegion(String bootId, long address, byte[] bytes, long validFromNs, long validToNs, String kind,
                         String name, int progId, long tag, Hook firstSeenBy) {
    public static final long OPEN = Long.MAX_VALUE;

    public TextRegion closedAt(long ns) {
        return new TextRegion(bootId, address, bytes, validFromNs, ns, kind, name, progId, tag, firstSeenBy);
    }
}

package ptfence.packet;

/**
 * Last-IP tracking: combines compressed TIP/FUP payloads with the previous IP into the full address,
 * per the Intel SDM's IP compression rules (and libipt's pt_last_ip).
 */
public final class LastIp {
    private long ip;
    private boolean have;
    private boolean suppressed;

    /** Forgets everything (at a PSB, after an overflow, on resync). */
    public void reset() {
        ip = 0;
        have = false;
        suppressed = false;
    }

    /**
     * Applies one IP payload.
     *
     * @param ipc the compression, one of {@code PacketCursor.IPC_*}
     * @return false if {@code ipc} is not a valid compression (state unchanged)
     */
    public boolean update(int ipc, long payload) {
        if (ipc == PacketCursor.IPC_SUPPRESSED) {
            suppressed = true;
            return true;
        }
        if (!isCompression(ipc)) {
            return false;
        }
        ip = combine(ip, ipc, payload);
        have = true;
        suppressed = false;
        return true;
    }

    /** True if {@code ipc} gives an IP (any valid compression but suppressed). */
    public static boolean isCompression(int ipc) {
        return ipc >= PacketCursor.IPC_UPDATE_16 && ipc <= PacketCursor.IPC_UPDATE_48 || ipc == PacketCursor.IPC_FULL;
    }

    /** The full IP a payload with compression {@code ipc} gives after {@code last}; {@code last} if it gives none. */
    public static long combine(long last, int ipc, long payload) {
        return switch (ipc) {
            case PacketCursor.IPC_UPDATE_16 -> (last & ~0xffffL) | (payload & 0xffffL);
            case PacketCursor.IPC_UPDATE_32 -> (last & ~0xffffffffL) | (payload & 0xffffffffL);
            case PacketCursor.IPC_SEXT_48 -> (payload << 16) >> 16;
            case PacketCursor.IPC_UPDATE_48 -> (last & ~0xffffffffffffL) | (payload & 0xffffffffffffL);
            case PacketCursor.IPC_FULL -> payload;
            default -> last;
        };
    }

    /** Whether an IP is known (some packet has provided one since the last reset). */
    public boolean haveIp() {
        return have;
    }

    /** Whether the last IP packet suppressed its IP. */
    public boolean suppressed() {
        return suppressed;
    }

    /** The current full IP (meaningful if {@link #haveIp()} and not {@link #suppressed()}). */
    public long ip() {
        return ip;
    }
}

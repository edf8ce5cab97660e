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
        switch (ipc) {
            case PacketCursor.IPC_SUPPRESSED:
                suppressed = true;
                return true;
            case PacketCursor.IPC_UPDATE_16:
                ip = (ip & ~0xffffL) | (payload & 0xffffL);
                break;
            case PacketCursor.IPC_UPDATE_32:
                ip = (ip & ~0xffffffffL) | (payload & 0xffffffffL);
                break;
            case PacketCursor.IPC_SEXT_48:
                ip = (payload << 16) >> 16;
                break;
            case PacketCursor.IPC_UPDATE_48:
                ip = (ip & ~0xffffffffffffL) | (payload & 0xffffffffffffL);
                break;
            case PacketCursor.IPC_FULL:
                ip = payload;
                break;
            default:
                return false;
        }
        have = true;
        suppressed = false;
        return true;
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

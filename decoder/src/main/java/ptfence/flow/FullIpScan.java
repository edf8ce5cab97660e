package ptfence.flow;

import ptfence.flow.PacketInput.Pkt;

/**
 * Where decoding can start again after an error without waiting for the next PSB (perf's recovery): at the next
 * FUP, TIP, TIP.PGE or TIP.PGD whose IP is given in full (IPBytes 011, sign-extended 48 bits, or 110, 64 bits), as
 * every compressed IP after an error may rest on a damaged one; or at a PSB or OVF, which the event layer recovers
 * from by itself. A full-IP packet is entered at the first of the packets that bind to it right before it (MODE.Exec,
 * MODE.TSX, PIP, VMCS, PTW, EXSTOP, MWAIT, ...), so the events it carries are not lost or bound elsewhere; timing
 * packets in between do not break that run.
 */
final class FullIpScan {
    private FullIpScan() {
    }

    /**
     * The offset to restart at, scanning from {@code from}; or a negative error ({@link PtError#EOS} when the trace
     * ends first, or the packet layer's error for bytes that are no packet). Leaves {@code in} anywhere.
     */
    static long find(PacketInput in, long from, Pkt p) {
        in.seek(from);
        long group = -1;
        while (true) {
            long at = in.position();
            int st = in.next(p);
            if (st < 0) {
                return st;
            }
            switch (p.type) {
                case Pkt.PSB, Pkt.OVF -> {
                    return at;
                }
                case Pkt.FUP, Pkt.TIP, Pkt.TIP_PGE, Pkt.TIP_PGD -> {
                    if (p.ipc == 3 || p.ipc == 6) {
                        return group >= 0 ? group : at;
                    }
                    group = -1;
                }
                case Pkt.TNT, Pkt.PSBEND -> group = -1;
                case Pkt.PAD, Pkt.TSC, Pkt.TMA, Pkt.MTC, Pkt.CYC, Pkt.CBR -> { }
                default -> {
                    if (group < 0) {
                        group = at;
                    }
                }
            }
        }
    }

    /** Timing packets change the trace's time even where the flow is lost: true for those the scan passes. */
    static boolean timing(int type) {
        return type == Pkt.TSC || type == Pkt.TMA || type == Pkt.MTC || type == Pkt.CYC || type == Pkt.CBR;
    }
}

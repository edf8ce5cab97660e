package ptfence.flow;

/**
 * The packets the event layer reads, one at a time, into a reused {@link Pkt}. Implemented over the
 * packet layer's cursor; the flow code never parses bytes itself.
 */
public interface PacketInput {
    /**
     * Decodes the packet at the current position into {@code p} and moves past it. Returns 0, or
     * {@link PtError#EOS} at the end, or a negative error for bytes that are not a packet (then {@code p.offset}
     * says where).
     */
    int next(Pkt p);

    /**
     * The counting decoder's TNT lane, for inputs that pass timing runs over: if the packets at the position are MTC,
     * CYC or PAD (maybe none) and then a TNT-8, reads up to and including that TNT into {@code p} and returns 0, or 2
     * if the run held an MTC; otherwise returns -1 and moves nothing ({@link #next} then reads on as usual).
     */
    default int nextTnt(Pkt p) {
        return -1;
    }

    /** Offset of the next packet {@link #next} will read. */
    long position();

    /** Moves to an offset (must be a packet boundary). */
    void seek(long offset);

    /** Offset of the first PSB at or after {@code from}, or -1. */
    long findPsb(long from);

    /** Offset of the last PSB strictly before {@code before}, or -1. */
    long findPsbBackward(long before);

    /** Trace size in bytes. */
    long size();

    /** The fields of one packet; which are meaningful depends on {@link #type}. */
    final class Pkt {
        public static final int PAD = 1;
        public static final int PSB = 2;
        public static final int PSBEND = 3;
        public static final int TNT = 4;
        public static final int TIP = 5;
        public static final int TIP_PGE = 6;
        public static final int TIP_PGD = 7;
        public static final int FUP = 8;
        public static final int MODE_EXEC = 9;
        public static final int MODE_TSX = 10;
        public static final int PIP = 11;
        public static final int VMCS = 12;
        public static final int OVF = 13;
        public static final int CBR = 14;
        public static final int TSC = 15;
        public static final int TMA = 16;
        public static final int MTC = 17;
        public static final int CYC = 18;
        public static final int STOP = 19;
        public static final int EXSTOP = 20;
        public static final int MWAIT = 21;
        public static final int PWRE = 22;
        public static final int PWRX = 23;
        public static final int PTW = 24;
        public static final int MNT = 25;
        public static final int CFE = 26;
        public static final int EVD = 27;
        public static final int TRIG = 28;
        public static final int BBP = 29;
        public static final int BEP = 30;
        public static final int BIP = 31;
        public static final int UNKNOWN = 32;

        public int type;
        public long offset;
        public int size;
        /** IP packets: compression (0 suppressed, 1 16-bit, 2 32-bit, 3 sext-48, 4 48-bit, 6 full) and payload. */
        public int ipc;
        public long ip;
        /** TNT: payload bits, oldest in the highest of {@link #tntSize} bits. */
        public long tntBits;
        public int tntSize;
        /** MODE.Exec: csl, csd, if; MODE.TSX: intx, abrt; PIP: nr; EXSTOP/PTW: ip bit; PWRE: hw. */
        public boolean flagA;
        public boolean flagB;
        public boolean flagC;
        /**
         * Generic payload: PIP cr3, VMCS base, TSC, MNT, PTW payload, CBR ratio, MTC ctc, CYC value,
         * MWAIT hints, PWRE state, PWRX last, TMA ctc, PTW plc in {@link #small}.
         */
        public long payload;
        /** Second payload: MWAIT ext, PWRE sub-state, PWRX deepest, TMA fc, PTW plc. */
        public long payload2;
        /**
         * PWRX: interrupt/store/autonomous bits (1/2/4). CYC: 0 for a real CYC; 1 for a run of MTC/CYC packets
         * whose time is not computed (CursorInput#skipTiming), 3 if the run held an MTC.
         */
        public int small;
    }
}

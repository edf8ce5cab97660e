package ptfence.packet;

import java.nio.ByteBuffer;

/**
 * Zero-allocation Intel PT packet decoder for hot loops: one mutable cursor over a {@link TraceSource};
 * {@link #next()} decodes the packet at {@link #position()} into primitive fields and advances.
 *
 * <pre>{@code
 * PacketCursor c = new PacketCursor(TraceSource.open(path));
 * if (c.syncForward()) {
 *     for (int t; (t = c.next()) != PacketCursor.END; ) {
 *         if (t == PacketCursor.TNT_8) use(c.tntBits(), c.tntCount());
 *     }
 * }
 * }</pre>
 *
 * <p>Decoding follows the Intel SDM Vol. 3 "Intel Processor Trace" packet formats with libipt's exact
 * validity rules, so offsets, sizes and errors agree with libipt's {@code pt_pkt_next}. A bad packet throws
 * {@link TraceDecodeException} with its offset and leaves {@link #position()} on it; call
 * {@link #syncForward()} to continue at the next PSB. Every accessor refers to the packet last returned by
 * {@link #next()}; accessors that do not apply to its type return 0/false.
 *
 * <p>Block packets (BBP/BIP/BEP, PEBS via PT) are decoded too: a BIP's opcode overlaps TNT-8, so BIP is
 * recognized only between a BBP and its BEP (the cursor tracks that block context). libipt does not know
 * these packets and reports them as unknown opcodes.
 *
 * <p>Not thread-safe; one cursor per thread. Files larger than a mapping window are read window by window.
 */
public final class PacketCursor {
    /** {@link #next()} reached the end of the trace exactly at a packet boundary. */
    public static final int END = -1;
    public static final int PAD = 0;
    public static final int PSB = 1;
    public static final int PSBEND = 2;
    public static final int TNT_8 = 3;
    public static final int TNT_64 = 4;
    public static final int TIP = 5;
    public static final int TIP_PGE = 6;
    public static final int TIP_PGD = 7;
    public static final int FUP = 8;
    public static final int PIP = 9;
    public static final int MODE_EXEC = 10;
    public static final int MODE_TSX = 11;
    public static final int TSC = 12;
    public static final int MTC = 13;
    public static final int CYC = 14;
    public static final int TMA = 15;
    public static final int CBR = 16;
    public static final int VMCS = 17;
    public static final int OVF = 18;
    public static final int MNT = 19;
    public static final int STOP = 20;
    public static final int PTW = 21;
    public static final int EXSTOP = 22;
    public static final int MWAIT = 23;
    public static final int PWRE = 24;
    public static final int PWRX = 25;
    public static final int CFE = 26;
    public static final int EVD = 27;
    public static final int TRIG = 28;
    public static final int BBP = 29;
    public static final int BIP = 30;
    public static final int BEP = 31;
    public static final int INVALID = 32;

    /** IP compressions (the IPBytes field of TIP/FUP packets). */
    public static final int IPC_SUPPRESSED = 0;
    public static final int IPC_UPDATE_16 = 1;
    public static final int IPC_UPDATE_32 = 2;
    public static final int IPC_SEXT_48 = 3;
    public static final int IPC_UPDATE_48 = 4;
    public static final int IPC_FULL = 6;

    /** Size of a PSB packet. */
    public static final int PSB_SIZE = 16;

    // Bits of flags().
    static final int F_NR = 1;          // PIP: non-root
    static final int F_CSL = 1 << 1;    // MODE.Exec
    static final int F_CSD = 1 << 2;
    static final int F_IF = 1 << 3;
    static final int F_INTX = 1 << 4;   // MODE.TSX
    static final int F_ABRT = 1 << 5;
    static final int F_IP = 1 << 6;     // EXSTOP, PTW, CFE, TRIG, BEP: an IP packet (FUP) follows
    static final int F_HW = 1 << 7;     // PWRE
    static final int F_WAKE_INT = 1 << 8;   // PWRX wake reasons
    static final int F_WAKE_ST = 1 << 9;
    static final int F_WAKE_HW = 1 << 10;
    static final int F_MULT = 1 << 11;  // TRIG
    static final int F_ICNTV = 1 << 12;
    static final int F_SZ4 = 1 << 13;   // BBP: BIPs carry 4-byte payloads

    /** Longest packet plus slack: a window is moved when fewer bytes than this remain in it. */
    private static final int MAX_PACKET = 64;

    private static final long PSB_WORD_A = 0x8202820282028202L;
    private static final long PSB_WORD_B = 0x0282028202820282L;
    private static final int[] IP_BYTES = {0, 2, 4, 6, 6, -1, 8, -1};
    private static final long[] BYTE_MASK = {0, 0xffL, 0xffffL, 0xffffffL, 0xffffffffL, 0xffffffffffL,
        0xffffffffffffL, 0xffffffffffffffL, -1L};

    private final TraceSource source;
    private final long end;
    private final boolean skd007;
    private final boolean skz84;

    private ByteBuffer buf;
    private boolean bufPrivate;
    private long winBase;
    private int winLimit;
    /** Window index below which at least MAX_PACKET bytes follow (the fast path in next()). */
    private int fastLimit;

    private long pos;
    private long sync = -1;
    private boolean positioned;

    private int type = END;
    private long offset;
    private int size;
    private long payload;
    private long aux;
    private int flags;
    private int count;
    private int blockPayload;   // 0: outside a block; 4 or 8: BIP payload size
    private long skipped;

    /** A cursor positioned at offset 0, not yet synchronized, without CPU errata workarounds. */
    public PacketCursor(TraceSource source) {
        this(source, Errata.NONE);
    }

    /** A cursor that applies the packet-level workarounds of {@code errata} (SKD007, SKZ84). */
    public PacketCursor(TraceSource source, Errata errata) {
        this.source = source;
        this.end = source.size();
        this.skd007 = errata.skd007();
        this.skz84 = errata.skz84();
        this.buf = source.privateWindow(0);
        this.bufPrivate = true;
        this.winBase = 0;
        this.winLimit = buf.limit();
        this.fastLimit = winLimit - MAX_PACKET;
    }

    public TraceSource source() {
        return source;
    }

    // ---------------------------------------------------------------------------------------------
    // Positioning

    /** Offset of the next packet {@link #next()} will decode. */
    public long position() {
        return pos;
    }

    /** Offset of the last PSB synchronized on or decoded, or -1. */
    public long syncOffset() {
        return sync;
    }

    /**
     * Positions the cursor at {@code offset} without checking for a PSB there (ptdump {@code --no-sync}):
     * decoding may start at any offset.
     *
     * @throws IndexOutOfBoundsException if the offset lies outside the trace
     */
    public void seek(long offset) {
        if (offset < 0 || offset > end) {
            throw new IndexOutOfBoundsException("offset 0x" + Long.toHexString(offset) + " outside trace of 0x"
                    + Long.toHexString(end) + " bytes");
        }
        pos = offset;
        sync = offset;
        positioned = true;
        blockPayload = 0;
        type = END;
    }

    /**
     * Moves to the next PSB after the current position (the current one if the cursor sits on the first
     * bytes of a PSB it has not synchronized on yet), as libipt's {@code pt_pkt_sync_forward} does.
     *
     * @return false if there is no further PSB (the cursor does not move)
     */
    public boolean syncForward() {
        long p = positioned ? pos : 0;
        if (p == sync) {
            p += PSB_SIZE;
        }
        // Start a little earlier to find a PSB a failed packet partly consumed.
        long start = p - Math.min(p, PSB_SIZE - 1);
        // The PSB payload fills at least one aligned 8-byte word (alignment relative to the trace start).
        for (long q = (start + 7) & ~7L; q + 8 <= end; q += 8) {
            long w = word(q);
            if (w != PSB_WORD_A && w != PSB_WORD_B) {
                continue;
            }
            long psb = findPsb(q);
            if (psb >= start) {
                setSync(psb);
                return true;
            }
        }
        return false;
    }

    /**
     * Moves to the last PSB that starts before the current position (before the end if the cursor was
     * never positioned), as libipt's {@code pt_pkt_sync_backward} does.
     *
     * @return false if there is none (the cursor does not move)
     */
    public boolean syncBackward() {
        long p = positioned ? pos : end;
        for (long q = (p & ~7L) - 8; q >= 0; q -= 8) {
            long w = word(q);
            if (w != PSB_WORD_A && w != PSB_WORD_B) {
                continue;
            }
            long psb = findPsb(q);
            if (psb >= 0) {
                setSync(psb);
                return true;
            }
        }
        return false;
    }

    private void setSync(long psb) {
        sync = psb;
        pos = psb;
        positioned = true;
        blockPayload = 0;
        type = END;
    }

    /** Given a word of PSB pattern at q, the start of the PSB it belongs to, or -1. */
    private long findPsb(long q) {
        long r = q;
        if (byteAt(r) != 0x02) {
            r++;
        }
        while (r + 1 < end && byteAt(r) == 0x02 && byteAt(r + 1) == 0x82) {
            r += 2;
        }
        r -= PSB_SIZE;
        if (r < 0 || r + PSB_SIZE > end) {
            return -1;
        }
        for (int k = 0; k < PSB_SIZE; k += 2) {
            if (byteAt(r + k) != 0x02 || byteAt(r + k + 1) != 0x82) {
                return -1;
            }
        }
        return r;
    }

    private int byteAt(long off) {
        long rel = off - winBase;
        if (rel < 0 || rel >= winLimit) {
            map(off, 1);
            rel = off - winBase;
        }
        return buf.get((int) rel) & 0xff;
    }

    private long word(long off) {
        long rel = off - winBase;
        if (rel < 0 || rel + 8 > winLimit) {
            map(off, 8);
            rel = off - winBase;
        }
        return buf.getLong((int) rel);
    }

    /** Maps a window holding [off, off+len), placed so that scans in either direction stay inside it. */
    private void map(long off, int len) {
        int w = source.windowSize();
        long start = off < winBase ? Math.max(0, off + len - w + MAX_PACKET) : off;
        start = Math.max(0, Math.min(start, off));
        ByteBuffer old = buf;
        boolean oldPrivate = bufPrivate;
        buf = source.privateWindow(start);
        bufPrivate = true;
        winBase = start;
        winLimit = buf.limit();
        fastLimit = winLimit - MAX_PACKET;
        if (oldPrivate) {
            // Nothing else refers to the old window (it never leaves this cursor): unmap it right away so a
            // walk over a huge file keeps one window mapped, not all of them until the next GC.
            source.release(old);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Decoding

    /**
     * Decodes the packet at {@link #position()} and advances past it.
     *
     * @return the packet's type code (one of this class's constants), or {@link #END} at the end of the trace
     * @throws TraceDecodeException for an unknown opcode, a malformed payload or a packet cut off by the
     *     end of the trace; the position stays on the bad packet
     */
    public int next() {
        long p = pos;
        long rel = p - winBase;
        if (rel >= 0 && rel < fastLimit) {
            // At least MAX_PACKET bytes remain in the window: no packet can be cut off here.
            int i = (int) rel;
            int opc = buf.get(i) & 0xff;
            int t = FAST_TYPE[opc];
            if (t == TNT_8 && blockPayload == 0) {
                return tnt8(p, opc);
            }
            if (t >= 0 && blockPayload == 0) {
                // TNT-8, TIP/TIP.PGE/TIP.PGD/FUP and PAD: one-byte opcodes whose size and fields come straight
                // from tables, without branching on the packet type (mixed streams would mispredict). Reading
                // 8 bytes is safe here (MAX_PACKET bytes remain); the mask keeps the IP payload bytes only.
                payload = (buf.getLong(i + 1) & FAST_MASK[opc]) | FAST_BITS[opc];
                count = FAST_COUNT[opc];
                int sz = FAST_SIZE[opc];
                offset = p;
                pos = p + sz;
                size = sz;
                type = t;
                return t;
            }
            return decode(buf, i, MAX_PACKET);
        }
        return nextNearEdge();
    }

    /**
     * Decodes every remaining packet without exposing them, for validating a trace ({@code --quiet}):
     * the same checks as {@link #next()}, but packets whose size follows from the opcode alone (TNT-8,
     * TIP family, FUP, PAD) are only stepped over. Returns normally at the end of the trace.
     *
     * @return the number of packets decoded by this call (also available as {@link #skipped()}, which is
     *     what to read when this throws)
     * @throws TraceDecodeException as {@link #next()}; the position stays on the bad packet
     */
    public long skipAll() {
        skipped = 0;
        short[] pairs = Pairs.FAST_PAIR;
        for (;;) {
            long rel = pos - winBase;
            if (rel >= 0 && rel < fastLimit && blockPayload == 0) {
                ByteBuffer b = buf;
                int i = (int) rel;
                int lim = fastLimit;
                long n = 0;
                while (i < lim) {
                    long w = b.getLong(i);
                    if ((w & 0x0101010101010101L) == 0) {
                        // Eight even bytes none of which is 0x00 (PAD) or 0x02 (extended opcode): eight TNT-8.
                        long v = w & 0xfdfdfdfdfdfdfdfdL;
                        if (((v - 0x0101010101010101L) & ~v & 0x8080808080808080L) == 0) {
                            i += 8;
                            n += 8;
                            continue;
                        }
                    }
                    // One or two table-sized packets per step (a TNT-8 and the packet after it), which halves
                    // the load-to-load dependency chain on mixed TNT/TIP streams.
                    int e = pairs[(int) w & 0xffff];
                    if (e == 0) {
                        break;
                    }
                    i += e & 0xff;
                    n += e >>> 8;
                }
                pos = winBase + i;
                skipped += n;
            }
            if (next() == END) {
                return skipped;
            }
            skipped++;
        }
    }

    /**
     * Steps over the MTC, CYC and PAD packets at the position, as {@link #next()} would decode them, for a decoder
     * that computes no time from them. Stops before any other packet, and before any it leaves to {@link #next()}
     * (near the window's end, a CYC longer than 9 bytes, a 2-byte CYC that SKD007 makes an OVF, inside a
     * BBP block). Returns 0 if it moved nothing, else 1, or 3 if it passed an MTC.
     */
    public int skipTiming() {
        long rel = pos - winBase;
        if (rel < 0 || rel >= fastLimit || blockPayload != 0) {
            return 0;
        }
        int start = (int) rel;
        long r = passTiming(buf, start, fastLimit);
        int i = (int) r;
        if (i == start) {
            return 0;
        }
        pos = winBase + i;
        return 1 | (int) (r >>> 32);
    }

    /**
     * The counting decoder's TNT lane: steps over the MTC, CYC and PAD packets at the position (as {@link #skipTiming})
     * and, if a TNT-8 follows, decodes it as {@link #next()} would (its fields are then the current packet's).
     * Returns -1, with the position unchanged, if anything else follows or the lane cannot tell here (near the window's
     * end, inside a BBP block, a packet {@link #skipTiming} leaves to {@link #next()}); else 0, or 2 if it passed an MTC.
     */
    public int nextTntAfterTiming() {
        long rel = pos - winBase;
        if (rel < 0 || rel >= fastLimit || blockPayload != 0) {
            return -1;
        }
        ByteBuffer b = buf;
        int i = (int) rel;
        int opc = b.get(i) & 0xff;
        long r = 0;
        if (FAST_TYPE[opc] != TNT_8) {
            r = passTiming(b, i, fastLimit);
            i = (int) r;
            if (i >= fastLimit) {
                return -1;
            }
            opc = b.get(i) & 0xff;
            if (FAST_TYPE[opc] != TNT_8) {
                return -1;
            }
        }
        tnt8(winBase + i, opc);
        return (int) (r >>> 32);
    }

    /** The TNT-8 with opcode {@code opc} at offset {@code p} is the current packet. */
    private int tnt8(long p, int opc) {
        offset = p;
        pos = p + 1;
        payload = TNT8_BITS[opc];
        count = TNT8_COUNT[opc];
        size = 1;
        type = TNT_8;
        return TNT_8;
    }

    /**
     * Steps over the PAD, MTC and CYC packets from window index {@code i} (below {@code lim}, with MAX_PACKET bytes
     * after it) as {@link #timingSize} allows; returns the index of the first packet it did not pass (at least
     * {@code lim} if it ran to it), with 2 in the upper half if it passed an MTC.
     */
    private long passTiming(ByteBuffer b, int i, int lim) {
        byte[] steps = TIMING_STEP;
        int seen = 0;
        while (i < lim) {
            // Two bytes at a time through a table (no branch per packet kind: real runs mix MTC and CYC at random).
            long w = b.getLong(i);
            int k = 0;
            int st;
            while (k <= 6 && (st = steps[(int) (w >>> (k << 3)) & 0xffff]) != 0) {
                seen |= st;
                k += st & 3;
            }
            i += k;
            if (k <= 6) {
                int opc = b.get(i) & 0xff;
                int n = timingSize(b, i, opc); // a longer CYC, or not a timing packet at all
                if (n == 0) {
                    break;
                }
                i += n;
            }
        }
        return i | (long) (seen >>> 2 << 1) << 32;
    }

    /**
     * The size of the PAD, MTC or CYC packet at window index {@code i} (opcode {@code opc}) as {@link #skipTiming}
     * steps over it, or 0 for any other packet and for those it leaves to {@link #next()}: a CYC longer than 9
     * bytes (the parser reports it), a 2-byte CYC that SKD007 turns into an OVF (second byte 0x02, then 0xf3).
     */
    private int timingSize(ByteBuffer b, int i, int opc) {
        if (opc == 0x00) {
            return 1;
        }
        if (opc == 0x59) {
            return 2;
        }
        if ((opc & 3) != 3) {
            return 0;
        }
        if ((opc & 4) == 0) {
            return 1;
        }
        int k = 1;
        while (k < 10 && (b.get(i + k) & 1) != 0) {
            k++;
        }
        if (k == 10 || (skd007 && k == 1 && b.get(i + 1) == 0x02 && (b.get(i + 2) & 0xff) == 0xf3)) {
            return 0;
        }
        return k + 1;
    }

    /**
     * passTiming's table over two bytes (the first in the low byte): how many bytes the one or two PAD, MTC or CYC
     * packets that start there take (a one-byte packet and the MTC opcode after it: 3, the MTC's payload unread), | 4
     * if one is an MTC; 0 if the first is anything else, and for a two-byte CYC whose second byte is 0x02 (SKD007 may
     * make it an OVF: {@link #timingSize} decides). Real timing runs alternate CYC and MTC: a step per pair halves the
     * chain of dependent loads.
     */
    private static final byte[] TIMING_STEP = new byte[65536];

    /** One entry of {@link #TIMING_STEP}: the packets at {@code b0} and {@code b1}. */
    private static int timingStep(int b0, int b1) {
        boolean oneByte0 = b0 == 0x00 || (b0 & 7) == 3;
        if (oneByte0) {
            if (b1 == 0x59) {
                return 3 | 4;
            }
            return b1 == 0x00 || (b1 & 7) == 3 ? 2 : 1;
        }
        if (b0 == 0x59) {
            return 2 | 4;
        }
        if ((b0 & 7) == 7 && (b1 & 1) == 0 && b1 != 0x02) {
            return 2;
        }
        return 0;
    }

    static {
        // An entry depends on the second byte only through its kind (MTC, PAD, one-byte CYC, 0x02, other even, other
        // odd): one row per kind, copied to every second byte of that kind, so that the start of every decoder does not
        // run 65,536 interpreted iterations.
        int[] kinds = {0x59, 0x00, 0x03, 0x02, 0x04, 0x01};
        byte[][] rows = new byte[kinds.length][256];
        for (int k = 0; k < kinds.length; k++) {
            for (int b0 = 0; b0 < 256; b0++) {
                rows[k][b0] = (byte) timingStep(b0, kinds[k]);
            }
        }
        for (int b1 = 0; b1 < 256; b1++) {
            int k = b1 == 0x59 ? 0 : b1 == 0x00 ? 1 : (b1 & 7) == 3 ? 2 : b1 == 0x02 ? 3 : (b1 & 1) == 0 ? 4 : 5;
            System.arraycopy(rows[k], 0, TIMING_STEP, b1 << 8, 256);
        }
    }

    /** Packets decoded by the last {@link #skipAll()} (up to the error if it threw). */
    public long skipped() {
        return skipped;
    }

    /** The last bytes of a window or of the trace: move the window or check every length. */
    private int nextNearEdge() {
        long p = pos;
        if (p >= end) {
            type = END;
            offset = p;
            size = 0;
            return END;
        }
        long rel = p - winBase;
        if (rel < 0 || rel + MAX_PACKET > winLimit) {
            if (rel < 0 || winBase + winLimit < end) {
                map(p, MAX_PACKET);
            }
            rel = p - winBase;
        }
        int i = (int) rel;
        return decode(buf, i, (int) Math.min(winLimit - (long) i, end - p));
    }

    /** The one packet parser: decodes the packet at window index i with avail bytes left in the trace. */
    private int decode(ByteBuffer b, int i, int avail) {
        int opc = b.get(i) & 0xff;
        offset = winBase + i;
        switch (KIND[opc]) {
            case K_TNT8:
                if (blockPayload != 0 && (opc & 7) == 4) {
                    return bip(b, i, avail, opc);
                }
                payload = TNT8_BITS[opc];
                count = TNT8_COUNT[opc];
                type = TNT_8;
                size = 1;
                pos = offset + 1;
                return TNT_8;
            case K_IP: {
                int n = IP_BYTES[opc >>> 5];
                if (n < 0) {
                    throw error(DecodeError.BAD_PACKET);
                }
                need(avail, 1 + n);
                payload = n == 0 ? 0 : read(b, i + 1, n);
                count = opc >>> 5;
                int t = IP_TYPE[opc & 0x1f];
                type = t;
                size = 1 + n;
                pos = offset + 1 + n;
                return t;
            }
            default:
                return decodeOther(b, i, avail, opc);
        }
    }

    private int decodeOther(ByteBuffer b, int i, int avail, int opc) {
        switch (KIND[opc]) {
            case K_PAD:
                return done(PAD, 1);
            case K_EXT:
                return ext(b, i, avail);
            case K_CYC:
                return cyc(b, i, avail, opc);
            case K_MODE: {
                need(avail, 2);
                int m = b.get(i + 1) & 0xff;
                int leaf = m & 0xe0;
                if (leaf == 0x00) {
                    flags = ((m & 1) != 0 ? F_CSL : 0) | ((m & 2) != 0 ? F_CSD : 0) | ((m & 4) != 0 ? F_IF : 0);
                    return done(MODE_EXEC, 2);
                }
                if (leaf == 0x20) {
                    flags = ((m & 1) != 0 ? F_INTX : 0) | ((m & 2) != 0 ? F_ABRT : 0);
                    return done(MODE_TSX, 2);
                }
                throw error(DecodeError.BAD_PACKET);
            }
            case K_TSC:
                need(avail, 8);
                payload = read(b, i + 1, 7);
                return done(TSC, 8);
            case K_MTC:
                need(avail, 2);
                payload = b.get(i + 1) & 0xff;
                return done(MTC, 2);
            case K_TRIG: {
                need(avail, 3);
                int f = b.get(i + 1) & 0xff;
                int sz = 3;
                aux = 0;
                if ((f & 0x40) != 0) {
                    need(avail, 5);
                    aux = read(b, i + 3, 2);
                    sz = 5;
                }
                flags = ((f & 0x80) != 0 ? F_IP : 0) | ((f & 0x40) != 0 ? F_ICNTV : 0) | ((f & 0x20) != 0 ? F_MULT : 0);
                payload = b.get(i + 2) & 0xff;
                return done(TRIG, sz);
            }
            default:
                throw error(DecodeError.BAD_OPCODE);
        }
    }

    // The one-byte opcode table (Intel SDM Vol. 3, "Packet Definitions"), resolved once per opcode value.
    private static final int K_BAD = 0;
    private static final int K_TNT8 = 1;
    private static final int K_PAD = 2;
    private static final int K_EXT = 3;
    private static final int K_CYC = 4;
    private static final int K_IP = 5;
    private static final int K_MODE = 6;
    private static final int K_TSC = 7;
    private static final int K_MTC = 8;
    private static final int K_TRIG = 9;
    private static final byte[] KIND = new byte[256];
    private static final long[] TNT8_BITS = new long[256];
    private static final int[] TNT8_COUNT = new int[256];
    private static final int[] IP_TYPE = new int[32];
    private static final byte[] FAST_TYPE = new byte[256];
    private static final int[] FAST_SIZE = new int[256];
    private static final int[] FAST_COUNT = new int[256];
    private static final long[] FAST_MASK = new long[256];
    /** Payload bits the opcode byte itself carries (TNT-8 bits, a one-byte CYC's count). */
    private static final long[] FAST_BITS = new long[256];

    /**
     * For the first two bytes of a packet: (packets << 8) | bytes of the one or two fast packets there. Only
     * {@link #skipAll()} reads it; built on first use, since filling it takes ~50 ms of a decoder's start.
     */
    private static final class Pairs {
        static final short[] FAST_PAIR = new short[65536];

        static {
            for (int w = 0; w < 65536; w++) {
                int first = FAST_SIZE[w & 0xff];
                int second = FAST_SIZE[w >>> 8];
                if (first == 0) {
                    FAST_PAIR[w] = 0;
                } else if (first == 1 && second != 0) {
                    FAST_PAIR[w] = (short) ((2 << 8) | (1 + second));
                } else {
                    FAST_PAIR[w] = (short) ((1 << 8) | first);
                }
            }
        }
    }

    static {
        for (int opc = 0; opc < 256; opc++) {
            int k;
            if (opc == 0x00) {
                k = K_PAD;
            } else if (opc == 0x02) {
                k = K_EXT;
            } else if (opc == 0x99) {
                k = K_MODE;
            } else if (opc == 0x19) {
                k = K_TSC;
            } else if (opc == 0x59) {
                k = K_MTC;
            } else if (opc == 0xd9) {
                k = K_TRIG;
            } else if ((opc & 3) == 3) {
                k = K_CYC;
            } else if ((opc & 1) == 0) {
                k = K_TNT8;
                int bits = opc >>> 1;
                int n = 31 - Integer.numberOfLeadingZeros(bits);
                TNT8_COUNT[opc] = n;
                TNT8_BITS[opc] = bits & ~(1 << n);
            } else {
                int low = opc & 0x1f;
                k = low == 0x0d || low == 0x11 || low == 0x01 || low == 0x1d ? K_IP : K_BAD;
            }
            KIND[opc] = (byte) k;
        }
        IP_TYPE[0x0d] = TIP;
        IP_TYPE[0x11] = TIP_PGE;
        IP_TYPE[0x01] = TIP_PGD;
        IP_TYPE[0x1d] = FUP;
        for (int opc = 0; opc < 256; opc++) {
            FAST_TYPE[opc] = -1;
            if (KIND[opc] == K_TNT8) {
                FAST_TYPE[opc] = TNT_8;
                FAST_SIZE[opc] = 1;
                FAST_COUNT[opc] = TNT8_COUNT[opc];
                FAST_BITS[opc] = TNT8_BITS[opc];
            } else if (KIND[opc] == K_MTC) {
                // timing-heavy traces are mostly MTC and CYC: keep them off the general parser
                FAST_TYPE[opc] = MTC;
                FAST_SIZE[opc] = 2;
                FAST_MASK[opc] = 0xff;
            } else if (KIND[opc] == K_CYC && (opc & 4) == 0) {
                FAST_TYPE[opc] = CYC; // one byte: no continuation (and never SKD007's look-alike, which has two)
                FAST_SIZE[opc] = 1;
                FAST_BITS[opc] = opc >>> 3;
            } else if (KIND[opc] == K_PAD) {
                FAST_TYPE[opc] = PAD;
                FAST_SIZE[opc] = 1;
            } else if (KIND[opc] == K_IP && IP_BYTES[opc >>> 5] >= 0) {
                int n = IP_BYTES[opc >>> 5];
                FAST_TYPE[opc] = (byte) IP_TYPE[opc & 0x1f];
                FAST_SIZE[opc] = 1 + n;
                FAST_COUNT[opc] = opc >>> 5;
                FAST_MASK[opc] = BYTE_MASK[n];
            }
        }
    }

    private int done(int t, int sz) {
        type = t;
        size = sz;
        pos = offset + sz;
        return t;
    }

    private void need(int avail, int n) {
        if (avail < n) {
            throw error(DecodeError.TRUNCATED);
        }
    }

    private TraceDecodeException error(DecodeError e) {
        type = END;
        return new TraceDecodeException(e, offset);
    }

    /** Little-endian value of n (1..8) bytes at i; the caller has checked that they are present. */
    private static long read(ByteBuffer b, int i, int n) {
        if (b.limit() - i >= 8) {
            return b.getLong(i) & BYTE_MASK[n];
        }
        long v = 0;
        for (int k = n - 1; k >= 0; k--) {
            v = (v << 8) | (b.get(i + k) & 0xff);
        }
        return v;
    }

    private int cyc(ByteBuffer b, int i, int avail, int opc) {
        long value = opc >>> 3;
        boolean more = (opc & 4) != 0;
        int shl = 5;
        int k = 1;
        while (more) {
            need(avail, k + 1);
            long bits = b.get(i + k) & 0xff;
            k++;
            more = (bits & 1) != 0;
            bits = (bits >>> 1) << shl;
            shl += 7;
            if (shl > 64) {
                throw error(DecodeError.BAD_PACKET);
            }
            value |= bits;
        }
        payload = value;
        if (skd007 && k == 2 && (value & 0xffe0) == 0x20 && offset + 2 < end && (b.get(i + 2) & 0xff) == 0xf3) {
            // SKD007: a 2-byte CYC whose payload looks like an ext opcode, followed by 0xf3, is really an OVF
            // that lost its 0x02; libipt reports the OVF at the CYC's offset and resumes after the 0xf3.
            payload = 0;
            type = OVF;
            size = 2;
            pos = offset + 3;
            return OVF;
        }
        return done(CYC, k);
    }

    private int bip(ByteBuffer b, int i, int avail, int opc) {
        int n = blockPayload;
        need(avail, 1 + n);
        aux = opc >>> 3;
        payload = read(b, i + 1, n);
        return done(BIP, 1 + n);
    }

    private int ext(ByteBuffer b, int i, int avail) {
        need(avail, 2);
        int ext = b.get(i + 1) & 0xff;
        switch (ext) {
            case 0x82: {
                need(avail, PSB_SIZE);
                for (int k = 2; k < PSB_SIZE; k += 2) {
                    if (b.get(i + k) != 0x02 || b.get(i + k + 1) != (byte) 0x82) {
                        throw error(DecodeError.BAD_PACKET);
                    }
                }
                sync = offset;
                blockPayload = 0;
                return done(PSB, PSB_SIZE);
            }
            case 0xa3: {
                need(avail, 8);
                long v = read(b, i + 2, 6);
                int n = 63 - Long.numberOfLeadingZeros(v);
                if (n <= 0) {
                    throw error(DecodeError.BAD_PACKET);
                }
                payload = v & ~(1L << n);
                count = n;
                return done(TNT_64, 8);
            }
            case 0x43: {
                need(avail, 8);
                long v = read(b, i + 2, 6);
                flags = (v & 1) != 0 ? F_NR : 0;
                payload = (v >>> 1) << 5;
                return done(PIP, 8);
            }
            case 0xf3:
                blockPayload = 0;
                return done(OVF, 2);
            case 0x23:
                return done(PSBEND, 2);
            case 0x03:
                need(avail, 4);
                payload = b.get(i + 2) & 0xff;
                return done(CBR, 4);
            case 0x73: {
                need(avail, 7);
                int ctc = (b.get(i + 2) & 0xff) | (b.get(i + 3) & 0xff) << 8;
                int fc = (b.get(i + 5) & 0xff) | (b.get(i + 6) & 0xff) << 8;
                if ((fc & ~0x1ff) != 0 || b.get(i + 4) != 0) {
                    if (skz84) {
                        // SKZ84: VMX TSC scaling corrupts TMA; libipt skips it as an invalid 8-byte packet.
                        return done(INVALID, 8);
                    }
                    throw error(DecodeError.BAD_PACKET);
                }
                payload = ctc;
                aux = fc;
                return done(TMA, 7);
            }
            case 0x83:
                return done(STOP, 2);
            case 0xc8:
                need(avail, 7);
                payload = read(b, i + 2, 5) << 12;
                return done(VMCS, 7);
            case 0xc3: {
                need(avail, 3);
                if ((b.get(i + 2) & 0xff) != 0x88) {
                    throw error(DecodeError.BAD_OPCODE);
                }
                need(avail, 11);
                payload = read(b, i + 3, 8);
                return done(MNT, 11);
            }
            case 0x62:
            case 0xe2:
                flags = ext == 0xe2 ? F_IP : 0;
                return done(EXSTOP, 2);
            case 0xc2:
                need(avail, 10);
                payload = read(b, i + 2, 4);
                aux = read(b, i + 6, 4);
                return done(MWAIT, 10);
            case 0x22: {
                need(avail, 4);
                int v = (int) read(b, i + 2, 2);
                count = v;
                flags = (v & 0x8) != 0 ? F_HW : 0;
                return done(PWRE, 4);
            }
            case 0xa2: {
                need(avail, 7);
                long v = read(b, i + 2, 5);
                count = (int) v;
                flags = ((v & 0x100) != 0 ? F_WAKE_INT : 0) | ((v & 0x400) != 0 ? F_WAKE_ST : 0)
                        | ((v & 0x800) != 0 ? F_WAKE_HW : 0);
                return done(PWRX, 7);
            }
            case 0x13: {
                need(avail, 4);
                int t = b.get(i + 2) & 0xff;
                aux = t & 0x1f;
                flags = (t & 0x80) != 0 ? F_IP : 0;
                payload = b.get(i + 3) & 0xff;
                return done(CFE, 4);
            }
            case 0x53:
                need(avail, 11);
                aux = b.get(i + 2) & 0x1f;
                payload = read(b, i + 3, 8);
                return done(EVD, 11);
            case 0x63: {
                need(avail, 3);
                int t = b.get(i + 2) & 0xff;
                aux = t & 0x1f;
                flags = (t & 0x80) != 0 ? F_SZ4 : 0;
                blockPayload = (t & 0x80) != 0 ? 4 : 8;
                return done(BBP, 3);
            }
            case 0x33:
            case 0xb3:
                flags = ext == 0xb3 ? F_IP : 0;
                blockPayload = 0;
                return done(BEP, 2);
            default:
                if ((ext & 0x1f) == 0x12) {
                    int plc = (ext >>> 5) & 3;
                    int n = plc == 0 ? 4 : plc == 1 ? 8 : -1;
                    if (n < 0) {
                        throw error(DecodeError.BAD_PACKET);
                    }
                    need(avail, 2 + n);
                    count = plc;
                    flags = (ext & 0x80) != 0 ? F_IP : 0;
                    payload = read(b, i + 2, n);
                    return done(PTW, 2 + n);
                }
                throw error(DecodeError.BAD_OPCODE);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // The current packet

    /** Type code of the current packet (a constant of this class), or {@link #END}. */
    public int type() {
        return type;
    }

    /** The current packet's type as an enum (not for hot loops; use {@link #type()}). */
    public PacketType packetType() {
        return PacketType.ofCode(type);
    }

    /** Offset of the current packet. */
    public long offset() {
        return offset;
    }

    /** Size of the current packet in bytes. */
    public int size() {
        return size;
    }

    /** TIP/TIP.PGE/TIP.PGD/FUP: the IP compression, one of the {@code IPC_} constants. */
    public int ipc() {
        return count;
    }

    /** TIP/TIP.PGE/TIP.PGD/FUP: the raw IP payload bytes (not yet combined with the last IP). */
    public long ipPayload() {
        return payload;
    }

    /** TNT-8/TNT-64: number of branch bits (1..47). */
    public int tntCount() {
        return count;
    }

    /** TNT-8/TNT-64: the branch bits without the stop bit; the oldest branch is bit {@code tntCount()-1}; 1 = taken. */
    public long tntBits() {
        return payload;
    }

    /** TSC: the 56-bit timestamp. */
    public long tsc() {
        return payload;
    }

    /** MTC: the 8-bit CTC payload. */
    public int mtcCtc() {
        return (int) payload;
    }

    /** CYC: the cycle count. */
    public long cycles() {
        return payload;
    }

    /** TMA: the 16-bit CTC value. */
    public int tmaCtc() {
        return (int) payload;
    }

    /** TMA: the 9-bit fast counter. */
    public int tmaFc() {
        return (int) aux;
    }

    /** CBR: the core:bus ratio. */
    public int cbrRatio() {
        return (int) payload;
    }

    /** PIP: the CR3 value. */
    public long cr3() {
        return payload;
    }

    /** PIP: the non-root (NR) bit. */
    public boolean nonRoot() {
        return (flags & F_NR) != 0;
    }

    /** VMCS: the VMCS base address. */
    public long vmcsBase() {
        return payload;
    }

    /** MNT: the 64-bit maintenance payload. */
    public long mntPayload() {
        return payload;
    }

    /** MODE.Exec: CS.L. */
    public boolean csl() {
        return (flags & F_CSL) != 0;
    }

    /** MODE.Exec: CS.D. */
    public boolean csd() {
        return (flags & F_CSD) != 0;
    }

    /** MODE.Exec: RFLAGS.IF. */
    public boolean interruptFlag() {
        return (flags & F_IF) != 0;
    }

    /** MODE.TSX: in transaction. */
    public boolean intx() {
        return (flags & F_INTX) != 0;
    }

    /** MODE.TSX: transaction aborted. */
    public boolean abrt() {
        return (flags & F_ABRT) != 0;
    }

    /** EXSTOP, PTW, CFE, TRIG, BEP: the IP bit (a FUP with the instruction's IP follows). */
    public boolean ipBit() {
        return (flags & F_IP) != 0;
    }

    /** PTW: the payload (4 or 8 bytes). */
    public long ptwPayload() {
        return payload;
    }

    /** PTW: the payload-length code (0: 4 bytes, 1: 8 bytes). */
    public int ptwPlc() {
        return count;
    }

    /** MWAIT: the hints (EAX) value. */
    public int mwaitHints() {
        return (int) payload;
    }

    /** MWAIT: the extensions (ECX) value. */
    public int mwaitExt() {
        return (int) aux;
    }

    /** PWRE: the resolved thread C-state (raw 4-bit field). */
    public int pwreState() {
        return (count >>> 12) & 0xf;
    }

    /** PWRE: the resolved thread sub C-state (raw 4-bit field). */
    public int pwreSubState() {
        return (count >>> 8) & 0xf;
    }

    /** PWRE: the C-state request was initiated by hardware. */
    public boolean pwreHw() {
        return (flags & F_HW) != 0;
    }

    /** PWRX: the last core C-state (raw 4-bit field). */
    public int pwrxLast() {
        return (count >>> 4) & 0xf;
    }

    /** PWRX: the deepest core C-state (raw 4-bit field). */
    public int pwrxDeepest() {
        return count & 0xf;
    }

    /** PWRX: woken by an interrupt. */
    public boolean pwrxInterrupt() {
        return (flags & F_WAKE_INT) != 0;
    }

    /** PWRX: woken by a store to the monitored address. */
    public boolean pwrxStore() {
        return (flags & F_WAKE_ST) != 0;
    }

    /** PWRX: woken autonomously by hardware. */
    public boolean pwrxAutonomous() {
        return (flags & F_WAKE_HW) != 0;
    }

    /** CFE: the event type (5 bits). */
    public int cfeType() {
        return (int) aux;
    }

    /** CFE: the vector. */
    public int cfeVector() {
        return (int) payload;
    }

    /** EVD: the event data type (5 bits). */
    public int evdType() {
        return (int) aux;
    }

    /** EVD: the 64-bit payload. */
    public long evdPayload() {
        return payload;
    }

    /** TRIG: the trigger bit vector. */
    public int trigTrbv() {
        return (int) payload;
    }

    /** TRIG: the instruction-count field is valid. */
    public boolean trigIcntValid() {
        return (flags & F_ICNTV) != 0;
    }

    /** TRIG: the instruction count (if {@link #trigIcntValid()}). */
    public int trigIcnt() {
        return (int) aux;
    }

    /** TRIG: multiple triggers. */
    public boolean trigMult() {
        return (flags & F_MULT) != 0;
    }

    /** BBP: the block type. */
    public int bbpType() {
        return (int) aux;
    }

    /** BBP: the BIPs of this block carry 4-byte (true) or 8-byte payloads. */
    public boolean bbpSize4() {
        return (flags & F_SZ4) != 0;
    }

    /** BIP: the item id. */
    public int bipId() {
        return (int) aux;
    }

    /** BIP: the item payload. */
    public long bipPayload() {
        return payload;
    }

    /** An immutable record of the current packet. */
    public Packet packet() {
        return Packet.of(this);
    }

    /** Copies the current packet's raw bytes into {@code dst} (at least {@link #size()} long). */
    public void copyRaw(byte[] dst) {
        for (int k = 0; k < size; k++) {
            dst[k] = (byte) byteAt(offset + k);
        }
    }
}

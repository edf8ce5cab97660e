package ptfence.flow;

import java.nio.ByteBuffer;
import ptfence.packet.Errata;
import ptfence.packet.PacketCursor;
import ptfence.packet.TraceDecodeException;
import ptfence.packet.TraceSource;

/** The flow's view of the packet layer: {@link PacketCursor} packets copied into the flow's {@link Pkt}. */
public final class CursorInput implements PacketInput {
    private final PacketCursor c;
    private final long size;
    /** See {@link #skipTiming}. */
    private boolean skipTiming;
    /** A packet the cursor already read past a timing run, handed out by the next {@link #next}; -2 if none. */
    private int pending = NONE;
    private long pendingStart;
    private static final int NONE = -2;

    public CursorInput(TraceSource source, Errata errata) {
        this.c = new PacketCursor(source, errata);
        this.size = source.size();
    }

    public static CursorInput of(ByteBuffer trace, Errata errata) {
        return new CursorInput(TraceSource.of(trace), errata);
    }

    /**
     * For decodes that print no time (FlowConfig#timingSkippable): each run of MTC and CYC packets (with the PADs
     * among and after them) comes as one CYC packet spanning the run, {@link Pkt#small} 1 (3 if the run held an
     * MTC), whose time the event layer does not compute. Offsets and positions stay those of the packets
     * themselves (the run's packet starts where its first MTC/CYC does), so error offsets and resync points do
     * not move; MTC and CYC outside of TMA cannot fail (TimeTracker), so no error is lost.
     */
    public CursorInput skipTiming(boolean on) {
        this.skipTiming = on;
        return this;
    }

    @Override
    public int next(Pkt p) {
        int t;
        try {
            if (pending != NONE) {
                t = pending;
                pending = NONE;
            } else {
                t = c.next();
                if (skipTiming && (t == PacketCursor.MTC || t == PacketCursor.CYC)) {
                    return timingRun(p, t == PacketCursor.MTC);
                }
            }
        } catch (TraceDecodeException e) {
            return error(p, e);
        }
        if (t == PacketCursor.END) {
            p.offset = c.position();
            p.size = 0;
            return PtError.EOS;
        }
        p.offset = c.offset();
        p.size = c.size();
        // The packets of the hot loop here, the rest in fill(): small enough for the JIT to inline into the
        // event layer (the whole method was too big to inline).
        if (t == PacketCursor.TNT_8) {
            p.type = Pkt.TNT;
            p.tntBits = c.tntBits();
            p.tntSize = c.tntCount();
            return 0;
        }
        if (t >= PacketCursor.TIP && t <= PacketCursor.FUP) {
            p.type = t; // TIP, TIP.PGE, TIP.PGD, FUP: the same codes in Pkt
            p.ipc = c.ipc();
            p.ip = c.ipPayload();
            return 0;
        }
        fill(p, t);
        return 0;
    }

    @Override
    public int nextTnt(Pkt p) {
        if (!skipTiming || pending != NONE) {
            return -1;
        }
        int r = c.nextTntAfterTiming();
        if (r >= 0) {
            p.type = Pkt.TNT;
            p.offset = c.offset();
            p.size = 1;
            p.tntBits = c.tntBits();
            p.tntSize = c.tntCount();
        }
        return r;
    }

    private static int error(Pkt p, TraceDecodeException e) {
        p.offset = e.offset();
        p.size = 0;
        return switch (e.error()) {
            case BAD_OPCODE -> PtError.BAD_OPC;
            case BAD_PACKET -> PtError.BAD_PACKET;
            case TRUNCATED -> PtError.EOS;
            case NO_SYNC -> PtError.NOSYNC;
        };
    }

    private void fill(Pkt p, int t) {
        switch (t) {
            case PacketCursor.PAD -> p.type = Pkt.PAD;
            case PacketCursor.PSB -> p.type = Pkt.PSB;
            case PacketCursor.PSBEND -> p.type = Pkt.PSBEND;
            case PacketCursor.OVF -> p.type = Pkt.OVF;
            case PacketCursor.STOP -> p.type = Pkt.STOP;
            case PacketCursor.TNT_8, PacketCursor.TNT_64 -> {
                p.type = Pkt.TNT;
                p.tntBits = c.tntBits();
                p.tntSize = c.tntCount();
            }
            case PacketCursor.TIP, PacketCursor.TIP_PGE, PacketCursor.TIP_PGD, PacketCursor.FUP -> {
                p.type = switch (t) {
                    case PacketCursor.TIP -> Pkt.TIP;
                    case PacketCursor.TIP_PGE -> Pkt.TIP_PGE;
                    case PacketCursor.TIP_PGD -> Pkt.TIP_PGD;
                    default -> Pkt.FUP;
                };
                p.ipc = c.ipc();
                p.ip = c.ipPayload();
            }
            case PacketCursor.MODE_EXEC -> {
                p.type = Pkt.MODE_EXEC;
                p.flagA = c.csl();
                p.flagB = c.csd();
                p.flagC = c.interruptFlag();
            }
            case PacketCursor.MODE_TSX -> {
                p.type = Pkt.MODE_TSX;
                p.flagA = c.intx();
                p.flagB = c.abrt();
            }
            case PacketCursor.PIP -> {
                p.type = Pkt.PIP;
                p.payload = c.cr3();
                p.flagA = c.nonRoot();
            }
            case PacketCursor.VMCS -> {
                p.type = Pkt.VMCS;
                p.payload = c.vmcsBase();
            }
            case PacketCursor.CBR -> {
                p.type = Pkt.CBR;
                p.payload = c.cbrRatio();
            }
            case PacketCursor.TSC -> {
                p.type = Pkt.TSC;
                p.payload = c.tsc();
            }
            case PacketCursor.MTC -> {
                p.type = Pkt.MTC;
                p.payload = c.mtcCtc();
            }
            case PacketCursor.CYC -> {
                p.type = Pkt.CYC;
                p.payload = c.cycles();
                p.small = 0;
            }
            case PacketCursor.TMA -> {
                p.type = Pkt.TMA;
                p.payload = c.tmaCtc();
                p.payload2 = c.tmaFc();
            }
            case PacketCursor.MNT -> {
                p.type = Pkt.MNT;
                p.payload = c.mntPayload();
            }
            case PacketCursor.PTW -> {
                p.type = Pkt.PTW;
                p.flagA = c.ipBit();
                p.payload = c.ptwPayload();
                p.payload2 = c.ptwPlc();
            }
            case PacketCursor.EXSTOP -> {
                p.type = Pkt.EXSTOP;
                p.flagA = c.ipBit();
            }
            case PacketCursor.MWAIT -> {
                p.type = Pkt.MWAIT;
                p.payload = c.mwaitHints();
                p.payload2 = c.mwaitExt();
            }
            case PacketCursor.PWRE -> {
                p.type = Pkt.PWRE;
                p.payload = c.pwreState();
                p.payload2 = c.pwreSubState();
                p.flagA = c.pwreHw();
            }
            case PacketCursor.PWRX -> {
                p.type = Pkt.PWRX;
                p.payload = c.pwrxLast();
                p.payload2 = c.pwrxDeepest();
                p.small = (c.pwrxInterrupt() ? 1 : 0) | (c.pwrxStore() ? 2 : 0) | (c.pwrxAutonomous() ? 4 : 0);
            }
            case PacketCursor.CFE -> {
                p.type = Pkt.CFE;
                p.small = c.cfeType();
                p.payload = c.cfeVector();
                p.flagA = c.ipBit();
            }
            case PacketCursor.EVD -> {
                p.type = Pkt.EVD;
                p.small = c.evdType();
                p.payload = c.evdPayload();
            }
            case PacketCursor.TRIG -> {
                p.type = Pkt.TRIG;
                p.flagA = c.ipBit();
                p.flagB = c.trigIcntValid();
                p.flagC = c.trigMult();
                p.payload = c.trigTrbv();
                p.payload2 = c.trigIcnt();
            }
            default -> p.type = Pkt.UNKNOWN;
        }
    }

    /** Reads past the MTC/CYC run that started with the packet just read; the packet after it waits in pending. */
    private int timingRun(Pkt p, boolean mtc) {
        long start = c.offset();
        long end;
        while (true) {
            if ((c.skipTiming() & 2) != 0) {
                mtc = true;
            }
            long before = c.position();
            int u;
            try {
                u = c.next();
            } catch (TraceDecodeException e) {
                end = before; // the cursor stays on the bad packet: the next call reports it
                break;
            }
            if (u == PacketCursor.MTC) {
                mtc = true;
            } else if (u != PacketCursor.CYC && u != PacketCursor.PAD) {
                end = before;
                if (u != PacketCursor.END) {
                    pending = u;
                    pendingStart = before;
                }
                break;
            }
        }
        p.type = Pkt.CYC;
        p.offset = start;
        p.size = (int) (end - start);
        p.payload = 0;
        p.small = mtc ? 3 : 1;
        return 0;
    }

    @Override
    public long position() {
        return pending != NONE ? pendingStart : c.position();
    }

    @Override
    public void seek(long offset) {
        pending = NONE;
        c.seek(offset);
    }

    @Override
    public long findPsb(long from) {
        pending = NONE;
        if (from >= size) {
            return -1;
        }
        c.seek(from);
        try {
            if (c.next() == PacketCursor.PSB) {
                c.seek(from);
                return from;
            }
        } catch (TraceDecodeException e) {
            // not a PSB here; search on
        }
        c.seek(from);
        if (!c.syncForward()) {
            return -1;
        }
        return c.position();
    }

    @Override
    public long findPsbBackward(long before) {
        pending = NONE;
        c.seek(Math.min(before, size));
        if (!c.syncBackward()) {
            return -1;
        }
        return c.position();
    }

    @Override
    public long size() {
        return size;
    }
}

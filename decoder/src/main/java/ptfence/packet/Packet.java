package ptfence.packet;

/**
 * One decoded Intel PT packet as an immutable value. Every record carries the packet's trace
 * {@code offset} and byte {@code size}; the other components are the packet's payload fields as the
 * Intel SDM names them. Build one from a cursor with {@link PacketCursor#packet()}; hot loops should use
 * the cursor's primitive accessors instead.
 */
public sealed interface Packet {
    long offset();

    int size();

    PacketType type();

    record Pad(long offset, int size) implements Packet {
        public PacketType type() { return PacketType.PAD; }
    }

    record Psb(long offset, int size) implements Packet {
        public PacketType type() { return PacketType.PSB; }
    }

    record PsbEnd(long offset, int size) implements Packet {
        public PacketType type() { return PacketType.PSBEND; }
    }

    /** TNT-8 or TNT-64: {@code count} branch outcomes, the oldest in bit {@code count-1}, 1 = taken. */
    record Tnt(long offset, int size, int count, long bits) implements Packet {
        public PacketType type() { return size == 1 ? PacketType.TNT_8 : PacketType.TNT_64; }

        /** Outcome of the k-th branch, oldest first. */
        public boolean taken(int k) {
            return (bits >>> (count - 1 - k) & 1) != 0;
        }
    }

    /** TIP, TIP.PGE, TIP.PGD or FUP: an IP payload with compression {@code ipc} (PacketCursor.IPC_*). */
    record Ip(long offset, int size, PacketType type, int ipc, long payload) implements Packet {
        /** Whether the IP was suppressed (ipc 0). */
        public boolean suppressed() { return ipc == PacketCursor.IPC_SUPPRESSED; }
    }

    record Pip(long offset, int size, long cr3, boolean nonRoot) implements Packet {
        public PacketType type() { return PacketType.PIP; }
    }

    record ModeExec(long offset, int size, boolean csl, boolean csd, boolean interruptFlag) implements Packet {
        public PacketType type() { return PacketType.MODE_EXEC; }
    }

    record ModeTsx(long offset, int size, boolean intx, boolean abrt) implements Packet {
        public PacketType type() { return PacketType.MODE_TSX; }
    }

    record Tsc(long offset, int size, long tsc) implements Packet {
        public PacketType type() { return PacketType.TSC; }
    }

    record Mtc(long offset, int size, int ctc) implements Packet {
        public PacketType type() { return PacketType.MTC; }
    }

    record Cyc(long offset, int size, long cycles) implements Packet {
        public PacketType type() { return PacketType.CYC; }
    }

    record Tma(long offset, int size, int ctc, int fc) implements Packet {
        public PacketType type() { return PacketType.TMA; }
    }

    record Cbr(long offset, int size, int ratio) implements Packet {
        public PacketType type() { return PacketType.CBR; }
    }

    record Vmcs(long offset, int size, long base) implements Packet {
        public PacketType type() { return PacketType.VMCS; }
    }

    record Ovf(long offset, int size) implements Packet {
        public PacketType type() { return PacketType.OVF; }
    }

    record Mnt(long offset, int size, long payload) implements Packet {
        public PacketType type() { return PacketType.MNT; }
    }

    /** TraceStop. */
    record Stop(long offset, int size) implements Packet {
        public PacketType type() { return PacketType.STOP; }
    }

    /** PTWRITE: {@code plc} 0 = 4-byte, 1 = 8-byte payload. */
    record Ptw(long offset, int size, int plc, long payload, boolean ip) implements Packet {
        public PacketType type() { return PacketType.PTW; }
    }

    record Exstop(long offset, int size, boolean ip) implements Packet {
        public PacketType type() { return PacketType.EXSTOP; }
    }

    record Mwait(long offset, int size, int hints, int ext) implements Packet {
        public PacketType type() { return PacketType.MWAIT; }
    }

    /** Power entry; states are the raw 4-bit fields (C-state = field + 1, mod 16). */
    record Pwre(long offset, int size, int state, int subState, boolean hw) implements Packet {
        public PacketType type() { return PacketType.PWRE; }
    }

    /** Power exit; states are the raw 4-bit fields (C-state = field + 1, mod 16). */
    record Pwrx(long offset, int size, int last, int deepest, boolean interrupt, boolean store,
                boolean autonomous) implements Packet {
        public PacketType type() { return PacketType.PWRX; }
    }

    /** Control-flow event. */
    record Cfe(long offset, int size, int cfeType, int vector, boolean ip) implements Packet {
        public PacketType type() { return PacketType.CFE; }
    }

    /** Event data. */
    record Evd(long offset, int size, int evdType, long payload) implements Packet {
        public PacketType type() { return PacketType.EVD; }
    }

    record Trig(long offset, int size, int trbv, boolean ip, boolean mult, boolean icntValid, int icnt)
            implements Packet {
        public PacketType type() { return PacketType.TRIG; }
    }

    /** Block begin (PEBS via PT); {@code size4}: the block's BIPs carry 4-byte payloads. */
    record Bbp(long offset, int size, int blockType, boolean size4) implements Packet {
        public PacketType type() { return PacketType.BBP; }
    }

    /** Block item. */
    record Bip(long offset, int size, int id, long payload) implements Packet {
        public PacketType type() { return PacketType.BIP; }
    }

    /** Block end. */
    record Bep(long offset, int size, boolean ip) implements Packet {
        public PacketType type() { return PacketType.BEP; }
    }

    /** A packet known to be corrupted by a CPU erratum and skipped. */
    record Invalid(long offset, int size) implements Packet {
        public PacketType type() { return PacketType.INVALID; }
    }

    /** The record for the packet a cursor last decoded. */
    static Packet of(PacketCursor c) {
        long o = c.offset();
        int s = c.size();
        switch (c.type()) {
            case PacketCursor.PAD: return new Pad(o, s);
            case PacketCursor.PSB: return new Psb(o, s);
            case PacketCursor.PSBEND: return new PsbEnd(o, s);
            case PacketCursor.TNT_8:
            case PacketCursor.TNT_64: return new Tnt(o, s, c.tntCount(), c.tntBits());
            case PacketCursor.TIP:
            case PacketCursor.TIP_PGE:
            case PacketCursor.TIP_PGD:
            case PacketCursor.FUP: return new Ip(o, s, c.packetType(), c.ipc(), c.ipPayload());
            case PacketCursor.PIP: return new Pip(o, s, c.cr3(), c.nonRoot());
            case PacketCursor.MODE_EXEC: return new ModeExec(o, s, c.csl(), c.csd(), c.interruptFlag());
            case PacketCursor.MODE_TSX: return new ModeTsx(o, s, c.intx(), c.abrt());
            case PacketCursor.TSC: return new Tsc(o, s, c.tsc());
            case PacketCursor.MTC: return new Mtc(o, s, c.mtcCtc());
            case PacketCursor.CYC: return new Cyc(o, s, c.cycles());
            case PacketCursor.TMA: return new Tma(o, s, c.tmaCtc(), c.tmaFc());
            case PacketCursor.CBR: return new Cbr(o, s, c.cbrRatio());
            case PacketCursor.VMCS: return new Vmcs(o, s, c.vmcsBase());
            case PacketCursor.OVF: return new Ovf(o, s);
            case PacketCursor.MNT: return new Mnt(o, s, c.mntPayload());
            case PacketCursor.STOP: return new Stop(o, s);
            case PacketCursor.PTW: return new Ptw(o, s, c.ptwPlc(), c.ptwPayload(), c.ipBit());
            case PacketCursor.EXSTOP: return new Exstop(o, s, c.ipBit());
            case PacketCursor.MWAIT: return new Mwait(o, s, c.mwaitHints(), c.mwaitExt());
            case PacketCursor.PWRE: return new Pwre(o, s, c.pwreState(), c.pwreSubState(), c.pwreHw());
            case PacketCursor.PWRX: return new Pwrx(o, s, c.pwrxLast(), c.pwrxDeepest(), c.pwrxInterrupt(),
                    c.pwrxStore(), c.pwrxAutonomous());
            case PacketCursor.CFE: return new Cfe(o, s, c.cfeType(), c.cfeVector(), c.ipBit());
            case PacketCursor.EVD: return new Evd(o, s, c.evdType(), c.evdPayload());
            case PacketCursor.TRIG: return new Trig(o, s, c.trigTrbv(), c.ipBit(), c.trigMult(), c.trigIcntValid(),
                    c.trigIcnt());
            case PacketCursor.BBP: return new Bbp(o, s, c.bbpType(), c.bbpSize4());
            case PacketCursor.BIP: return new Bip(o, s, c.bipId(), c.bipPayload());
            case PacketCursor.BEP: return new Bep(o, s, c.ipBit());
            case PacketCursor.INVALID: return new Invalid(o, s);
            default: throw new IllegalStateException("no current packet");
        }
    }
}

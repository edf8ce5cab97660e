package ptfence.output;

import ptfence.packet.DecodeError;
import ptfence.packet.LastIp;
import ptfence.packet.PacketCursor;
import ptfence.packet.TraceDecodeException;

/**
 * Prints packets as JSON lines, one object per packet (schema: docs/formats-packets.md). 64-bit values
 * (addresses, TSC, payloads) are hex strings so no JSON reader loses precision; small fields are numbers.
 * Decode errors are objects with an {@code error} member; decoding resumes at the next PSB like ptdump.
 */
public final class JsonlPacketPrinter {
    private final TextSink out;
    private final boolean noSync;
    private final boolean quiet;
    private final LastIp lastIp = new LastIp();
    private final DecodeSummary summary = new DecodeSummary();

    public JsonlPacketPrinter(TextSink out, boolean noSync, boolean quiet) {
        this.out = out;
        this.noSync = noSync;
        this.quiet = quiet;
    }

    public DecodeSummary dump(PacketCursor c) {
        if (noSync) {
            c.seek(0);
        } else if (!c.syncForward()) {
            out.flush();
            return summary;
        }
        for (;;) {
            int type;
            try {
                type = c.next();
            } catch (TraceDecodeException e) {
                summary.record(e.error(), e.offset());
                out.str("{\"offset\":").dec(e.offset()).str(",\"error\":\"").str(e.error().text()).str("\"}").nl();
                if (e.error() == DecodeError.TRUNCATED || !c.syncForward()) {
                    break;
                }
                lastIp.reset();
                continue;
            }
            if (type == PacketCursor.END) {
                break;
            }
            summary.packets++;
            if (!quiet) {
                print(c, type);
            }
        }
        out.flush();
        return summary;
    }

    private TextSink hexValue(String name, long v) {
        return out.str(",\"").str(name).str("\":\"0x").hex(v).ch('"');
    }

    private TextSink num(String name, long v) {
        return out.str(",\"").str(name).str("\":").dec(v);
    }

    private TextSink bool(String name, boolean v) {
        return out.str(",\"").str(name).str(v ? "\":true" : "\":false");
    }

    private TextSink text(String name, String v) {
        return out.str(",\"").str(name).str("\":\"").str(v).ch('"');
    }

    private void print(PacketCursor c, int type) {
        out.str("{\"offset\":").dec(c.offset()).str(",\"size\":").dec(c.size()).str(",\"type\":\"")
                .str(c.packetType().jsonName()).ch('"');
        switch (type) {
            case PacketCursor.TNT_8:
            case PacketCursor.TNT_64: {
                num("count", c.tntCount());
                out.str(",\"bits\":\"");
                long bits = c.tntBits();
                for (int k = c.tntCount() - 1; k >= 0; k--) {
                    out.ch((bits >>> k & 1) != 0 ? '!' : '.');
                }
                out.ch('"');
                break;
            }
            case PacketCursor.TIP:
            case PacketCursor.TIP_PGE:
            case PacketCursor.TIP_PGD:
            case PacketCursor.FUP:
                num("ipc", c.ipc());
                hexValue("payload", c.ipPayload());
                lastIp.update(c.ipc(), c.ipPayload());
                if (lastIp.haveIp() && !lastIp.suppressed()) {
                    hexValue("ip", lastIp.ip());
                } else {
                    out.str(",\"ip\":null");
                }
                break;
            case PacketCursor.PSB:
            case PacketCursor.OVF:
                lastIp.reset();
                break;
            case PacketCursor.PIP:
                hexValue("cr3", c.cr3());
                bool("nr", c.nonRoot());
                break;
            case PacketCursor.MODE_EXEC:
                bool("csl", c.csl());
                bool("csd", c.csd());
                bool("if", c.interruptFlag());
                text("mode", c.csl() ? (c.csd() ? "unknown" : "64-bit") : (c.csd() ? "32-bit" : "16-bit"));
                break;
            case PacketCursor.MODE_TSX:
                bool("intx", c.intx());
                bool("abrt", c.abrt());
                break;
            case PacketCursor.TSC:
                hexValue("tsc", c.tsc());
                break;
            case PacketCursor.MTC:
                num("ctc", c.mtcCtc());
                break;
            case PacketCursor.CYC:
                num("cycles", c.cycles());
                break;
            case PacketCursor.TMA:
                num("ctc", c.tmaCtc());
                num("fc", c.tmaFc());
                break;
            case PacketCursor.CBR:
                num("ratio", c.cbrRatio());
                break;
            case PacketCursor.VMCS:
                hexValue("base", c.vmcsBase());
                break;
            case PacketCursor.MNT:
                hexValue("payload", c.mntPayload());
                break;
            case PacketCursor.PTW:
                num("plc", c.ptwPlc());
                hexValue("payload", c.ptwPayload());
                bool("ip_follows", c.ipBit());
                break;
            case PacketCursor.EXSTOP:
            case PacketCursor.BEP:
                bool("ip_follows", c.ipBit());
                break;
            case PacketCursor.MWAIT:
                num("hints", c.mwaitHints() & 0xffffffffL);
                num("ext", c.mwaitExt() & 0xffffffffL);
                break;
            case PacketCursor.PWRE:
                num("state", (c.pwreState() + 1) & 0xf);
                num("sub_state", (c.pwreSubState() + 1) & 0xf);
                bool("hw", c.pwreHw());
                break;
            case PacketCursor.PWRX: {
                num("last", (c.pwrxLast() + 1) & 0xf);
                num("deepest", (c.pwrxDeepest() + 1) & 0xf);
                int reasons = (c.pwrxInterrupt() ? 1 : 0) + (c.pwrxStore() ? 1 : 0) + (c.pwrxAutonomous() ? 1 : 0);
                text("wake", reasons != 1 ? "bad" : c.pwrxInterrupt() ? "int" : c.pwrxStore() ? "st" : "hw");
                break;
            }
            case PacketCursor.CFE:
                num("cfe_type", c.cfeType());
                text("cfe_name", PtdumpPrinter.cfeTypeName(c.cfeType()));
                num("vector", c.cfeVector());
                bool("ip_follows", c.ipBit());
                break;
            case PacketCursor.EVD:
                num("evd_type", c.evdType());
                text("evd_name", PtdumpPrinter.evdTypeName(c.evdType()));
                hexValue("payload", c.evdPayload());
                break;
            case PacketCursor.TRIG:
                num("trbv", c.trigTrbv());
                bool("ip_follows", c.ipBit());
                bool("mult", c.trigMult());
                if (c.trigIcntValid()) {
                    num("icnt", c.trigIcnt());
                } else {
                    out.str(",\"icnt\":null");
                }
                break;
            case PacketCursor.BBP:
                num("block_type", c.bbpType());
                num("bip_size", c.bbpSize4() ? 4 : 8);
                break;
            case PacketCursor.BIP:
                num("id", c.bipId());
                hexValue("payload", c.bipPayload());
                break;
            default:
                break;
        }
        out.ch('}').nl();
    }
}

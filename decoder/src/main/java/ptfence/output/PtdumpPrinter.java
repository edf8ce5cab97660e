package ptfence.output;

import java.math.BigDecimal;
import java.math.RoundingMode;
import ptfence.packet.DecodeError;
import ptfence.packet.LastIp;
import ptfence.packet.PacketCursor;
import ptfence.packet.TraceDecodeException;
import ptfence.timing.TimeCalibration;
import ptfence.timing.Timing;
import ptfence.timing.TimingError;

/**
 * Prints a raw Intel PT trace in libipt's ptdump format: the same columns, the same time tracking
 * ({@code --time}, {@code --tcal}, {@code --time-delta}), the same bracketed diagnostics and the same
 * resynchronization after a bad packet. Output goes through a {@link TextSink}; nothing is formatted
 * with String.format on the per-packet path.
 */
public final class PtdumpPrinter {
    private final PtdumpOptions opt;
    private final TextSink out;
    private final SidebandDump sideband;

    private final LastIp lastIp = new LastIp();
    private final TimeCalibration tcal;
    private final Timing time;
    private long lastTsc;
    private long lastFcr;
    private boolean inHeader;

    // The columns of the line being built (ptdump's struct ptdump_buffer).
    private final TextSink.Field raw = new TextSink.Field(32);
    private final TextSink.Field payload = new TextSink.Field(24);
    private final TextSink.Field extPayload = new TextSink.Field(47);
    private final TextSink.Field trackPayload = new TextSink.Field(16);
    private TextSink.Field pl;
    private String opcode;
    private String trackId;
    private boolean skip;
    private boolean skipTime;
    private boolean skipTcal;

    private final DecodeSummary summary = new DecodeSummary();

    public PtdumpPrinter(PtdumpOptions options, TextSink out, SidebandDump sideband) {
        this.opt = options;
        this.out = out;
        this.sideband = sideband;
        this.tcal = new TimeCalibration(options.timing());
        this.time = new Timing(options.timing());
    }

    /** What went wrong while decoding (if anything). */
    public DecodeSummary summary() {
        return summary;
    }

    /** Dumps the whole trace under {@code cursor} (ptdump's dump_sync + final sideband flush). */
    public DecodeSummary dump(PacketCursor cursor) {
        if (opt.noSync()) {
            cursor.seek(0);
        } else if (!cursor.syncForward()) {
            finish();
            return summary;
        }
        for (;;) {
            boolean error = dumpPackets(cursor);
            if (!error) {
                break;
            }
            if (!cursor.syncForward()) {
                break;
            }
            resetTracking();
        }
        finish();
        return summary;
    }

    private void finish() {
        if (sideband != null) {
            sideband.dumpUntil(-1L, out);
        }
        out.flush();
    }

    private void resetTracking() {
        lastIp.reset();
        tcal.reset();
        time.reset();
        lastTsc = 0;
        lastFcr = 0;
        inHeader = false;
    }

    /** Returns true if it stopped on a decode error (to resync), false at the end of the trace. */
    private boolean dumpPackets(PacketCursor c) {
        if (opt.quiet() && !opt.trackTime() && !opt.showLastIp() && !opt.showRaw()) {
            return checkPackets(c);
        }
        for (;;) {
            long offset = c.position();
            int type;
            try {
                type = c.next();
            } catch (TraceDecodeException e) {
                summary.record(e.error(), e.offset());
                if (e.error() == DecodeError.TRUNCATED) {
                    // ptdump ends silently at a cut-off packet; we say so on stderr via the summary.
                    return false;
                }
                diag("error decoding packet", e.offset(), e.error().text());
                return true;
            }
            if (type == PacketCursor.END) {
                return false;
            }
            summary.packets++;
            dumpOne(c, offset, type);
        }
    }

    /** --quiet with nothing to track: only decode, and report errors as ptdump would. */
    private boolean checkPackets(PacketCursor c) {
        try {
            c.skipAll();
            return false;
        } catch (TraceDecodeException e) {
            summary.record(e.error(), e.offset());
            if (e.error() == DecodeError.TRUNCATED) {
                return false;
            }
            diag("error decoding packet", e.offset(), e.error().text());
            return true;
        } finally {
            summary.packets += c.skipped();
        }
    }

    private void diag(String what, long offset, String err) {
        out.ch('[').hex(offset).str(": ").str(what);
        if (err != null) {
            out.str(": ").str(err);
        }
        out.ch(']').nl();
    }

    private void dumpOne(PacketCursor c, long offset, int type) {
        raw.clear();
        payload.clear();
        extPayload.clear();
        trackPayload.clear();
        pl = payload;
        trackId = null;
        skip = false;
        skipTime = false;
        skipTcal = false;
        if (opt.showRaw()) {
            if (offset + c.size() > c.source().size()) {
                diag("bad packet size", offset, DecodeError.BAD_PACKET.text());
                return;
            }
            byte[] bytes = new byte[c.size()];
            c.copyRaw(bytes);
            for (byte x : bytes) {
                raw.hex(x & 0xff, 2);
            }
        }
        packet(c, offset, type);
        printLine(offset);
    }

    private void packet(PacketCursor c, long offset, int type) {
        switch (type) {
            case PacketCursor.INVALID:
                opcode = "<invalid>";
                return;
            case PacketCursor.PSB:
                opcode = "psb";
                if (opt.trackTime()) {
                    timeErr(tcal.updatePsb(), "error calibrating time", offset);
                }
                inHeader = true;
                return;
            case PacketCursor.PSBEND:
                opcode = "psbend";
                inHeader = false;
                return;
            case PacketCursor.PAD:
                opcode = "pad";
                skip = opt.noPad();
                return;
            case PacketCursor.OVF:
                opcode = "ovf";
                if (opt.trackTime()) {
                    if (opt.keepTcalOnOvf()) {
                        timeErr(tcal.updateOvf(), "error calibrating time", offset);
                    } else {
                        tcal.reset();
                    }
                }
                return;
            case PacketCursor.STOP:
                opcode = "stop";
                return;
            case PacketCursor.FUP:
                opcode = "fup";
                ipPacket(c, offset);
                return;
            case PacketCursor.TIP:
                opcode = "tip";
                ipPacket(c, offset);
                return;
            case PacketCursor.TIP_PGE:
                opcode = "tip.pge";
                ipPacket(c, offset);
                return;
            case PacketCursor.TIP_PGD:
                opcode = "tip.pgd";
                ipPacket(c, offset);
                return;
            case PacketCursor.PIP:
                opcode = "pip";
                payload.hex(c.cr3());
                if (c.nonRoot()) {
                    payload.str(", nr");
                }
                trackId = "cr3";
                trackPayload.hex(c.cr3(), 16);
                return;
            case PacketCursor.VMCS:
                opcode = "vmcs";
                payload.hex(c.vmcsBase());
                trackId = "vmcs";
                trackPayload.hex(c.vmcsBase(), 16);
                return;
            case PacketCursor.TNT_8:
            case PacketCursor.TNT_64: {
                opcode = type == PacketCursor.TNT_8 ? "tnt.8" : "tnt.64";
                pl = extPayload;
                long bits = c.tntBits();
                for (int k = c.tntCount() - 1; k >= 0; k--) {
                    extPayload.ch((bits >>> k & 1) != 0 ? '!' : '.');
                }
                return;
            }
            case PacketCursor.MODE_EXEC: {
                opcode = "mode.exec";
                boolean csd = c.csd();
                boolean csl = c.csl();
                if (csd) {
                    payload.str("cs.d");
                }
                if (csd && csl) {
                    payload.str(", ");
                }
                if (csl) {
                    payload.str("cs.l");
                }
                if (c.interruptFlag()) {
                    if (csd || csl) {
                        payload.str(", ");
                    }
                    payload.str("if");
                }
                if (opt.showExecMode()) {
                    trackId = "em";
                    trackPayload.str(csl ? (csd ? "unknown" : "64-bit") : (csd ? "32-bit" : "16-bit"));
                }
                return;
            }
            case PacketCursor.MODE_TSX:
                opcode = "mode.tsx";
                if (c.intx()) {
                    payload.str("intx");
                }
                if (c.intx() && c.abrt()) {
                    payload.str(", ");
                }
                if (c.abrt()) {
                    payload.str("abrt");
                }
                return;
            case PacketCursor.TSC:
                opcode = "tsc";
                payload.hex(c.tsc());
                if (opt.trackTime()) {
                    if (!opt.noTcal()) {
                        timeErr(inHeader ? tcal.headerTsc(c.tsc()) : tcal.updateTsc(c.tsc()),
                                "error calibrating time", offset);
                    }
                    timeErr(time.updateTsc(c.tsc()), "error updating time", offset);
                    trackTime(offset);
                }
                skip = opt.noTiming();
                return;
            case PacketCursor.CBR:
                opcode = "cbr";
                payload.hex(c.cbrRatio());
                if (opt.trackTime()) {
                    if (!opt.noTcal()) {
                        timeErr(inHeader ? tcal.headerCbr(c.cbrRatio()) : tcal.updateCbr(c.cbrRatio()),
                                "error calibrating time", offset);
                    }
                    timeErr(time.updateCbr(c.cbrRatio()), "error updating time", offset);
                    skipTime = true;
                    trackTime(offset);
                }
                skip = opt.noTiming();
                return;
            case PacketCursor.TMA:
                opcode = "tma";
                payload.hex(c.tmaCtc()).str(", ").hex(c.tmaFc());
                if (opt.trackTime()) {
                    if (!opt.noTcal()) {
                        timeErr(tcal.updateTma(c.tmaCtc(), c.tmaFc()), "error calibrating time", offset);
                    }
                    timeErr(time.updateTma(c.tmaCtc(), c.tmaFc()), "error updating time", offset);
                    skipTcal = true;
                    trackTime(offset);
                }
                skip = opt.noTiming();
                return;
            case PacketCursor.MTC:
                opcode = "mtc";
                payload.hex(c.mtcCtc());
                if (opt.trackTime()) {
                    if (!opt.noTcal()) {
                        timeErr(tcal.updateMtc(c.mtcCtc()), "error calibrating time", offset);
                    }
                    timeErr(time.updateMtc(c.mtcCtc()), "error updating time", offset);
                    trackTime(offset);
                }
                skip = opt.noTiming();
                return;
            case PacketCursor.CYC:
                opcode = "cyc";
                payload.hex(c.cycles());
                if (opt.trackTime() && !opt.noCyc()) {
                    long fcr = 0;
                    if (!opt.noTcal()) {
                        if (!tcal.haveFcr()) {
                            diag("calibration error", offset, TimingError.NO_TIME.text());
                        } else {
                            fcr = tcal.fcr();
                        }
                        timeErr(tcal.updateCyc(c.cycles()), "error calibrating time", offset);
                    }
                    TimingError e = time.updateCyc(c.cycles(), fcr);
                    if (e != null) {
                        diag("error updating time", offset, e.text());
                    } else if (fcr == 0) {
                        diag("error updating time: no calibration", offset, null);
                    }
                    skipTcal = true;
                    trackTime(offset);
                }
                skip = opt.noTiming() || opt.noCyc();
                return;
            case PacketCursor.MNT:
                opcode = "mnt";
                payload.hex(c.mntPayload());
                return;
            case PacketCursor.EXSTOP:
                opcode = "exstop";
                if (c.ipBit()) {
                    payload.str("ip");
                }
                return;
            case PacketCursor.MWAIT:
                opcode = "mwait";
                payload.hex(c.mwaitHints() & 0xffffffffL, 8).str(", ").hex(c.mwaitExt() & 0xffffffffL, 8);
                return;
            case PacketCursor.PWRE:
                opcode = "pwre";
                payload.ch('c').dec((c.pwreState() + 1) & 0xf).ch('.').dec((c.pwreSubState() + 1) & 0xf);
                if (c.pwreHw()) {
                    payload.str(", hw");
                }
                return;
            case PacketCursor.PWRX: {
                opcode = "pwrx";
                String wr = pwrxWakeReason(c);
                payload.str(wr).str(": c").dec((c.pwrxLast() + 1) & 0xf).str(", c").dec((c.pwrxDeepest() + 1) & 0xf);
                return;
            }
            case PacketCursor.PTW:
                opcode = "ptw";
                payload.hex(c.ptwPlc()).str(": ").hex(c.ptwPayload());
                if (c.ipBit()) {
                    payload.str(", ip");
                }
                return;
            case PacketCursor.CFE: {
                opcode = "cfe";
                int t = c.cfeType();
                trackId = "type";
                trackPayload.str(cfeTypeName(t));
                payload.dec(t);
                if (t == 1 || t == 9 || t == 12 || t == 14) {
                    payload.str(": ").dec(c.cfeVector());
                } else if (t == 5) {
                    payload.str(": ").hex(c.cfeVector());
                }
                if (c.ipBit()) {
                    payload.str(", ip");
                }
                return;
            }
            case PacketCursor.EVD:
                opcode = "evd";
                payload.dec(c.evdType()).str(": ").hex(c.evdPayload());
                trackId = "type";
                trackPayload.str(evdTypeName(c.evdType()));
                return;
            case PacketCursor.TRIG:
                opcode = "trig";
                pl = extPayload;
                extPayload.hex(c.trigTrbv(), 2);
                if (c.ipBit()) {
                    extPayload.str(", ip");
                }
                if (c.trigMult()) {
                    extPayload.str(", mult");
                }
                if (c.trigIcntValid()) {
                    extPayload.str(", icnt: ").dec(c.trigIcnt());
                }
                return;
            case PacketCursor.BBP:
                opcode = "bbp";
                payload.hex(c.bbpType());
                payload.str(c.bbpSize4() ? ", 4" : ", 8");
                return;
            case PacketCursor.BIP:
                opcode = "bip";
                payload.hex(c.bipId()).str(": ").hex(c.bipPayload());
                return;
            case PacketCursor.BEP:
                opcode = "bep";
                if (c.ipBit()) {
                    payload.str("ip");
                }
                return;
            default:
                throw new IllegalStateException("packet type " + type);
        }
    }

    private static String pwrxWakeReason(PacketCursor c) {
        String wr = null;
        if (c.pwrxInterrupt()) {
            wr = "int";
        }
        if (c.pwrxStore()) {
            if (wr != null) {
                return "bad";
            }
            wr = " st";
        }
        if (c.pwrxAutonomous()) {
            if (wr != null) {
                return "bad";
            }
            wr = " hw";
        }
        return wr == null ? "bad" : wr;
    }

    static String cfeTypeName(int t) {
        switch (t) {
            case 1: return "intr";
            case 2: return "iret";
            case 3: return "smi";
            case 4: return "rsm";
            case 5: return "sipi";
            case 6: return "init";
            case 7: return "vmentry";
            case 8: return "vmexit";
            case 9: return "vmexit_intr";
            case 10: return "shutdown";
            case 12: return "uintr";
            case 13: return "uiret";
            case 14: return "swintr";
            case 15: return "syscall";
            default: return "unknown";
        }
    }

    static String evdTypeName(int t) {
        switch (t) {
            case 0: return "cr2";
            case 1: return "vmxq";
            case 2: return "vmxr";
            default: return "unknown";
        }
    }

    private void ipPacket(PacketCursor c, long offset) {
        int ipc = c.ipc();
        long ip = c.ipPayload();
        payload.hex(ipc).str(": ");
        switch (ipc) {
            case PacketCursor.IPC_SUPPRESSED:
                payload.str("????????????????");
                break;
            case PacketCursor.IPC_UPDATE_16:
                payload.str("????????????").hex(ip, 4);
                break;
            case PacketCursor.IPC_UPDATE_32:
                payload.str("????????").hex(ip, 8);
                break;
            case PacketCursor.IPC_UPDATE_48:
                payload.str("????").hex(ip, 12);
                break;
            case PacketCursor.IPC_SEXT_48:
                payload.hex((ip << 16) >> 16, 16);
                break;
            default:
                payload.hex(ip, 16);
                break;
        }
        if (opt.showLastIp()) {
            trackId = "ip";
            lastIp.update(ipc, ip);
            if (!lastIp.haveIp()) {
                trackPayload.str("<unavailable>");
                diag("error tracking last-ip", offset, "no ip");
            } else if (lastIp.suppressed()) {
                trackPayload.str("<suppressed>");
            } else {
                trackPayload.hex(lastIp.ip(), 16);
            }
        }
    }

    private void timeErr(TimingError e, String what, long offset) {
        if (e != null) {
            diag(what, offset, e.text());
        }
    }

    private void trackTime(long offset) {
        if (opt.showTcal() && !skipTcal) {
            printTcal(offset);
        }
        if (opt.showTime() && !skipTime) {
            printTime(offset);
        }
        if (sideband != null) {
            sideband.dumpUntil(time.tsc(), out);
        }
    }

    private void printTime(long offset) {
        trackId = "tsc";
        long tsc = time.tsc();
        if (!time.haveTsc() && !opt.noWallClock()) {
            diag("error printing time", offset, TimingError.NO_TIME.text());
            trackPayload.str("<unavailable>");
            return;
        }
        if (opt.timeDelta()) {
            long old = lastTsc;
            if (Long.compareUnsigned(old, tsc) <= 0) {
                trackPayload.ch('+').hex(tsc - old);
            } else {
                trackPayload.ch('-').hex(old - tsc);
            }
            lastTsc = tsc;
        } else {
            trackPayload.hex(tsc, 16);
        }
    }

    private void printTcal(long offset) {
        trackId = "fcr";
        if (!tcal.haveFcr()) {
            trackPayload.str("<unavailable>");
            diag("error printing time", offset, TimingError.NO_TIME.text());
            return;
        }
        long fcr = tcal.fcr();
        double d = unsignedToDouble(fcr) / (double) (1L << TimeCalibration.FCR_SHIFT);
        if (opt.timeDelta()) {
            double old = unsignedToDouble(lastFcr) / (double) (1L << TimeCalibration.FCR_SHIFT);
            double diff = d - old;
            trackPayload.str(diff < 0 || (diff == 0 && 1 / diff < 0) ? "-" : "+").str(fixed3(Math.abs(diff)));
            lastFcr = fcr;
        } else {
            trackPayload.str(d < 0 ? "-" + fixed3(-d) : fixed3(d));
        }
    }

    private static double unsignedToDouble(long v) {
        double d = (double) (v >>> 1) * 2.0;
        return d + (v & 1);
    }

    /** C's {@code %.3f}: the exact binary value rounded half-to-even. */
    static String fixed3(double v) {
        return new BigDecimal(v).setScale(3, RoundingMode.HALF_EVEN).toPlainString();
    }

    private void printLine(long offset) {
        if (skip || opt.quiet()) {
            return;
        }
        TextSink o = out;
        boolean sep = false;
        if (opt.showOffset()) {
            o.hex16(offset).ch(' ');
            sep = true;
        }
        if (!raw.isEmpty()) {
            if (sep) {
                o.ch(' ');
            }
            o.field(raw).spaces(33 - raw.length());
            sep = true;
        }
        if (sep) {
            o.ch(' ');
        }
        o.str(opcode);
        if (!pl.isEmpty()) {
            o.spaces(10 - opcode.length());
        }
        if (trackId != null) {
            o.ch(' ').field(pl);
            if (pl.length() < 25) {
                o.spaces(25 - pl.length());
            }
            o.ch(' ').str(trackId).spaces(5 - trackId.length()).field(trackPayload);
        } else if (!pl.isEmpty()) {
            o.ch(' ').field(pl);
        }
        o.nl();
    }
}

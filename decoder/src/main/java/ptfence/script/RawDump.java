package ptfence.script;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import ptfence.packet.PacketCursor;
import ptfence.packet.TraceDecodeException;
import ptfence.packet.TraceSource;
import ptfence.perfdata.EventAttr;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.RecordTypes;
import ptfence.perfdata.SampleId;
import ptfence.perfdata.SampleType;

/**
 * perf script's {@code -D} ({@code --dump-raw-trace}): every record of the recording as perf 6.1 dumps it (file
 * offset, type, the raw bytes, then the record in words), in perf's order, and the Intel PT packets of each AUXTRACE
 * buffer in the format of perf's packet decoder. perf prints user records (type 64 and up: AUXTRACE, rounds, ...) as
 * it reads them and the kernel's through its ordered queue (flushed at each FINISHED_ROUND up to the round before's
 * latest time, all at the end); records without a time go out at once. The records come from the one record parser
 * ({@link PerfDataFile}), the packets from the one packet parser ({@link PacketCursor}).
 */
public final class RawDump {
    private final PerfDataFile file;
    private final String label;
    private final boolean packets;
    private final Function<PerfRecord.Sample, String> sampleText;
    private final OutputStream out;
    private final List<EventAttr> attrs = new ArrayList<>();
    private final StringBuilder sb = new StringBuilder(4096);

    /** A kernel record waiting in the ordered queue: its time and its whole dump. */
    private record Queued(long time, String text, PerfRecord rec) {}

    private final List<Queued> queue = new ArrayList<>();
    private long maxTime;
    /** The KSYMBOL records delivered so far, by address (perf's kernel maps, for TEXT_POKE's symbol). */
    private final java.util.TreeMap<Long, PerfRecord.Ksymbol> ksymbols = new java.util.TreeMap<>(Long::compareUnsigned);
    private long skipped;
    private long nextFlush;
    /** perf's unordered delivery (--dump-unsorted-raw-trace, --show-round-events): each record's words at once. */
    private boolean unordered;
    /** --show-round-events: perf's handler prints each FINISHED_ROUND's name after the dump's. */
    private boolean rounds;

    /**
     * @param label what perf prints after the offset ({@code FILE} as given, {@code pipe} for a pipe-mode stream)
     * @param packets whether AUXTRACE buffers are dumped as packets (not with {@code --no-itrace})
     * @param sampleText what perf prints after a sample's own line: the thread, the dso and perf script's line
     */
    public RawDump(PerfDataFile file, String label, boolean packets, Function<PerfRecord.Sample, String> sampleText,
            OutputStream out) {
        this.file = file;
        this.label = file.pipeMode() ? "pipe" : label;
        this.packets = packets;
        this.sampleText = sampleText;
        this.out = out;
        if (!file.pipeMode()) {
            file.attrs().forEach(a -> attrs.add(a.attr()));
        }
    }

    /**
     * Delivers the records as read, perf's way without its ordered queue; {@code rounds}: with
     * --show-round-events, whose handler names each FINISHED_ROUND (else perf's stub calls it unhandled).
     */
    public RawDump unordered(boolean rounds) {
        this.unordered = true;
        this.rounds = rounds;
        return this;
    }

    public void run() throws IOException {
        PerfDataFile.RecordReader r = file.records();
        try {
            while (r.hasNext()) {
                PerfRecord rec = r.next();
                long at = r.offset();
                if (file.pipeMode()) {
                    // perf counts a pipe's bytes from after its header, and not the AUXTRACE data it reads aside
                    at -= PerfDataFile.PIPE_HEADER_SIZE + skipped;
                    if (rec instanceof PerfRecord.Auxtrace a) {
                        skipped += a.size();
                    }
                }
                record(rec, at, r.rawBytes());
            }
        } finally {
            flush(Long.MAX_VALUE, true);
            out.flush();
        }
    }

    private void record(PerfRecord rec, long offset, ByteBuffer raw) throws IOException {
        sb.setLength(0);
        int type = rec.type();
        header(offset, raw);
        boolean user = !RecordTypes.isKernelType(type);
        long time = user ? 0 : time(rec);
        tstamp(rec, user);
        sb.append(hex(offset)).append(" [").append(hex(raw.remaining())).append("]: PERF_RECORD_")
                .append(rec.typeName());
        words(rec);
        if (user || time == 0 || time == -1 || unordered) {
            emit(sb.toString(), rec);
        } else {
            queue(time, sb.toString(), rec);
        }
        if (rec instanceof PerfRecord.HeaderAttr a) {
            attrs.add(a.attr());
        } else if (rec instanceof PerfRecord.FinishedRound) {
            flush(nextFlush, false);
            nextFlush = maxTime;
        } else if (rec instanceof PerfRecord.Auxtrace a && packets) {
            packets(a.data());
        }
    }

    private long time(PerfRecord rec) {
        if (rec instanceof PerfRecord.Sample s) {
            return (s.sampleType() & SampleType.TIME) != 0 ? s.time() : -1;
        }
        SampleId id = rec.sampleId();
        return sampleIdAll() && id.has(SampleType.TIME) ? id.time() : -1;
    }

    private boolean sampleIdAll() {
        return !attrs.isEmpty() && attrs.get(0).sampleIdAll();
    }

    private long combinedType() {
        long t = 0;
        for (EventAttr a : attrs) {
            t |= a.sampleType();
        }
        return t;
    }

    private void queue(long time, String text, PerfRecord rec) {
        if (Long.compareUnsigned(time, maxTime) > 0) {
            maxTime = time;
        }
        // perf's queue keeps equal times in the order they came
        int i = queue.size();
        while (i > 0 && Long.compareUnsigned(queue.get(i - 1).time(), time) > 0) {
            i--;
        }
        queue.add(i, new Queued(time, text, rec));
    }

    private void flush(long limit, boolean all) throws IOException {
        if (!all && limit == 0) {
            return;
        }
        int n = 0;
        while (n < queue.size() && (all || Long.compareUnsigned(queue.get(n).time(), limit) <= 0)) {
            Queued q = queue.get(n++);
            emit(q.text(), q.rec());
        }
        queue.subList(0, n).clear();
    }

    /**
     * Writes a record's dump. What depends on the records perf delivered before (a sample's thread, dso and script
     * line; the symbol a TEXT_POKE patches, from the KSYMBOL records so far) is made now, in perf's order.
     */
    private void emit(String text, PerfRecord rec) throws IOException {
        out.write(text.getBytes(StandardCharsets.UTF_8));
        if (rec instanceof PerfRecord.Sample s) {
            out.write(sampleText.apply(s).getBytes(StandardCharsets.UTF_8));
        } else if (rec instanceof PerfRecord.Ksymbol k) {
            if (k.unregister()) {
                ksymbols.remove(k.addr());
            } else {
                ksymbols.put(k.addr(), k);
            }
        } else if (rec instanceof PerfRecord.TextPoke t) {
            StringBuilder b = new StringBuilder(" ").append(Long.toHexString(t.addr())).append(' ');
            java.util.Map.Entry<Long, PerfRecord.Ksymbol> e = ksymbols.floorEntry(t.addr());
            if (e != null && Long.compareUnsigned(t.addr() - e.getKey(), Integer.toUnsignedLong(e.getValue().len())) < 0) {
                b.append(e.getValue().name()).append("+0x").append(Long.toHexString(t.addr() - e.getKey()));
            }
            ByteBuffer o = t.oldBytes();
            ByteBuffer n = t.newBytes();
            b.append(" old len ").append(o.remaining()).append(" new len ").append(n.remaining()).append('\n');
            bytesLine(b, "Old", o);
            bytesLine(b, "New", n);
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
        }
    }

    private static void bytesLine(StringBuilder b, String which, ByteBuffer bytes) {
        b.append("            ").append(which).append(" bytes:");
        while (bytes.hasRemaining()) {
            b.append(String.format(" %02x", bytes.get() & 0xff));
        }
        b.append('\n');
    }

    /** The offset line and perf's hex and characters of the record's bytes (its header's size, no payload). */
    private void header(long offset, ByteBuffer raw) {
        int n = raw.remaining();
        sb.append('\n').append(hex(offset)).append('@').append(label).append(" [").append(hex(n))
                .append("]: event: ").append(raw.getInt(raw.position())).append('\n');
        sb.append(".\n. ... raw event: size ").append(n).append(" bytes\n");
        for (int i = 0; i < n; i += 16) {
            sb.append(".  ").append(String.format("%04x", i)).append(": ");
            for (int k = 0; k < 16; k++) {
                if (i + k < n) {
                    sb.append(' ').append(String.format("%02x", raw.get(raw.position() + i + k) & 0xff));
                } else {
                    sb.append("   ");
                }
            }
            sb.append("  ");
            for (int k = 0; k < 16; k++) {
                if (i + k < n) {
                    int c = raw.get(raw.position() + i + k) & 0xff;
                    sb.append(c >= 0x20 && c < 0x7f ? (char) c : '.');
                } else {
                    sb.append(' ');
                }
            }
            sb.append('\n');
        }
        sb.append('\n');
    }

    /** perf's cpu and time ahead of the record's offset (-1 -1 without sample_id_all; 0 0 for user records). */
    private void tstamp(PerfRecord rec, boolean user) {
        if (!(rec instanceof PerfRecord.Sample) && !sampleIdAll()) {
            sb.append("-1 -1 ");
            return;
        }
        long combined = combinedType();
        long cpu = 0;
        long time = 0;
        if (rec instanceof PerfRecord.Sample s) {
            cpu = (s.sampleType() & SampleType.CPU) != 0 ? Integer.toUnsignedLong(s.cpu()) : 0xffffffffL;
            time = (s.sampleType() & SampleType.TIME) != 0 ? s.time() : -1;
        } else if (!user) {
            SampleId id = rec.sampleId();
            cpu = id.has(SampleType.CPU) ? Integer.toUnsignedLong(id.cpu()) : 0xffffffffL;
            time = id.has(SampleType.TIME) ? id.time() : -1;
        }
        if ((combined & SampleType.CPU) != 0) {
            sb.append(cpu).append(' ');
        }
        if ((combined & SampleType.TIME) != 0) {
            sb.append(Long.toUnsignedString(time)).append(' ');
        }
    }

    /** The record in words after its name, as perf's dump prints each type. */
    private void words(PerfRecord rec) {
        if (rec instanceof PerfRecord.Mmap m) {
            sb.append(' ').append(m.pid()).append('/').append(m.tid()).append(": [")
                .append(hex(m.addr())).append('(').append(hex(m.len())).append(") @ ").append(hex(m.pgoff()))
                .append("]: ").append((m.misc() & 0x2000) != 0 ? 'r' : 'x').append(' ').append(m.filename())
                .append('\n');
        } else if (rec instanceof PerfRecord.Mmap2 m) {
            sb.append(' ').append(m.pid()).append('/').append(m.tid()).append(": [").append(hex(m.addr()))
                    .append('(').append(hex(m.len())).append(") @ ").append(hex(m.pgoff()));
            if (m.hasBuildId()) {
                sb.append(" <");
                for (byte b : m.buildId()) {
                    sb.append(String.format("%02x", b & 0xff));
                }
                sb.append('>');
            } else {
                sb.append(' ').append(String.format("%02x:%02x", m.maj(), m.min())).append(' ')
                        .append(Long.toUnsignedString(m.ino())).append(' ')
                        .append(Long.toUnsignedString(m.inoGeneration()));
            }
            int p = m.prot();
            int f = m.flags();
            sb.append("]: ").append((p & 1) != 0 ? 'r' : '-').append((p & 2) != 0 ? 'w' : '-')
                    .append((p & 4) != 0 ? 'x' : '-').append((f & 1) != 0 ? 's' : 'p').append(' ')
                    .append(m.filename()).append('\n');
        } else if (rec instanceof PerfRecord.Comm c) {
            sb.append(c.exec() ? " exec" : "").append(": ").append(c.comm()).append(':')
                .append(c.pid()).append('/').append(c.tid()).append('\n');
        } else if (rec instanceof PerfRecord.Exit e) {
            sb.append('(').append(e.pid()).append(':').append(e.tid()).append("):(")
                .append(e.ppid()).append(':').append(e.ptid()).append(")\n");
        } else if (rec instanceof PerfRecord.Fork e) {
            sb.append('(').append(e.pid()).append(':').append(e.tid()).append("):(")
                .append(e.ppid()).append(':').append(e.ptid()).append(")\n");
        } else if (rec instanceof PerfRecord.SwitchCpuWide s) {
            sb.append(' ').append(s.out() ? "OUT" : "IN ")
                .append(s.out() && s.preempt() ? " preempt" : "        ").append("  ")
                .append(s.out() ? "next" : "prev").append(" pid/tid: ").append(String.format("%5d/%-5d",
                        s.nextPrevPid(), s.nextPrevTid())).append('\n');
        } else if (rec instanceof PerfRecord.Switch s) {
            sb.append(' ').append(s.out() ? "OUT" : "IN ")
                .append(s.out() && (s.misc() & PerfRecord.MISC_SWITCH_OUT_PREEMPT) != 0 ? " preempt"
                        : "        ").append('\n');
        } else if (rec instanceof PerfRecord.Aux a) {
            sb.append(" offset: ").append(hex(a.auxOffset())).append(" size: ")
                .append(hex(a.auxSize())).append(" flags: ").append(hex(a.flags())).append(" [")
                .append(a.truncated() ? "T" : "").append(a.overwrite() ? "O" : "").append(a.partial() ? "P" : "")
                .append("]\n");
        } else if (rec instanceof PerfRecord.ItraceStart i) {
            sb.append(" pid: ").append(Integer.toUnsignedString(i.pid()))
                .append(" tid: ").append(Integer.toUnsignedString(i.tid())).append('\n');
        } else if (rec instanceof PerfRecord.Lost l) {
            sb.append(" lost ").append(Long.toUnsignedString(l.lost())).append('\n');
        } else if (rec instanceof PerfRecord.LostSamples l) {
            sb.append(" lost ").append(Long.toUnsignedString(l.lost())).append('\n');
        } else if (rec instanceof PerfRecord.Auxtrace a) {
            sb.append(" size: ").append(hex(a.size())).append("  offset: ")
                .append(hex(a.offset())).append("  ref: ").append(hex(a.reference())).append("  idx: ")
                .append(Integer.toUnsignedString(a.idx())).append("  tid: ").append(a.tid()).append("  cpu: ")
                .append(a.cpu()).append('\n');
        } else if (rec instanceof PerfRecord.TimeConv t) {
            sb.append("\n... Time Shift      ").append(Long.toUnsignedString(t.timeShift()))
                    .append("\n... Time Muliplier  ").append(Long.toUnsignedString(t.timeMult()))
                    .append("\n... Time Zero       ").append(Long.toUnsignedString(t.timeZero())).append('\n');
            if (t.extra().remaining() >= 16) {
                sb.append("... Time Cycles     ").append(Long.toUnsignedString(t.timeCycles()))
                        .append("\n... Time Mask       ").append(hex(t.timeMask()))
                        .append("\n... Cap Time Zero   ").append(t.capUserTimeZero() ? 1 : 0)
                        .append("\n... Cap Time Short  ").append(t.capUserTimeShort() ? 1 : 0).append('\n');
            }
            sb.append(": unhandled!\n");
        } else if (rec instanceof PerfRecord.AuxtraceInfo i) {
            sb.append(" type: ").append(Integer.toUnsignedString(i.auxType())).append('\n');
            if (i.auxType() == PerfRecord.AuxtraceInfo.TYPE_INTEL_PT) {
                intelPtInfo(i);
            }
        } else if (rec instanceof PerfRecord.Ksymbol k) {
            sb.append(" addr ").append(Long.toHexString(k.addr())).append(" len ").append(Integer.toUnsignedString(k.len()))
                    .append(" type ").append(Integer.toUnsignedString(k.ksymType())).append(" flags 0x")
                    .append(Integer.toHexString(k.flags())).append(" name ").append(k.name()).append('\n');
        } else if (rec instanceof PerfRecord.BpfEvent e) {
            sb.append(" type ").append(Integer.toUnsignedString(e.eventType())).append(", flags ")
                    .append(Integer.toUnsignedString(e.flags())).append(", id ").append(Integer.toUnsignedString(e.id()))
                    .append('\n');
        } else if (rec instanceof PerfRecord.Namespaces n) {
            sb.append(SidebandLines.words(n));
        } else if (rec instanceof PerfRecord.Cgroup c) {
            sb.append(SidebandLines.words(c));
        } else if (rec instanceof PerfRecord.FinishedRound f) {
            sb.append(!unordered ? "\n" : rounds ? "PERF_RECORD_FINISHED_ROUND\n" : ": unhandled!\n");
        } else if (rec instanceof PerfRecord.Sample s) {
            sb.append("(IP, 0x").append(Integer.toHexString(s.misc())).append("): ").append(s.pid()).append('/').append(s.tid())
                    .append(": ").append(hex(s.ip())).append(" period: ").append(Long.toUnsignedString(s.period()))
                    .append(" addr: ").append(hex(s.addr())).append('\n');
        } else {
            // records perf prints by name alone (ATTR, FEATURE, ...) leave the line open: the next record's
            // dump starts with the newline
        }
    }

    private static final String[] PT_INFO = {"PMU Type           ", "Time Shift         ", "Time Muliplier     ",
        "Time Zero          ", "Cap Time Zero      ", "TSC bit            ", "NoRETComp bit      ",
        "Have sched_switch  ", "Snapshot mode      ", "Per-cpu maps       ", "MTC bit            ",
        "MTC freq bits      ", "TSC:CTC numerator  ", "TSC:CTC denominator", "CYC bit            ",
        "Max non-turbo ratio", "Filter string len. "};
    /** Words perf prints in hex. */
    private static final long PT_INFO_HEX = 1L << 5 | 1L << 6 | 1L << 10 | 1L << 11 | 1L << 14;

    /** The intel_pt AUXTRACE_INFO words, named as perf's dump names them (as many as the recording has). */
    private void intelPtInfo(PerfRecord.AuxtraceInfo info) {
        List<Long> priv = info.priv();
        int n = Math.min(priv.size(), PT_INFO.length);
        for (int k = 0; k < n; k++) {
            long v = priv.get(k);
            sb.append("  ").append(PT_INFO[k]).append(' ')
                    .append((PT_INFO_HEX >>> k & 1) != 0 ? hex(v) : k == 0 ? Long.toString(v) : Long.toUnsignedString(v))
                    .append('\n');
        }
        ptfence.perfdata.IntelPtInfo pt = ptfence.perfdata.IntelPtInfo.of(info);
        if (priv.size() > 16) {
            sb.append("  Filter string       ").append(pt.filter()).append('\n');
        }
        long cap = pt.capEventTrace();
        if (cap != -1) {
            sb.append("  Cap Event Trace     ").append(cap).append('\n');
        }
    }

    // ---- Intel PT packets ------------------------------------------------------------------------------

    /** One AUXTRACE buffer's packets, from its first byte, as perf's dump: a packet perf cannot read is one byte. */
    private void packets(ByteBuffer data) throws IOException {
        byte[] b = new byte[data.remaining()];
        data.duplicate().get(b);
        sb.setLength(0);
        sb.append(".\n. ... Intel Processor Trace data: size ").append(b.length).append(" bytes\n");
        PacketCursor c = new PacketCursor(TraceSource.of(b));
        c.seek(0);
        int pos = 0;
        while (pos < b.length) {
            int len;
            String desc;
            try {
                int t = c.next();
                if (t == PacketCursor.END) {
                    break;
                }
                len = c.size();
                desc = describe(c, t);
                if (desc == null) {
                    len = 1;
                }
            } catch (TraceDecodeException e) {
                len = 1;
                desc = null;
            }
            // perf's packet decoder counts the zero bytes after a packet into it, up to 8 bytes in all
            int ext = 0;
            while (desc != null && len + ext < 8 && pos + len + ext < b.length && b[pos + len + ext] == 0) {
                ext++;
            }
            len += ext;
            sb.append(".  ").append(String.format("%08x", pos)).append(": ");
            for (int i = 0; i < 16; i++) {
                sb.append(i < len ? String.format(" %02x", b[pos + i] & 0xff) : "   ");
            }
            for (int i = 16; i < len; i++) {
                sb.append(String.format(" %02x", b[pos + i] & 0xff));
            }
            sb.append(' ').append(desc == null ? "Bad packet!" : desc).append('\n');
            pos += len;
            if (pos < b.length && (desc == null || ext > 0)) {
                c.seek(pos);
            }
            if (sb.length() > 1 << 16) {
                emit(sb.toString(), null);
                sb.setLength(0);
            }
        }
        emit(sb.toString(), null);
    }

    /** perf's description of the packet the cursor holds (null: one perf does not know). */
    private static String describe(PacketCursor c, int t) {
        return switch (t) {
            case PacketCursor.PAD -> "PAD";
            case PacketCursor.PSB -> "PSB";
            case PacketCursor.PSBEND -> "PSBEND";
            case PacketCursor.OVF -> "OVF";
            case PacketCursor.STOP -> "TraceSTOP";
            case PacketCursor.TNT_8, PacketCursor.TNT_64 -> {
                StringBuilder s = new StringBuilder("TNT ");
                int n = c.tntCount();
                for (int k = n - 1; k >= 0; k--) {
                    s.append((c.tntBits() >>> k & 1) != 0 ? 'T' : 'N');
                }
                yield s.append(" (").append(n).append(')').toString();
            }
            case PacketCursor.TIP, PacketCursor.TIP_PGE, PacketCursor.TIP_PGD, PacketCursor.FUP -> {
                String name = t == PacketCursor.TIP ? "TIP" : t == PacketCursor.TIP_PGE ? "TIP.PGE"
                        : t == PacketCursor.TIP_PGD ? "TIP.PGD" : "FUP";
                yield c.ipc() == PacketCursor.IPC_SUPPRESSED ? name + " no ip"
                        : name + " 0x" + Long.toHexString(c.ipPayload());
            }
            case PacketCursor.CYC -> "CYC 0x" + Long.toHexString(c.cycles());
            case PacketCursor.VMCS -> "VMCS 0x" + Long.toHexString(c.vmcsBase() >>> 12);
            case PacketCursor.MTC -> "MTC 0x" + Integer.toHexString(c.mtcCtc());
            case PacketCursor.MNT -> "MNT 0x" + Long.toHexString(c.mntPayload());
            case PacketCursor.CBR -> "CBR 0x" + Integer.toHexString(c.cbrRatio());
            case PacketCursor.TSC -> "TSC 0x" + Long.toHexString(c.tsc());
            case PacketCursor.TMA -> "TMA CTC 0x" + Integer.toHexString(c.tmaCtc()) + " FC 0x"
                    + Integer.toHexString(c.tmaFc());
            case PacketCursor.MODE_EXEC -> "MODE.Exec IF:" + (c.interruptFlag() ? 1 : 0) + " "
                    + (c.csl() ? 64 : c.csd() ? 32 : 16);
            case PacketCursor.MODE_TSX -> "MODE.TSX TXAbort:" + (c.abrt() ? 1 : 0) + " InTX:" + (c.intx() ? 1 : 0);
            case PacketCursor.PIP -> "PIP 0x" + Long.toHexString(c.cr3() >>> 5) + " (NR=" + (c.nonRoot() ? 1 : 0)
                    + ")";
            case PacketCursor.PTW -> "PTWRITE 0x" + Long.toHexString(c.ptwPayload()) + " IP:" + (c.ipBit() ? 1 : 0);
            case PacketCursor.EXSTOP -> "EXSTOP IP:" + (c.ipBit() ? 1 : 0);
            case PacketCursor.BEP -> "BEP IP:" + (c.ipBit() ? 1 : 0);
            case PacketCursor.MWAIT -> {
                long p = Integer.toUnsignedLong(c.mwaitHints()) | (long) (c.mwaitExt() & 3) << 32;
                yield "MWAIT 0x" + Long.toHexString(p) + " Hints 0x" + Integer.toHexString(c.mwaitHints() & 0xff)
                        + " Extensions 0x" + Integer.toHexString(c.mwaitExt() & 3);
            }
            case PacketCursor.PWRE -> {
                long p = (c.pwreHw() ? 0x80 : 0) | (c.pwreState() & 0xf) << 12 | (c.pwreSubState() & 0xf) << 8;
                yield "PWRE 0x" + Long.toHexString(p) + " HW:" + (c.pwreHw() ? 1 : 0) + " CState:"
                        + (c.pwreState() & 0xf) + " Sub-CState:" + (c.pwreSubState() & 0xf);
            }
            case PacketCursor.PWRX -> {
                int wake = (c.pwrxInterrupt() ? 1 : 0) | (c.pwrxStore() ? 2 : 0) | (c.pwrxAutonomous() ? 4 : 0);
                long p = (c.pwrxDeepest() & 0xf) | (c.pwrxLast() & 0xf) << 4 | wake << 8;
                yield "PWRX 0x" + Long.toHexString(p) + " Last CState:" + (c.pwrxLast() & 0xf) + " Deepest CState:"
                        + (c.pwrxDeepest() & 0xf) + " Wake Reason 0x" + Integer.toHexString(wake);
            }
            default -> null; // CFE, EVD, TRIG, BBP, BIP: perf 6.1's dump does not name them
        };
    }

    private static String hex(long v) {
        return v == 0 ? "0" : "0x" + Long.toHexString(v);
    }
}

package ptfence.script;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.SampleId;
import ptfence.perfdata.SampleType;
import ptfence.sideband.Sideband;
import ptfence.symbol.Symbol;
import ptfence.symbol.Symbolizer;

/**
 * The lines perf script prints from the recording's own records, between the trace's samples in time order: the
 * samples of other recorded events (a cycles event recorded beside intel_pt), and with --show-task-events,
 * --show-mmap-events, --show-switch-events, --show-lost-events, --show-bpf-events, --show-text-poke-events,
 * --show-namespace-events and --show-cgroup-events the
 * records themselves (perf_event__fprintf's words after the sample's comm, tid, cpu and time).
 */
public final class SidebandLines {
    /** Which records to show. */
    public record Show(boolean task, boolean mmap, boolean switches, boolean lost, boolean bpf, boolean textPoke,
            boolean namespaces, boolean cgroup) {
        /** None: a view that prints only the samples. */
        public static final Show NONE = new Show(false, false, false, false, false, false, false, false);
    }

    /** perf's names of the namespaces, by their index in a NAMESPACES record. */
    private static final String[] NAMESPACES = {"net", "uts", "ipc", "pid", "user", "mnt", "cgroup"};

    /** A record to print ({@code shown}), or one whose only effect is perf reading files (a vdso mapping). */
    private record Item(long time, long seq, PerfRecord record, boolean shown) {
    }

    private final ScriptConfig cfg;
    private final Sideband sideband;
    private final Symbolizer symbols;
    private final Map<Long, PerfEvents.Event> byId;
    private final PerfEvents.Event single;
    private final List<Item> items = new ArrayList<>();
    /** perf's warnings for NAMESPACES records of another count than its own, by time then file order. */
    private final List<Item> nsWarnings = new ArrayList<>();

    /**
     * @param byId each recorded event by its sample ids
     * @param single the event of records whose id says nothing (one event recorded, or no id in the layout)
     */
    public SidebandLines(ScriptConfig cfg, Sideband sideband, Symbolizer symbols, Map<Long, PerfEvents.Event> byId,
            PerfEvents.Event single) {
        this.cfg = cfg;
        this.sideband = sideband;
        this.symbols = symbols;
        this.byId = byId;
        this.single = single;
    }

    /** Takes a record in file order if it prints a line with {@code show}; true if it does. */
    public boolean add(PerfRecord r, Show show, int ptType) {
        boolean take;
        if (r instanceof PerfRecord.Sample s) {
            PerfEvents.Event e = eventOf(s.id() != 0 ? s.id() : s.identifier());
            take = e != null && RecordReads.printed(e.type(), e.config(), ptType);
        } else if (r instanceof PerfRecord.Comm || r instanceof PerfRecord.Fork || r instanceof PerfRecord.Exit) {
            take = show.task();
        } else if (r instanceof PerfRecord.Mmap || r instanceof PerfRecord.Mmap2) {
            take = show.mmap();
            if (!take && RecordReads.vdso(r)) {
                items.add(new Item(timeOf(r), items.size(), r, false));
                return false;
            }
        } else if (r instanceof PerfRecord.Switch || r instanceof PerfRecord.SwitchCpuWide) {
            take = show.switches() || cfg.script != null; // -s: the script's context_switch
        } else if (r instanceof PerfRecord.Lost) {
            take = show.lost();
        } else if (r instanceof PerfRecord.Ksymbol) {
            take = show.bpf() || show.textPoke();
        } else if (r instanceof PerfRecord.BpfEvent) {
            take = show.bpf();
        } else if (r instanceof PerfRecord.TextPoke) {
            take = show.textPoke();
        } else if (r instanceof PerfRecord.Namespaces n) {
            take = show.namespaces();
            if (n.namespaces().size() != NAMESPACES.length) {
                nsWarnings.add(new Item(timeOf(r), nsWarnings.size(), r, false));
            }
        } else if (r instanceof PerfRecord.Cgroup) {
            take = show.cgroup();
        } else {
            take = false;
        }
        if (take && cpuFiltered(r)) {
            take = false; // perf's filter_cpu: the record is processed, its line not printed
        }
        if (take) {
            items.add(new Item(timeOf(r), items.size(), r, true));
        }
        return take;
    }

    /** perf's filter_cpu under -C: a record of a CPU not listed prints nothing (one without a CPU prints). */
    private boolean cpuFiltered(PerfRecord r) {
        if (cfg.cpus == null) {
            return false;
        }
        int cpu;
        if (r instanceof PerfRecord.Sample s) {
            cpu = (s.sampleType() & SampleType.CPU) != 0 ? s.cpu() : -1;
        } else {
            cpu = r.sampleId().has(SampleType.CPU) ? r.sampleId().cpu() : -1;
        }
        return cpu != -1 && !cfg.cpus.contains(cpu);
    }

    /**
     * A vdso mapping: perf reads the process's files in address order to learn its ELF class, and each missing one's
     * data status becomes ERROR; empty lines carry those reads to the merge, at the mapping's time ({@link DsoData}).
     */
    private void vdsoReads(ScriptMerge.Producer out, PerfRecord r, long time) {
        for (String f : RecordReads.ofMapping(symbols, r, time)) {
            out.line();
            out.gate(-cfg.dsoData.id(f));
            out.commit(time, false);
        }
    }

    private PerfEvents.Event eventOf(long id) {
        PerfEvents.Event e = byId.get(id);
        return e != null ? e : single;
    }

    private static long timeOf(PerfRecord r) {
        if (r instanceof PerfRecord.Sample s) {
            return s.time();
        }
        if ((r instanceof PerfRecord.Fork f) && !r.sampleId().has(SampleType.TIME)) {
            return f.time();
        }
        if ((r instanceof PerfRecord.Exit x) && !r.sampleId().has(SampleType.TIME)) {
            return x.time();
        }
        return r.sampleId().has(SampleType.TIME) ? r.sampleId().time() : 0;
    }

    /**
     * What perf says on stderr as it processes each NAMESPACES record whose count of namespaces is not its own seven
     * (shown or not): the kernel or perf is the older.
     */
    public String warnings() {
        nsWarnings.sort(Comparator.comparingLong(Item::time).thenComparingLong(Item::seq));
        StringBuilder sb = new StringBuilder();
        for (Item it : nsWarnings) {
            sb.append(((PerfRecord.Namespaces) it.record()).namespaces().size() < NAMESPACES.length
                    ? "\nWARNING: perf tool seems to support more namespaces than the kernel.\nTry updating the kernel..\n\n"
                    : "\nWARNING: kernel seems to support more namespaces than perf tool.\nTry updating the perf tool..\n\n");
        }
        return sb.toString();
    }

    public boolean isEmpty() {
        return items.isEmpty();
    }

    /** Writes every line, in perf's order (by time; records of one time in file order), then ends the source. */
    public void write(ScriptMerge.Producer out) {
        try {
            items.sort(Comparator.comparingLong(Item::time).thenComparingLong(Item::seq));
            LineBytes scratch = new LineBytes(256);
            for (Item it : items) {
                vdsoReads(out, it.record(), it.time());
                if (it.shown()) {
                    line(out, it.record(), it.time());
                }
            }
            items.clear();
        } finally {
            out.end();
        }
    }

    private String comm(int tid, long time) {
        String c = sideband.commAt(tid, time);
        if (c != null) {
            return c;
        }
        return tid == 0 ? "swapper" : ":" + tid;
    }

    private void line(ScriptMerge.Producer out, PerfRecord r, long time) {
        PerfEvents.Event e = eventOf(r.sampleId().has(SampleType.IDENTIFIER) ? r.sampleId().identifier()
                : r.sampleId().id());
        if (r instanceof PerfRecord.Sample s) {
            e = eventOf(s.id() != 0 ? s.id() : s.identifier());
            sample(out, s, e, time);
            return;
        }
        if (cfg.script != null && (r instanceof PerfRecord.Switch || r instanceof PerfRecord.SwitchCpuWide)) {
            // perf's Python engine: context_switch(ts, cpu, pid, tid, np_pid, np_tid, machine_pid, out, out_preempt,
            // sample's machine_pid, vcpu); the host machine's pid and the vcpu are -1
            PerfRecord.SwitchCpuWide w = r instanceof PerfRecord.SwitchCpuWide x ? x : null;
            SampleId id = r.sampleId();
            boolean outward = (r.misc() & PerfRecord.MISC_SWITCH_OUT) != 0;
            out.line().ch((char) PythonScript.MARK).str(PythonScript.request("context_switch",
                    Long.toUnsignedString(time == -1 ? 0 : time), Integer.toString(id.cpu()), Integer.toString(id.pid()),
                    Integer.toString(id.tid()), Integer.toString(w == null ? -1 : w.nextPrevPid()),
                    Integer.toString(w == null ? -1 : w.nextPrevTid()), "-1", outward ? "true" : "false",
                    outward && (r.misc() & PerfRecord.MISC_SWITCH_OUT_PREEMPT) != 0 ? "true" : "false", "0", "-1"))
                    .nl();
            out.commit(time, false);
            return;
        }
        FieldSet.Type type = e == null ? FieldSet.Type.OTHER : e.outputType();
        long fields = cfg.fields.fields(type);
        int tid = r.sampleId().tid();
        int threadTid = tid;
        if (r instanceof PerfRecord.Comm c) {
            threadTid = c.tid();
        } else if (r instanceof PerfRecord.Fork f) {
            threadTid = f.tid();
        } else if (r instanceof PerfRecord.Exit x) {
            threadTid = x.tid();
        } else if (r instanceof PerfRecord.Mmap m) {
            threadTid = m.tid();
        } else if (r instanceof PerfRecord.Mmap2 m) {
            threadTid = m.tid();
        } else if (r instanceof PerfRecord.Namespaces n) {
            threadTid = n.tid(); // perf finds the thread by the record's own pid/tid
        }
        LineBytes b = start(out, fields, comm(threadTid, time), r.sampleId().pid(), tid, r.sampleId().cpu(), time, r);
        b.str("PERF_RECORD_");
        if (r instanceof PerfRecord.Comm c) {
            b.str("COMM").str((c.misc() & 0x2000) != 0 ? " exec" : "").str(": ").str(c.comm()).ch(':')
                    .sdec(c.pid()).ch('/').sdec(c.tid()).nl();
        } else if (r instanceof PerfRecord.Fork f) {
            b.str("FORK(").sdec(f.pid()).ch(':').sdec(f.tid()).str("):(").sdec(f.ppid()).ch(':').sdec(f.ptid())
                    .str(")").nl();
        } else if (r instanceof PerfRecord.Exit x) {
            b.str("EXIT(").sdec(x.pid()).ch(':').sdec(x.tid()).str("):(").sdec(x.ppid()).ch(':').sdec(x.ptid())
                    .str(")").nl();
        } else if (r instanceof PerfRecord.Mmap m) {
            b.str("MMAP ").sdec(m.pid()).ch('/').sdec(m.tid()).str(": [").hexAlt(m.addr()).ch('(').hexAlt(m.len())
                    .str(") @ ").hexAlt(m.pgoff()).str("]: ").ch((m.misc() & 0x2000) != 0 ? 'r' : 'x').ch(' ')
                    .str(m.filename()).nl();
        } else if (r instanceof PerfRecord.Mmap2 m) {
            b.str("MMAP2 ").sdec(m.pid()).ch('/').sdec(m.tid()).str(": [").hexAlt(m.addr()).ch('(')
                    .hexAlt(m.len()).str(") @ ").hexAlt(m.pgoff()).ch(' ');
            if (m.hasBuildId()) {
                b.ch('<');
                for (byte x : m.buildId()) {
                    b.hexZero(x & 0xff, 2);
                }
                b.ch('>');
            } else {
                b.hexZero(m.maj() & 0xffffffffL, 2).ch(':').hexZero(m.min() & 0xffffffffL, 2).ch(' ')
                        .dec(m.ino()).ch(' ').dec(m.inoGeneration());
            }
            b.str("]: ").ch((m.prot() & 1) != 0 ? 'r' : '-').ch((m.prot() & 2) != 0 ? 'w' : '-')
                    .ch((m.prot() & 4) != 0 ? 'x' : '-').ch((m.flags() & 1) != 0 ? 's' : 'p').ch(' ')
                    .str(m.filename()).nl();
        } else if (r instanceof PerfRecord.Switch s) {
            b.str("SWITCH ").str(inOut(s.misc())).nl();
        } else if (r instanceof PerfRecord.SwitchCpuWide s) {
            boolean outward = (s.misc() & PerfRecord.MISC_SWITCH_OUT) != 0;
            b.str("SWITCH_CPU_WIDE ").str(inOut(s.misc())).str("  ").str(outward ? "next" : "prev")
                    .str(" pid/tid: ").sdec(s.nextPrevPid(), 5).ch('/').sdecLeft(s.nextPrevTid(), 5).nl();
        } else if (r instanceof PerfRecord.Lost l) {
            b.str("LOST lost ").dec(l.lost()).nl();
        } else if (r instanceof PerfRecord.Ksymbol k) {
            b.str("KSYMBOL addr ").hex(k.addr()).str(" len ").dec(k.len() & 0xffffffffL).str(" type ")
                    .dec(k.ksymType()).str(" flags 0x").hex(k.flags()).str(" name ").str(k.name()).nl();
        } else if (r instanceof PerfRecord.BpfEvent be) {
            b.str("BPF_EVENT type ").dec(be.eventType()).str(", flags ").dec(be.flags()).str(", id ")
                    .dec(be.id() & 0xffffffffL).nl();
        } else if (r instanceof PerfRecord.Namespaces n) {
            b.str("NAMESPACES").str(words(n));
        } else if (r instanceof PerfRecord.Cgroup c) {
            b.str("CGROUP").str(words(c));
        } else if (r instanceof PerfRecord.TextPoke p) {
            b.str("TEXT_POKE ").hex(p.addr()).ch(' ');
            Symbol s = symbols.symbol(p.addr(), time, -1);
            if (s != null) {
                b.str(s.name()).str("+0x").hex(p.addr() - s.start());
            } else {
                b.str("[unknown]");
            }
            ByteBuffer o = p.oldBytes();
            ByteBuffer n = p.newBytes();
            b.str(" old len ").dec(o.remaining()).str(" new len ").dec(n.remaining()).nl();
            b.spaces(12).str("Old bytes:");
            while (o.hasRemaining()) {
                b.ch(' ').hexZero(o.get() & 0xff, 2);
            }
            b.nl().spaces(12).str("New bytes:");
            while (n.hasRemaining()) {
                b.ch(' ').hexZero(n.get() & 0xff, 2);
            }
            b.nl();
        }
        out.commit(time, false);
    }

    /** perf's words after a NAMESPACES record's name (perf_event__fprintf_namespaces), here and in -D's dump. */
    static String words(PerfRecord.Namespaces n) {
        List<PerfRecord.Namespace> ns = n.namespaces();
        StringBuilder b = new StringBuilder(" ").append(n.pid()).append('/').append(n.tid())
                .append(" - nr_namespaces: ").append(ns.size()).append("\n\t\t[");
        for (int i = 0; i < ns.size(); i++) {
            if (i > 0 && i % 4 == 0) {
                b.append("\n\t\t ");
            }
            long ino = ns.get(i).ino();
            b.append(i).append('/').append(i < NAMESPACES.length ? NAMESPACES[i] : "UNKNOWN").append(": ")
                    .append(Long.toUnsignedString(ns.get(i).dev())).append('/')
                    .append(ino == 0 ? "0" : "0x" + Long.toHexString(ino)).append(i + 1 < ns.size() ? ", " : "]\n");
        }
        return b.toString();
    }

    /** perf's words after a CGROUP record's name (perf_event__fprintf_cgroup). */
    static String words(PerfRecord.Cgroup c) {
        return " cgroup: " + Long.toUnsignedString(c.id()) + " " + c.path() + "\n";
    }

    private static String inOut(int misc) {
        if ((misc & PerfRecord.MISC_SWITCH_OUT) == 0) {
            return "IN         ";
        }
        return (misc & 0x4000) == 0 ? "OUT        " : "OUT preempt";
    }

    /** perf_sample__fprintf_start for a record: comm, tid, cpu and the time field. */
    private LineBytes start(ScriptMerge.Producer out, long fields, String comm, int pid, int tid, int cpu, long time,
            PerfRecord r) {
        LineBytes b = out.line();
        if ((fields & FieldSet.COMM) != 0) {
            b.right(comm, 16).ch(' ');
        }
        if ((fields & FieldSet.PID) != 0 && (fields & FieldSet.TID) != 0) {
            b.sdec(pid, 5).ch('/').sdecLeft(tid, 5).ch(' ');
        } else if ((fields & FieldSet.PID) != 0) {
            b.sdec(pid, 5).ch(' ');
        } else if ((fields & FieldSet.TID) != 0) {
            b.sdec(tid, 5).ch(' ');
        }
        if ((fields & FieldSet.CPU) != 0) {
            b.ch('[').decZero(cpu, 3).ch(']').ch(' ');
        }
        if ((fields & FieldSet.MISC) != 0) {
            b.str(miscColumn(r));
        }
        if ((fields & FieldSet.TIME) != 0) {
            out.timeHere();
        }
        return b;
    }

    /**
     * perf's misc column for a record or a recorded sample: its header's letters, padded to six (at least one blank).
     * perf tests each cpumode as {@code (misc & m) == m}, so a hypervisor's record shows K, U and H: kept as perf
     * prints it. (A synthesized sample's header has none: six blanks.)
     */
    public static String miscColumn(PerfRecord r) {
        int misc = r.misc();
        StringBuilder b = new StringBuilder(8);
        for (int m = 1; m <= 5; m++) {
            if ((misc & m) == m) {
                b.append("KUHGg".charAt(m - 1));
            }
        }
        if ((r instanceof PerfRecord.Mmap || r instanceof PerfRecord.Mmap2) && (misc & 0x2000) != 0) {
            b.append('M'); // PERF_RECORD_MISC_MMAP_DATA
        } else if (r instanceof PerfRecord.Comm && (misc & PerfRecord.MISC_COMM_EXEC) != 0) {
            b.append('E');
        } else if ((r instanceof PerfRecord.Switch || r instanceof PerfRecord.SwitchCpuWide)
                && (misc & PerfRecord.MISC_SWITCH_OUT) != 0) {
            b.append('S');
            if ((misc & PerfRecord.MISC_SWITCH_OUT_PREEMPT) != 0) {
                b.append('p');
            }
        }
        b.append(" ".repeat(Math.max(1, 6 - b.length())));
        return b.toString();
    }

    private static boolean bpfOutput(PerfEvents.Event e) {
        return e.type() == 1 && e.config() == ptfence.perfdata.BpfOutput.SW_BPF_OUTPUT;
    }

    private static final long DATA_SRC = 1L << 15; // PERF_SAMPLE_DATA_SRC
    /** A map's [start, end) as {@link Symbolizer#mapOf} gives it. */
    private final long[] span = new long[4];

    /**
     * The recorded sample as perf's dlfilter sees it: no branch flags, no instruction, and an address that names a
     * symbol only for the events perf says so of (sample_addr_correlates_sym: the page-fault events; BTS, the
     * other, is no recording ptdecode reads).
     */
    private void dlSample(ptfence.dlfilter.DlFilter.Sample d, PerfRecord.Sample s, PerfEvents.Event e, long time) {
        d.ip = s.ip();
        d.addr = s.addr();
        d.pid = s.pid();
        d.tid = s.tid();
        d.time = time;
        d.cpu = (s.sampleType() & ptfence.perfdata.SampleType.CPU) == 0 ? -1 : s.cpu();
        d.flags = 0;
        d.period = s.period();
        d.event = e.name();
        d.addrCorrelatesSym = e.type() == 1 && (e.config() == 2 || e.config() == 5 || e.config() == 6);
        d.comm = comm(s.tid(), time);
        d.insn(null, 0);
        d.insnCnt = 0;
        d.cycCnt = 0;
    }

    /** A recorded event's sample, as perf script's process_event prints it. */
    private void sample(ScriptMerge.Producer out, PerfRecord.Sample s, PerfEvents.Event e, long time) {
        if (RecordReads.dropped(cfg.time, time) || cfg.filters.any()
                && !cfg.filters.kept(symbols, s.pid(), s.tid(), comm(s.tid(), time), s.ip(), time)) {
            return;
        }
        if (cfg.dlfilter != null) {
            // perf's process_sample_event hands every sample to the filter, a recorded event's too, before printing:
            // the sample goes with its line (or alone, below) and is filtered in the printed order (DlFilterCalls)
            dlSample(out.call(), s, e, time);
        }
        if (cfg.script != null) {
            Symbol sym = s.ip() == 0 ? null : symbols.symbol(s.ip(), time, s.pid());
            String d = sym != null ? sym.dso() : s.ip() == 0 ? null : symbols.dso(s.ip(), time, s.pid());
            int cpu = (s.sampleType() & ptfence.perfdata.SampleType.CPU) == 0 ? -1 : s.cpu();
            // as perf's Python engine hands a recorded event's sample: the event's attr as read from the file, the
            // data_src its parse leaves, its RAW bytes, the map's build id and extent where one covers the ip
            ptfence.cli.Json sample = (s.sampleType() & DATA_SRC) == 0
                    ? PythonScript.recordedSample(s.pid(), s.tid(), cpu, s.ip(), time, s.period(), s.addr())
                    : PythonScript.sample(s.pid(), s.tid(), cpu, s.ip(), time, s.period(), s.addr(), 0);
            String bid = s.ip() == 0 ? null : symbols.mapOf(s.ip(), time, s.pid(), span);
            ptfence.cli.Json where = new ptfence.cli.Json();
            PythonScript.symbol(where, "", d, bid, span, sym == null ? null : sym.name(),
                    sym == null ? 0 : s.ip() - sym.start());
            ByteBuffer rawBuf = ptfence.perfdata.BpfOutput.payload(s, null); // PERF_SAMPLE_RAW (empty without)
            byte[] raw = new byte[rawBuf.remaining()];
            rawBuf.get(raw);
            out.line().ch((char) PythonScript.MARK).str(PythonScript.processEvent(e.name(),
                    cfg.events.recordedAttrBytes(e), comm(s.tid(), time), sample, raw, where, null, 0, "[]", "[]",
                    "[]")).nl();
            out.commit(time, false);
            return;
        }
        long fields = cfg.fields.fields(e.outputType());
        if (fields == 0) {
            if (cfg.dlfilter != null) {
                out.commit(time, false); // no line for the event: the filter's call alone
            }
            return;
        }
        // a sample without CPU: perf's sample->cpu stays (u32)-1, printed as [-01]
        int cpu = (s.sampleType() & ptfence.perfdata.SampleType.CPU) == 0 ? -1 : s.cpu();
        LineBytes b = start(out, fields, comm(s.tid(), time), s.pid(), s.tid(), cpu, time, s);
        if (s.ip() != 0) {
            // perf script fetches the instruction of a sample that has none (script_fetch_insn): it reads the file's
            // data, and a missing file's status becomes ERROR
            String d = RecordReads.ofSample(symbols, s, time);
            if (d != null) {
                out.gate(-cfg.dsoData.id(d));
            }
        }
        if ((fields & FieldSet.PERIOD) != 0) {
            b.dec(s.period(), 10).ch(' ');
        }
        if ((fields & FieldSet.EVNAME) != 0) {
            b.right(e.name(), cfg.events.nameWidth()).ch(':').ch(' ');
        }
        if (cfg.fields.flags()) {
            b.spaces(24); // a recorded event has no branch flags: perf prints the empty column
        }
        if ((fields & FieldSet.ADDR) != 0) {
            b.hex(s.addr(), 16);
        }
        if ((fields & FieldSet.IP) != 0) {
            b.ch(' ').hex(s.ip(), 16);
            Symbol sym = s.ip() == 0 ? null : symbols.symbol(s.ip(), time, s.pid());
            if ((fields & FieldSet.SYM) != 0) {
                b.ch(' ');
                if (sym != null) {
                    b.str(sym.name());
                    if ((fields & FieldSet.SYMOFFSET) != 0) {
                        b.str("+0x").hex(s.ip() - sym.start());
                    }
                } else {
                    b.str("[unknown]");
                }
            }
            if ((fields & FieldSet.DSO) != 0) {
                String d = sym != null ? sym.dso() : s.ip() == 0 ? null : symbols.dso(s.ip(), time, s.pid());
                b.str(" (").str(d == null ? "[unknown]" : d).ch(')');
            }
        }
        if ((fields & FieldSet.IP) != 0 && (fields & FieldSet.SRCLINE) != 0 && s.ip() != 0) {
            ptfence.symbol.SourceLine l = symbols.line(s.ip(), time, s.pid());
            String src = l == null ? null : cfg.fullSourcePath ? l.path() : l.text();
            if (src == null) {
                src = symbols.srclineFallback(s.ip(), time, s.pid());
            }
            if (src != null) {
                b.str("\n  ").str(src);
            }
        }
        if (bpfOutput(e) && (fields & FieldSet.BPF_OUTPUT) != 0) {
            BpfOutputDump.append(b, ptfence.perfdata.BpfOutput.payload(s, null));
        }
        if ((fields & FieldSet.INSNLEN) != 0) {
            b.str(" ilen: 0"); // perf has no instruction for a recorded event's sample (and so prints no insn:)
        }
        b.nl();
        if (cfg.perEvent != null) {
            out.stream(cfg.events.events().indexOf(e) + 1);
        }
        out.commit(time, false);
    }
}

package ptfence.script;

import java.nio.charset.StandardCharsets;
import ptfence.calls.BranchFlags;
import ptfence.flow.Event;
import ptfence.symbol.Symbol;
import ptfence.symbol.SymbolCursor;
import ptfence.symbol.Symbolizer;

/**
 * perf script's lines for one CPU's samples (builtin-script.c: perf_sample__fprintf_start, process_event, the
 * branch ("bts") form, the synthesized events' texts, the auxtrace error line), written as bytes. What repeats from
 * line to line is kept as bytes: the thread's columns until the task changes, a function's name and file while the
 * samples stay in it, the period and event name columns.
 *
 * <p>One file past 1k lines: every kind of sample goes through perf's one field order (process_event) with the same
 * kept columns; split by kind, each part would repeat that order and the columns' cache.
 */
final class SampleLines {
    // constant parts of every branch line, as bytes (LineBytes.str goes char by char)
    private static final byte[] UNKNOWN = "[unknown]".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ARROW = " => ".getBytes(StandardCharsets.US_ASCII);
    private final ScriptConfig cfg;
    private final Symbolizer symbols;
    private final SymbolCursor cursor;
    private final BranchBlocks blocks;
    private final long hw;
    private final long synth;
    private final boolean flags;
    private final int nameWidth;
    private final byte[] instructionsName;
    private final byte[] branchesName;
    /** A branch line's period ("1") and event name columns, as one piece (null: built field by field). */
    private final byte[] branchHead;
    /** A branch line has its target's columns: -F asks for addr, or perf's default fields. */
    private final boolean toColumns;
    // an instruction line's period and event name columns for the last period seen (i1i: always 1)
    private long instructionHeadPeriod = -1;
    private byte[] instructionHead;

    // the thread's columns, made once per task
    private String prefixComm;
    private int prefixPid = Integer.MIN_VALUE;
    private int prefixTid = Integer.MIN_VALUE;
    private final byte[][] prefix = new byte[4][]; // hw, synth, each with a call chain

    /**
     * The names of the last few symbols as bytes (a branch line names two: its source's and its target's, and code
     * calling between functions alternates among a few), so that a line copies them instead of encoding them again.
     */
    private final Symbol[] named = new Symbol[4];
    private final byte[][] namedName = new byte[4][];
    private final byte[][] namedDso = new byte[4][];
    // with the line's own fields (hw): " name" (and "+0x" with symoff) and " (dso)", each an end's piece in one copy
    private final byte[][] namedHead = new byte[4][];
    private final byte[][] namedTail = new byte[4][];
    private int namedNext;
    private long unknownFrom; // with unknownTo: an empty range until the first lookup
    private long unknownTo;
    private int unknownPid;
    private byte[] unknownDso;
    // the last ranges that no symbol names (Symbolizer.missSpan) and their dso: code without symbols often calls
    // between a dozen files or more, and a branch line's two ends are in two, so 64 ranges, the oldest replaced first;
    // each line's ends are then answered without a lookup. A page's last answering range is kept by the page's hash
    // (slot + 1), so an end is found at once, not by a scan of the ranges (a fifth of the branch view's samples on
    // code calling between 17 files)
    private static final int MISSES = 64;
    private final int[] missByPage = new int[512];
    private final long[] missLo = new long[MISSES];
    private final long[] missHi = new long[MISSES];
    private final long[] missFrom = new long[MISSES];
    private final long[] missTo = new long[MISSES];
    private final int[] missPid = new int[MISSES];
    private final byte[][] missDso = new byte[MISSES][];
    /** A miss's " [unknown] (dso)" with the line's own fields (hw), made on first use. */
    private final byte[][] missPiece = new byte[MISSES][];
    private int missNext;
    private int missCount;
    private final long[] span = new long[4];
    private final LineBytes scratch = new LineBytes(256);
    /** --per-event-dump: each kind's event file (its place in the events, 1 up), else 0 (stdout). */
    private final int[] streams = new int[PerfEvents.Kind.values().length];
    // -s: the sample handed to the script (--dlfilter's travel with their lines: DlFilterCalls)
    private final ptfence.dlfilter.DlFilter.Sample dlSample = new ptfence.dlfilter.DlFilter.Sample();

    SampleLines(ScriptConfig cfg, Symbolizer symbols) {
        this.cfg = cfg;
        this.symbols = symbols;
        this.cursor = new SymbolCursor(symbols, cfg.fullSourcePath);
        this.blocks = new BranchBlocks(cursor, symbols);
        this.hw = cfg.fields.fields(FieldSet.Type.HW);
        this.synth = cfg.fields.fields(FieldSet.Type.SYNTH);
        this.flags = cfg.fields.flags();
        this.nameWidth = cfg.events.nameWidth();
        PerfEvents.Event in = cfg.events.of(PerfEvents.Kind.INSTRUCTIONS);
        PerfEvents.Event br = cfg.events.of(PerfEvents.Kind.BRANCHES);
        this.instructionsName = in == null ? null : nameColumn(in.name());
        for (PerfEvents.Kind k : PerfEvents.Kind.values()) {
            PerfEvents.Event e = cfg.perEvent != null ? cfg.events.of(k) : null;
            streams[k.ordinal()] = e == null ? 0 : cfg.events.events().indexOf(e) + 1;
        }
        this.branchesName = br == null ? null : nameColumn(br.name());
        this.branchHead = on(hw, FieldSet.EVNAME) && branchesName == null ? null : branchHead();
        this.toColumns = on(hw, FieldSet.ADDR) || !cfg.fields.userSet(FieldSet.Type.HW);
    }

    private byte[] branchHead() {
        scratch.clear();
        if (on(hw, FieldSet.PERIOD)) {
            scratch.dec(1, 10).ch(' ');
        }
        if (on(hw, FieldSet.EVNAME)) {
            scratch.bytes(branchesName);
        }
        return java.util.Arrays.copyOf(scratch.array(), scratch.length());
    }

    private byte[] nameColumn(String name) {
        scratch.clear();
        scratch.right(name, nameWidth).ch(':').ch(' ');
        return java.util.Arrays.copyOf(scratch.array(), scratch.length());
    }

    private static boolean on(long fields, long f) {
        return (fields & f) != 0;
    }

    // ------------------------------------------------------------------ line parts

    /** perf_sample__fprintf_start: comm, pid/tid, cpu, misc, and where the time goes. */
    private LineBytes start(SampleSink s, long fields) {
        ScriptMerge.Producer out = s.out();
        LineBytes b = out.line();
        boolean chained = s.chain() != null && on(fields, FieldSet.IP) && chainLine;
        int kind = fields == hw ? (chained ? 2 : 0) : chained ? 3 : 1;
        String comm = s.comm();
        if (!comm.equals(prefixComm) || s.pid() != prefixPid || s.tid() != prefixTid) {
            prefixComm = comm; // another task: both kinds' columns are made again
            prefixPid = s.pid();
            prefixTid = s.tid();
            prefix[0] = null;
            prefix[1] = null;
            prefix[2] = null;
            prefix[3] = null;
        }
        if (prefix[kind] == null) {
            scratch.clear();
            if (on(fields, FieldSet.COMM) && kind >= 2) {
                scratch.str(comm).ch(' '); // perf: a sample with a call chain has its comm unpadded
            } else if (on(fields, FieldSet.COMM)) {
                scratch.right(comm, 16).ch(' ');
            }
            if (on(fields, FieldSet.PID) && on(fields, FieldSet.TID)) {
                scratch.sdec(s.pid(), 5).ch('/').sdecLeft(s.tid(), 5).ch(' ');
            } else if (on(fields, FieldSet.PID)) {
                scratch.sdec(s.pid(), 5).ch(' ');
            } else if (on(fields, FieldSet.TID)) {
                scratch.sdec(s.tid(), 5).ch(' ');
            }
            if (on(fields, FieldSet.CPU)) {
                scratch.ch('[').decZero(s.cpu(), 3).ch(']').ch(' ');
            }
            if (on(fields, FieldSet.MISC)) {
                scratch.spaces(6);
            }
            prefix[kind] = java.util.Arrays.copyOf(scratch.array(), scratch.length());
        }
        b.bytes(prefix[kind]);
        if (on(fields, FieldSet.TIME) && s.time() >= 0) {
            out.timeHere();
        }
        return b;
    }

    /** " %16lx sym+0xoff (dso)" as sample__fprintf_sym prints it; the source line after it unless deferred. */
    private void ipSym(LineBytes b, long fields, long ip, long time, int pid, boolean srclineNow) {
        b.hex(ip, 16);
        boolean sym = on(fields, FieldSet.SYM);
        boolean dso = on(fields, FieldSet.DSO);
        if (sym || dso) {
            symDso(b, fields, ip, time, pid);
        }
        if (srclineNow && on(fields, FieldSet.SRCLINE)) {
            srcline(b, ip, time, pid);
        }
    }

    private void symDso(LineBytes b, long fields, long ip, long time, int pid) {
        int miss = ip == 0 ? -1 : missAt(ip, time, pid);
        Symbol s = ip == 0 || miss >= 0 ? null : cursor.symbol(ip, time, pid);
        if (s == null && miss < 0 && ip != 0) {
            miss = learnMiss(ip, time, pid);
        }
        if (fields == hw && (s != null || miss >= 0)) {
            // the usual line: its end's columns as one or two pieces made once per symbol or range
            if (s != null) {
                int i = named(s);
                b.bytes(namedHead[i]);
                if (on(fields, FieldSet.SYM) && on(fields, FieldSet.SYMOFFSET)) {
                    b.hex(ip - s.start());
                }
                b.bytes(namedTail[i]);
            } else {
                byte[] p = missPiece[miss];
                if (p == null) {
                    missPiece[miss] = p = piece(fields, null, UNKNOWN, missDso[miss]);
                }
                b.bytes(p);
            }
            return;
        }
        if (on(fields, FieldSet.SYM)) {
            b.ch(' ');
            if (s != null) {
                b.bytes(namedName[named(s)]);
                if (on(fields, FieldSet.SYMOFFSET)) {
                    b.ch('+').ch('0').ch('x').hex(ip - s.start());
                }
            } else {
                b.bytes(UNKNOWN);
            }
        }
        if (on(fields, FieldSet.DSO)) {
            b.ch(' ').ch('(');
            if (s != null) {
                b.bytes(namedDso[named(s)]);
            } else {
                b.bytes(miss >= 0 ? missDso[miss] : unknownDso(ip, time, pid));
            }
            b.ch(')');
        }
    }

    /** {@code s}'s slot among {@link #named}, its name and file encoded there if it was not among them. */
    private int named(Symbol s) {
        for (int i = 0; i < named.length; i++) {
            if (named[i] == s) {
                return i;
            }
        }
        int i = namedNext;
        namedNext = (i + 1) & (named.length - 1);
        named[i] = s;
        namedName[i] = s.name().getBytes(StandardCharsets.UTF_8);
        namedDso[i] = (s.dso() == null ? "[unknown]" : s.dso()).getBytes(StandardCharsets.UTF_8);
        namedHead[i] = piece(hw, namedName[i], null, null);
        namedTail[i] = piece(hw, null, null, namedDso[i]);
        return i;
    }

    /**
     * With {@code fields}: " " and a symbol's name ("+0x" after it with symoff, the offset left to the line), or
     * " " and {@code unknown}; then " (dso)". A part is left out where its argument is null or its field is off.
     */
    private byte[] piece(long fields, byte[] name, byte[] unknown, byte[] dso) {
        scratch.clear();
        if (on(fields, FieldSet.SYM) && name != null) {
            scratch.ch(' ').bytes(name);
            if (on(fields, FieldSet.SYMOFFSET)) {
                scratch.ch('+').ch('0').ch('x');
            }
        } else if (on(fields, FieldSet.SYM) && unknown != null) {
            scratch.ch(' ').bytes(unknown);
        }
        if (on(fields, FieldSet.DSO) && dso != null) {
            scratch.ch(' ').ch('(').bytes(dso).ch(')');
        }
        return java.util.Arrays.copyOf(scratch.array(), scratch.length());
    }

    /** The remembered range no symbol names that holds {@code ip} for {@code pid} at {@code time}, or -1. */
    private int missAt(long ip, long time, int pid) {
        int h = (int) (ip >>> 12) & (missByPage.length - 1);
        int k = missByPage[h] - 1;
        if (k >= 0 && missHolds(k, ip, time, pid)) {
            return k;
        }
        for (int i = 0; i < missCount; i++) {
            if (missHolds(i, ip, time, pid)) {
                missByPage[h] = i + 1;
                return i;
            }
        }
        return -1;
    }

    private boolean missHolds(int i, long ip, long time, int pid) {
        return missPid[i] == pid && Long.compareUnsigned(ip - missLo[i], missHi[i] - missLo[i]) < 0
                && (time < 0 ? missTo[i] == Long.MAX_VALUE : time >= missFrom[i] && time < missTo[i]);
    }

    /** After a symbol miss at {@code ip}: the range the symbolizer says shares it, in the older slot; or -1. */
    private int learnMiss(long ip, long time, int pid) {
        String dso = symbols.missSpan(ip, time, pid, span);
        if (dso == null) {
            return -1;
        }
        int i = missNext;
        missNext = (i + 1) % MISSES;
        missCount = Math.max(missCount, i + 1);
        missLo[i] = span[0];
        missHi[i] = span[1];
        missFrom[i] = span[2];
        missTo[i] = span[3];
        missPid[i] = pid;
        missDso[i] = dso.getBytes(StandardCharsets.UTF_8);
        missPiece[i] = null;
        missByPage[(int) (ip >>> 12) & (missByPage.length - 1)] = i + 1;
        return i;
    }

    /** The file of an address no symbol names (looked up again only outside the last such page). */
    private byte[] unknownDso(long ip, long time, int pid) {
        if (ip != 0 && pid == unknownPid && Long.compareUnsigned(ip - unknownFrom, unknownTo - unknownFrom) < 0) {
            return unknownDso;
        }
        String d = ip == 0 ? null : symbols.dso(ip, time, pid);
        unknownDso = (d == null ? "[unknown]" : d).getBytes(StandardCharsets.UTF_8);
        unknownFrom = ip & ~0xfffL;
        unknownTo = unknownFrom + 0x1000;
        unknownPid = pid;
        return unknownDso;
    }

    private void srcline(LineBytes b, long ip, long time, int pid) {
        String src = ip == 0 ? null : cursor.srcline(ip, time, pid);
        if (src != null) {
            b.ch('\n').ch(' ').ch(' ').str(src);
            return;
        }
        String fallback = ip == 0 ? null : symbols.srclineFallback(ip, time, pid);
        if (fallback != null) {
            b.ch('\n').ch(' ').ch(' ').str(fallback);
        }
    }

    private void insnFields(LineBytes b, long fields, int size, byte[] bytes, int len) {
        if (on(fields, FieldSet.INSNLEN)) {
            b.str(" ilen: ").sdec(size);
        }
        if (on(fields, FieldSet.INSN) && len > 0) {
            b.str(" insn:");
            for (int i = 0; i < len; i++) {
                b.ch(' ').hexZero(bytes[i] & 0xff, 2);
            }
        }
    }

    private void flagsColumn(LineBytes b, int f) {
        if (flags) {
            b.bytes(flagsText(f));
        }
    }

    // the flags column's bytes for the last few flag values (a branch view has a handful: jmp, jcc, call, return...)
    private final int[] flagsKey = new int[8];
    private final byte[][] flagsBytes = new byte[8][];
    private int flagsNext;
    private int flagsLastKey;
    private byte[] flagsLast;

    private byte[] flagsText(int f) {
        if (flagsLast != null && flagsLastKey == f) {
            return flagsLast;
        }
        for (int i = 0; i < flagsBytes.length; i++) {
            if (flagsBytes[i] != null && flagsKey[i] == f) {
                flagsLastKey = f;
                return flagsLast = flagsBytes[i];
            }
        }
        String name = f == 0 ? "" : BranchFlags.perfName(f);
        scratch.clear();
        scratch.ch(' ').ch(' ').left(name.stripTrailing().isEmpty() ? "" : name, 21).ch(' ');
        int i = flagsNext;
        flagsNext = (i + 1) % flagsBytes.length;
        flagsKey[i] = f;
        flagsBytes[i] = java.util.Arrays.copyOf(scratch.array(), scratch.length());
        flagsLastKey = f;
        return flagsLast = flagsBytes[i];
    }

    /** The file perf names for {@code ip}, or null where nothing is mapped. */
    String dsoOf(long ip, long time, int pid) {
        return ip == 0 ? null : symbols.dso(ip, time, pid);
    }

    /** The -S and --dsos filters. */
    boolean symbolKept(long ip, long time, int pid) {
        if (!cfg.filters.byPlace()) {
            return true;
        }
        Symbol s = ip == 0 ? null : cursor.symbol(ip, time, pid);
        String d = s != null ? s.dso() : ip == 0 ? null : symbols.dso(ip, time, pid);
        return cfg.filters.placeKept(ip, d, s == null ? null : s.name());
    }

    // ------------------------------------------------------------------ samples

    void instruction(SampleSink s, long ip, long to, int f, int size, byte[] bytes, int len, long period) {
        if ((cfg.dlfilter != null || cfg.script != null) && dlDrops(s, ip, to, f, period, PerfEvents.Kind.INSTRUCTIONS, bytes, len)) {
            return;
        }
        long fields = hw;
        if (fields == 0) {
            return;
        }
        chainLine = true;
        LineBytes b = start(s, fields);
        chainLine = false;
        if (on(fields, FieldSet.PERIOD) && on(fields, FieldSet.EVNAME) && instructionsName != null) {
            if (period != instructionHeadPeriod || instructionHead == null) {
                scratch.clear();
                scratch.dec(period, 10).ch(' ').bytes(instructionsName);
                instructionHead = java.util.Arrays.copyOf(scratch.array(), scratch.length());
                instructionHeadPeriod = period;
            }
            b.bytes(instructionHead);
        } else {
            if (on(fields, FieldSet.PERIOD)) {
                b.dec(period, 10).ch(' ');
            }
            if (on(fields, FieldSet.EVNAME)) {
                b.bytes(instructionsName);
            }
        }
        flagsColumn(b, f);
        if (on(fields, FieldSet.ADDR)) {
            b.hex(to, 16);
        }
        memoryColumns(b, fields);
        if (on(fields, FieldSet.IP) && s.chain() != null) {
            callchain(b, fields, s);
        } else if (on(fields, FieldSet.IP)) {
            b.ch(' ');
            ipSym(b, fields, ip, s.time(), s.pid(), true);
        }
        lastBranches(b, fields, s);
        insnFields(b, fields, size, bytes, len);
        if (on(fields, FieldSet.BRSTACKINSN | FieldSet.BRSTACKINSNLEN)) {
            blocks.write(b, fields, s, ip, cfg.maxBlocks);
        }
        physAddr(b, fields);
        ipc(b, fields, s);
        b.nl();
        s.out().stream(streams[PerfEvents.Kind.INSTRUCTIONS.ordinal()]);
        s.out().commit(s.time(), true);
    }

    /** perf's data_src decoded where the sample's is 0 (no memory access recorded): Intel PT's samples carry none. */
    private static final byte[] NO_DATA_SRC = " |OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  N/A"
            .getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /**
     * data_src and weight, after the address (perf's process_event; a branch's line, print_sample_bts, has neither):
     * a recording with AUX data lets them through on the synthesized samples, which carry 0.
     */
    private static void memoryColumns(LineBytes b, long fields) {
        if (on(fields, FieldSet.DATA_SRC)) {
            b.hex(0, 16).bytes(NO_DATA_SRC);
        }
        if (on(fields, FieldSet.WEIGHT)) {
            b.dec(0, 16);
        }
    }

    /** phys_addr (0 on the synthesized samples), after the instruction and before IPC, as perf's process_event. */
    private static void physAddr(LineBytes b, long fields) {
        if (on(fields, FieldSet.PHYS_ADDR)) {
            b.hex(0, 16);
        }
    }

    /** The last branches in the form -F asks for: brstack, else brstacksym, else brstackoff (perf's order). */
    private void lastBranches(LineBytes b, long fields, SampleSink s) {
        if (on(fields, FieldSet.BRSTACK)) {
            brstack(b, fields, s, BranchEnd.ADDRESS);
        } else if (on(fields, FieldSet.BRSTACKSYM)) {
            brstack(b, fields, s, BranchEnd.SYMBOL);
        } else if (on(fields, FieldSet.BRSTACKOFF)) {
            brstack(b, fields, s, BranchEnd.OFFSET);
        }
    }

    /** How an end of a last branch is written: brstack (the address), brstackoff (its map's), brstacksym. */
    private enum BranchEnd { ADDRESS, OFFSET, SYMBOL }

    /**
     * perf_sample__fprintf_brstack/_brstackoff/_brstacksym: each last branch as "FROM/TO" then the flags; brstack and
     * brstackoff write " 0xFROM/0xTO", brstacksym "sym+0xoff/sym+0xoff" ([unknown] without a symbol) with no blank
     * ahead; (dso) after each end with the dso field. No mispredict, cycles or type: perf's Intel PT branches carry none.
     */
    private void brstack(LineBytes b, long fields, SampleSink s, BranchEnd how) {
        int n = s.lastBranchCount();
        long time = s.time();
        int pid = s.pid();
        boolean dso = on(fields, FieldSet.DSO);
        for (int i = 0; i < n; i++) {
            for (int e = 0; e < 2; e++) {
                long a = e == 0 ? s.lastBranchFrom(i) : s.lastBranchTo(i);
                switch (how) {
                    case SYMBOL -> b.str(e == 0 ? "" : "/").str(symOff(a, time, pid));
                    case OFFSET -> b.str(e == 0 ? " 0x" : "/0x").hex(symbols.offsetAddress(a, time, pid));
                    default -> b.str(e == 0 ? " 0x" : "/0x").hex(a);
                }
                if (dso) {
                    b.ch('(').bytes(dsoName(a, time, pid)).ch(')');
                }
            }
            branchFlags(b, s.lastBranchFlags(i));
        }
    }

    /** print_bstack_flags: mispredict (none here), in transaction, abort, cycles, type (none). */
    private static void branchFlags(LineBytes b, int f) {
        b.str("/-/").ch((f & BranchFlags.IN_TX) != 0 ? 'X' : '-').ch('/')
                .ch((f & BranchFlags.TX_ABORT) != 0 ? 'A' : '-').str("/0/ ");
    }

    private byte[] dsoName(long a, long time, int pid) {
        Symbol sym = a == 0 ? null : cursor.symbol(a, time, pid);
        return sym != null && sym.dso() != null ? sym.dso().getBytes(StandardCharsets.UTF_8)
                : unknownDso(a, time, pid);
    }

    /** The line being started is an instruction sample's (the one kind that carries perf's call chain). */
    private boolean chainLine;

    /**
     * The sample's call chain where perf prints the IP (sample__fprintf_callchain): a line each, tab, the address in
     * its map, symbol and offset, (dso); the context markers are left out.
     */
    private void callchain(LineBytes b, long fields, SampleSink s) {
        long[] c = s.chain();
        int n = s.chainLength();
        long time = s.time();
        int pid = s.pid();
        b.ch('\n');
        for (int i = 0; i < n; i++) {
            long a = c[i];
            if (a == CallDepth.USER || a == CallDepth.KERNEL) {
                continue;
            }
            b.ch('\t').hex(symbols.mapAddress(a, time, pid), 16);
            if (on(fields, FieldSet.SYM | FieldSet.DSO)) {
                symDso(b, fields, a, time, pid);
            }
            b.ch('\n');
        }
    }

    /** The column width perf's callindent keeps (one for the whole run in perf; per CPU here). */
    private int spacing;

    /**
     * perf_sample__fprintf_callindent: the called function (a call, a trace begin) or the one left (a return, a trace
     * end) indented by the thread's call depth, in a column whose width changes seldom.
     */
    private void callindent(LineBytes b, long fields, SampleSink s, long from, long to, int f) {
        long time = s.time();
        int pid = s.pid();
        String name = null;
        long ip = 0;
        if ((f & (BranchFlags.CALL | BranchFlags.TRACE_BEGIN)) != 0) {
            Symbol sym = to == 0 ? null : cursor.symbol(to, time, pid);
            if (sym != null) {
                name = sym.name();
            } else {
                ip = to;
            }
        } else if ((f & (BranchFlags.RETURN | BranchFlags.TRACE_END)) != 0) {
            Symbol sym = from == 0 ? null : cursor.symbol(from, time, pid);
            if (sym != null) {
                name = sym.name();
            } else {
                ip = from;
            }
        }
        if (on(fields, FieldSet.DSO) && !on(fields, FieldSet.IP) && !on(fields, FieldSet.ADDR)) {
            b.ch('(');
            Symbol sym = from == 0 ? null : cursor.symbol(from, time, pid);
            b.bytes(sym != null && sym.dso() != null ? sym.dso().getBytes(StandardCharsets.UTF_8)
                    : unknownDso(from, time, pid));
            b.str(")\t");
        }
        int at = b.length();
        int depth = s.callDepth(f);
        if (name != null) {
            b.spaces(depth * 4).str(name);
        } else if (ip != 0) {
            b.spaces(depth * 4).hex(ip, 16);
        }
        int len = b.length() - at;
        if (len > spacing || len != 0 && len < spacing - 52) {
            spacing = (len + 4 + 31) / 32 * 32;
        }
        if (len < spacing) {
            b.spaces(spacing - len);
        }
    }

    /** perf_sample__fprintf_ipc: instructions per cycle (truncated to two decimals) where the sample has counts. */
    private static void ipc(LineBytes b, long fields, SampleSink s) {
        long insns = s.sampleInsnCnt();
        long cycles = s.sampleCycCnt();
        if (on(fields, FieldSet.IPC) && insns != 0 && cycles != 0) {
            long x = Long.divideUnsigned(insns * 100, cycles);
            b.str(" \t IPC: ").dec(x / 100).ch('.').decZero(x % 100, 2).str(" (").dec(insns).ch('/').dec(cycles)
                    .str(") ");
        }
    }

    void branch(SampleSink s, long from, long to, int f, int size, byte[] bytes, int len) {
        if ((cfg.dlfilter != null || cfg.script != null) && dlDrops(s, from, to, f, 1, PerfEvents.Kind.BRANCHES, bytes, len)) {
            return;
        }
        long fields = hw;
        if (fields == 0) {
            return;
        }
        LineBytes b = start(s, fields);
        if (branchHead != null) {
            b.bytes(branchHead);
        } else {
            if (on(fields, FieldSet.PERIOD)) {
                b.dec(1, 10).ch(' ');
            }
            b.bytes(branchesName);
        }
        flagsColumn(b, f);
        if (on(fields, FieldSet.CALLINDENT)) {
            callindent(b, fields, s, from, to, f);
        }
        if (on(fields, FieldSet.IP)) {
            b.ch(' ');
            ipSym(b, fields, from, s.time(), s.pid(), false);
        }
        if (toColumns) {
            b.bytes(ARROW).hex(to, 16);
            if (on(fields, FieldSet.SYM) || on(fields, FieldSet.DSO)) {
                symDso(b, fields, to, s.time(), s.pid());
            }
        }
        ipc(b, fields, s);
        if (on(fields, FieldSet.IP) && on(fields, FieldSet.SRCLINE)) {
            srcline(b, from, s.time(), s.pid());
        }
        if (size == 0 && (f & (BranchFlags.TRACE_BEGIN | BranchFlags.ASYNC)) != 0
                && on(fields, FieldSet.INSN | FieldSet.INSNLEN)) {
            // perf's state there has no instruction of its own: a trace begin keeps the one walked last, and where
            // there is none perf script fetches the one at the sample's IP (script_fetch_insn)
            int n = s.fetch(from);
            insnFields(b, fields, n, s.fetchedBytes(), n);
        } else {
            insnFields(b, fields, size, bytes, len);
        }
        b.nl();
        s.out().stream(streams[PerfEvents.Kind.BRANCHES.ordinal()]);
        s.out().commit(s.time(), true);
    }

    /** perf gives a synthesized event's sample (psb, cbr, ptwrite, power) the thread's call chain and last branches. */
    private static void synthStacks(SampleSink s, long ip) {
        s.moveTask();
        s.stacks(ip);
    }

    /** A synthesized event's line: its own text, then the IP. */
    private LineBytes synthStart(SampleSink s, String name, int f) {
        s.moveTask();
        chainLine = true;
        LineBytes b = start(s, synth);
        chainLine = false;
        if (on(synth, FieldSet.PERIOD)) {
            b.dec(1, 10).ch(' '); // perf's synthesized events carry period 1
        }
        if (on(synth, FieldSet.EVNAME)) {
            b.right(name, nameWidth).ch(':').ch(' ');
        }
        flagsColumn(b, f);
        return b;
    }

    private void synthEnd(SampleSink s, LineBytes b, long ip, long to, boolean skippable, PerfEvents.Kind kind) {
        if (on(synth, FieldSet.ADDR)) {
            b.hex(to, 16);
        }
        memoryColumns(b, synth);
        if (on(synth, FieldSet.IP) && s.chain() != null) {
            callchain(b, synth, s);
        } else if (on(synth, FieldSet.IP)) {
            b.ch(' ');
            ipSym(b, synth, ip, s.time(), s.pid(), true);
        }
        lastBranches(b, synth, s);
        if (on(synth, FieldSet.INSN | FieldSet.INSNLEN)) {
            int n = s.fetch(ip);
            insnFields(b, synth, n, s.fetchedBytes(), n);
        }
        if (on(synth, FieldSet.BRSTACKINSN | FieldSet.BRSTACKINSNLEN)) {
            blocks.write(b, synth, s, ip, cfg.maxBlocks);
        }
        physAddr(b, synth);
        b.nl();
        String dso = dsoOf(ip, s.time(), s.pid());
        if (dso != null) {
            // a synthesized sample carries no instruction bytes: perf script fetches them at its IP whatever the
            // fields (script_fetch_insn), a read of that file's data, kept in time order by the merge (DsoData)
            s.out().gate(-cfg.dsoData.id(dso));
        }
        s.out().stream(streams[kind.ordinal()]);
        s.out().commit(s.time(), skippable);
    }

    /** perf's pt spacing: texts of the synthesized events are padded to 34 columns. */
    private static void ptSpacing(LineBytes b, int from) {
        int len = b.length() - from;
        if (len > 0 && len < 34) {
            b.spaces(34 - len);
        }
    }

    private boolean synthShown() {
        return synth != 0;
    }

    void psb(SampleSink s, long ip, long addr, long offset) {
        synthStacks(s, ip);
        if (!s.resolvedKept(ip)) {
            return;
        }
        scriptRaw = cfg.script == null ? null : raw(0, offset);
        if ((cfg.dlfilter != null || cfg.script != null) && dlDrops(s, ip, addr, 0, 1, PerfEvents.Kind.PSB, null, 0)) {
            return;
        }
        if (!synthShown()) {
            return;
        }
        LineBytes b = synthStart(s, "psb", 0); // perf clears a PSB's flags
        if (on(synth, FieldSet.SYNTH)) {
            int from = b.length();
            b.str(" psb offs: ").hexAlt(offset);
            ptSpacing(b, from);
        }
        synthEnd(s, b, ip, addr, true, PerfEvents.Kind.PSB);
    }

    void cbr(SampleSink s, long ip, long to, int cbr) {
        synthStacks(s, ip);
        if (!s.resolvedKept(ip)) {
            return;
        }
        if (cfg.script != null) {
            // perf_synth_intel_cbr: cbr, max non-turbo ratio, the frequency in kHz
            scriptRaw = raw((cbr & 0xff) | (cfg.pt.maxNonTurboRatio() & 0xff) << 16,
                    cbr * cfg.cbr2khz & 0xffffffffL);
        }
        if ((cfg.dlfilter != null || cfg.script != null) && dlDrops(s, ip, to, s.lastFlags(ip), 1, PerfEvents.Kind.CBR, null, 0)) {
            return;
        }
        if (!synthShown()) {
            return;
        }
        LineBytes b = synthStart(s, "cbr", s.lastFlags(ip));
        if (on(synth, FieldSet.SYNTH)) {
            int from = b.length();
            long freq = (cbr * cfg.cbr2khz + 500) / 1000;
            b.str(" cbr: ").sdec(cbr, 2).str(" freq: ").sdec(freq, 4).str(" MHz ");
            long max = cfg.pt.maxNonTurboRatio();
            if (max != 0) {
                long percent = (5 + (1000L * cbr) / max) / 10;
                b.ch('(').sdec(percent, 3).str("%) ");
            }
            ptSpacing(b, from);
        }
        synthEnd(s, b, ip, to, false, PerfEvents.Kind.CBR);
    }

    void ptwrite(SampleSink s, long ip, long payload, boolean fupIp) {
        synthStacks(s, ip);
        if (!s.resolvedKept(ip)) {
            return;
        }
        scriptRaw = cfg.script == null ? null : raw(fupIp ? 1 : 0, payload);
        if ((cfg.dlfilter != null || cfg.script != null) && dlDrops(s, ip, 0, s.lastFlags(ip), 1, PerfEvents.Kind.PTWRITE, null, 0)) {
            return;
        }
        if (!synthShown()) {
            return;
        }
        LineBytes b = synthStart(s, "ptwrite", s.lastFlags(ip));
        if (on(synth, FieldSet.SYNTH)) {
            int from = b.length();
            b.str(" IP: ").sdec(fupIp ? 1 : 0).str(" payload: ").hexAlt(payload).ch(' ');
            b.str(ptfence.calls.PerfLines.printable(payload)).ch(' ');
            ptSpacing(b, from);
        }
        synthEnd(s, b, ip, 0, true, PerfEvents.Kind.PTWRITE);
    }

    void power(SampleSink s, PerfEvents.Kind k, Event ev) {
        if (!synthShown()) {
            return;
        }
        String name = switch (k) {
            case MWAIT -> "mwait";
            case PWRE -> "pwre";
            case PWRX -> "pwrx";
            default -> "exstop";
        };
        long ip = switch (k) {
            case MWAIT, EXSTOP -> ev.ipSuppressed ? 0 : ev.ip;
            default -> 0;
        };
        synthStacks(s, ip);
        if (!s.resolvedKept(ip)) {
            return;
        }
        if (cfg.script != null) {
            scriptRaw = switch (k) {
                case MWAIT -> raw(0, (ev.hints & 0xffL) | (ev.ext & 3L) << 32);
                case PWRE -> raw(0, (ev.hw ? 0x80 : 0) | (ev.state & 0xfL) << 12 | (ev.subState & 0xfL) << 8);
                case PWRX -> raw(0, (ev.deepest & 0xfL) | (ev.last & 0xfL) << 4 | ((ev.interrupt ? 1 : 0)
                        | (ev.store ? 2 : 0) | (ev.autonomous ? 4 : 0)) << 8);
                default -> raw(ev.ipSuppressed ? 0 : 1, 0);
            };
        }
        if ((cfg.dlfilter != null || cfg.script != null) && dlDrops(s, ip, 0, s.lastFlags(ip), 1, k, null, 0)) {
            return;
        }
        LineBytes b = synthStart(s, name, s.lastFlags(ip));
        if (on(synth, FieldSet.SYNTH)) {
            int from = b.length();
            switch (k) {
                case MWAIT -> b.str(" hints: ").hexAlt(ev.hints).str(" extensions: ").hexAlt(ev.ext).ch(' ');
                case PWRE -> b.str(" hw: ").sdec(ev.hw ? 1 : 0).str(" cstate: ").sdec(ev.state).str(" sub-cstate: ")
                        .sdec(ev.subState).ch(' ');
                case PWRX -> b.str(" deepest cstate: ").sdec(ev.deepest).str(" last cstate: ").sdec(ev.last)
                        .str(" wake reason: ").hexAlt((ev.interrupt ? 1 : 0) | (ev.store ? 2 : 0)
                                | (ev.autonomous ? 4 : 0)).ch(' ');
                default -> b.str(" IP: ").sdec(ev.ipSuppressed ? 0 : 1).ch(' ');
            }
            ptSpacing(b, from);
        }
        synthEnd(s, b, ip, 0, true, k);
    }

    void transaction(SampleSink s, long ip, int f) {
        transaction(s, ip, 0, f);
    }

    /** A transaction sample whose state goes on to {@code to} (perf's quick decode: an abort's branch target). */
    void transaction(SampleSink s, long ip, long to, int f) {
        if ((cfg.dlfilter != null || cfg.script != null) && dlDrops(s, ip, 0, f, 1, PerfEvents.Kind.TRANSACTIONS, null, 0)) {
            return;
        }
        long fields = hw;
        if (fields == 0) {
            return;
        }
        s.moveTask();
        LineBytes b = start(s, fields);
        if (on(fields, FieldSet.PERIOD)) {
            b.dec(1, 10).ch(' '); // a hardware-type sample as branches and instructions: perf prints its period, 1
        }
        if (on(fields, FieldSet.EVNAME)) {
            b.right("transactions", nameWidth).ch(':').ch(' ');
        }
        flagsColumn(b, f);
        if (on(fields, FieldSet.ADDR)) {
            b.hex(to, 16);
        }
        memoryColumns(b, fields);
        if (on(fields, FieldSet.IP)) {
            b.ch(' ');
            ipSym(b, fields, ip, s.time(), s.pid(), true);
        }
        physAddr(b, fields);
        b.nl();
        s.out().stream(streams[PerfEvents.Kind.TRANSACTIONS.ordinal()]);
        s.out().commit(s.time(), true);
    }

    /**
     * perf's --dlfilter (or -s) on this sample. With -s the script's call replaces the line: true. With --dlfilter the
     * sample goes with its line (or alone, where its event prints none) and the filter is called when the line's turn
     * to be printed comes ({@link DlFilterCalls}): false, the line is built.
     */
    private boolean dlDrops(SampleSink s, long ip, long addr, int f, long period, PerfEvents.Kind kind, byte[] bytes,
            int len) {
        s.moveTask();
        ptfence.dlfilter.DlFilter.Sample d = cfg.script != null ? dlSample
                : s.out().call();
        PerfEvents.Event ev = cfg.events.of(kind);
        d.ip = ip;
        d.addr = addr;
        d.pid = s.pid();
        d.tid = s.tid();
        d.time = s.time();
        d.cpu = s.cpu();
        d.flags = f;
        d.period = period;
        d.event = ev == null ? kind.name().toLowerCase(java.util.Locale.ROOT) : ev.name();
        d.addrCorrelatesSym = kind == PerfEvents.Kind.BRANCHES; // perf: a branches event sampled every branch
        d.comm = s.comm();
        d.insn(bytes, len);
        // perf counts IPC on its instruction and branch samples only; the others' counts stay 0
        boolean ipc = kind == PerfEvents.Kind.INSTRUCTIONS || kind == PerfEvents.Kind.BRANCHES;
        d.insnCnt = ipc ? s.sampleInsnCnt() : 0;
        d.cycCnt = ipc ? s.sampleCycCnt() : 0;
        if (cfg.script != null) {
            long time = s.time();
            int pid = s.pid();
            d.resolver = a -> DlFilterCalls.location(a, cursor.symbol(a, time, pid), symbols, time, pid);
            scriptCall(s, d, kind);
            return true;
        }
        boolean lineFollows = switch (kind) {
            case INSTRUCTIONS, BRANCHES, TRANSACTIONS -> hw != 0;
            case PSB, CBR, PTWRITE -> synthShown();
            default -> true;
        };
        if (!lineFollows) {
            s.out().commit(s.time(), false); // no line for the event: the call alone
        }
        return false;
    }

    /** -s: the raw_buf of the sample being made (perf's perf_synth_intel_* layouts), or null. */
    private byte[] scriptRaw;

    /**
     * A synthesized event's raw data as perf hands it to scripts: its perf_synth_intel_* struct after the leading
     * padding word, i.e. a 32-bit flags word and a 64-bit payload, little-endian.
     */
    private static byte[] raw(long flags, long payload) {
        return java.nio.ByteBuffer.allocate(12).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt((int) flags)
                .putLong(payload).array();
    }

    /**
     * -s: the sample as perf's Python engine hands it to process_event, written as a marked line in the sample's
     * place; the script's output replaces it (PythonScript).
     */
    private void scriptCall(SampleSink s, ptfence.dlfilter.DlFilter.Sample d, PerfEvents.Kind kind) {
        ptfence.cli.Json sample = PythonScript.sample(d.pid, d.tid, d.cpu, d.ip, d.time, d.period, d.addr, d.flags);
        if (d.addrCorrelatesSym) {
            sample.field("addr_correlates_sym", true);
            ptfence.dlfilter.DlFilter.Location a = d.resolver.at(d.addr);
            String bid = d.addr == 0 ? null : symbols.mapOf(d.addr, d.time, d.pid, span);
            PythonScript.symbol(sample, "addr_", d.addr != 0 ? a.dso() : null, bid, span, a.sym(),
                    d.addr - a.symStart());
        }
        PythonScript.flags(sample, d.flags);
        if (d.cycCnt != 0 && d.insnCnt != 0) {
            // the counts only where the sample took both (perf's scripts print an IPC column then, as -F +ipc does)
            sample.raw("insn_cnt", Long.toUnsignedString(d.insnCnt)).raw("cyc_cnt", Long.toUnsignedString(d.cycCnt));
        }
        byte[] raw = scriptRaw == null ? new byte[0] : scriptRaw;
        if (kind == PerfEvents.Kind.EXSTOP) {
            raw = java.util.Arrays.copyOf(raw, 4); // perf_synth_intel_exstop has its flags only
        }
        scriptRaw = null;
        ptfence.dlfilter.DlFilter.Location at = d.resolver.at(d.ip);
        ptfence.cli.Json where = new ptfence.cli.Json();
        String bid = d.ip == 0 ? null : symbols.mapOf(d.ip, d.time, d.pid, span);
        PythonScript.symbol(where, "", d.ip != 0 ? at.dso() : null, bid, span, at.sym(), d.ip - at.symStart());
        PerfEvents.Event ev = cfg.events.of(kind);
        byte[] attr = ev == null ? new byte[0] : cfg.events.attrBytes(ev, kind == PerfEvents.Kind.INSTRUCTIONS
                ? (cfg.itrace.periodType == ItraceOptions.PeriodType.NANOSECS ? cfg.periodTicks : cfg.itrace.period)
                : 1);
        // perf's intel_pt_prep_sample gives all but branches (and the recorded events) chains and stacks
        boolean insn = kind != PerfEvents.Kind.BRANCHES && kind != PerfEvents.Kind.RECORDED;
        ScriptMerge.Producer out = s.out();
        out.line().ch((char) PythonScript.MARK).str(PythonScript.processEvent(d.event, attr, d.comm, sample, raw,
                where, d.insn, d.insnLen, insn ? scriptChain(s) : "[]", insn ? scriptBrstack(s, false) : "[]",
                insn ? scriptBrstack(s, true) : "[]")).nl();
        out.commit(d.time, true);
    }

    /**
     * -s: the sample's call chain as perf's Python engine lists it (python_process_callchain): per address its ip,
     * "sym" (name, start and end in its map's addresses) where a symbol covers it, "dso" where a map does.
     */
    private String scriptChain(SampleSink s) {
        long[] c = s.chain();
        if (c == null) {
            return "[]";
        }
        long time = s.time();
        int pid = s.pid();
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < s.chainLength(); i++) {
            long a = c[i];
            if (a == CallDepth.USER || a == CallDepth.KERNEL) {
                continue;
            }
            ptfence.cli.Json e = new ptfence.cli.Json().raw("ip", Long.toUnsignedString(a));
            Symbol sym = a == 0 ? null : cursor.symbol(a, time, pid);
            if (sym != null) {
                // start and end in the symbol's map: a mapped file's addresses, a BPF program's offsets
                long base = sym.start() - symbols.offsetAddress(sym.start(), time, pid);
                if (sym.start() >= 0) {
                    base = sym.start() - symbols.mapAddress(sym.start(), time, pid);
                }
                e.raw("sym", new ptfence.cli.Json().raw("start", Long.toUnsignedString(sym.start() - base))
                        .raw("end", Long.toUnsignedString(sym.end() - base)).field("binding", sym.binding())
                        .field("name", sym.name()).toString());
                e.raw("sym_off", Long.toUnsignedString(a - sym.start()));
            }
            String dso = sym != null && sym.dso() != null ? sym.dso() : dsoOf(a, time, pid);
            if (dso != null) {
                e.field("dso", dso);
            }
            b.append(b.length() > 1 ? "," : "").append(e);
        }
        return b.append(']').toString();
    }

    /**
     * -s: the sample's last branches as perf's Python engine lists them: "brstack" (python_process_brstack: from,
     * to, the flags, each end's dso name) or "brstacksym" (python_process_brstacksym: each end as symbol+0xoff).
     */
    private String scriptBrstack(SampleSink s, boolean sym) {
        int n = s.lastBranchCount();
        long time = s.time();
        int pid = s.pid();
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < n; i++) {
            long from = s.lastBranchFrom(i);
            long to = s.lastBranchTo(i);
            int f = s.lastBranchFlags(i);
            boolean tx = (f & BranchFlags.IN_TX) != 0;
            boolean abort = (f & BranchFlags.TX_ABORT) != 0;
            ptfence.cli.Json e = new ptfence.cli.Json();
            if (sym) {
                e.field("from", symOff(from, time, pid)).field("to", symOff(to, time, pid)).field("pred", "-")
                        .field("in_tx", tx ? "X" : "-").field("abort", abort ? "A" : "-");
            } else {
                e.raw("from", Long.toUnsignedString(from)).raw("to", Long.toUnsignedString(to))
                        .field("mispred", false).field("predicted", false).field("in_tx", tx).field("abort", abort)
                        .field("cycles", 0).field("from_dsoname", new String(dsoName(from, time, pid),
                                StandardCharsets.UTF_8))
                        .field("to_dsoname", new String(dsoName(to, time, pid), StandardCharsets.UTF_8));
            }
            b.append(i > 0 ? "," : "").append(e);
        }
        return b.append(']').toString();
    }

    /** perf's get_symoff/symbol__fprintf_symname_offs: name+0xoff, or [unknown]. */
    private String symOff(long a, long time, int pid) {
        Symbol sym = a == 0 ? null : cursor.symbol(a, time, pid);
        return sym == null || sym.name().isEmpty() ? "[unknown]" : sym.name() + "+0x" + Long.toHexString(a - sym.start());
    }

    private static final String[] ERRORS = {"", "Memory allocation failed", "Internal error", "Bad packet",
        "No more data", "Failed to get instruction", "Trace doesn't match instruction", "Overflow packet",
        "Lost trace data", "Unknown error!", "Never-ending loop"};

    /** perf's auxtrace error line (perf_event__fprintf_auxtrace_error): type 1 is an instruction trace error. */
    void error(SampleSink s, int code, long ip) {
        ScriptMerge.Producer out = s.out();
        LineBytes b = out.line();
        long t = s.time();
        if (cfg.script != null) {
            // perf's Python engine: auxtrace_error(typ, code, cpu, pid, tid, ip, ts, msg, cpumode, machine_pid, vcpu)
            b.ch((char) PythonScript.MARK).str(PythonScript.request("auxtrace_error", "1", Integer.toString(code),
                    Integer.toString(s.cpu()), Integer.toString(s.pid()), Integer.toString(s.tid()),
                    Long.toUnsignedString(ip), Long.toUnsignedString(t == -1 ? 0 : t), ptfence.cli.Json.quote(code < ERRORS.length ? ERRORS[code] : ERRORS[9]),
                    "0", "0", "0")).nl(); // perf: the error event's machine_pid and vcpu (0 on the host)
            out.commit(t, false);
            return;
        }
        b.str(" instruction trace error type 1 time ");
        if (t > 0) {
            long secs = t / 1_000_000_000L;
            b.dec(secs).ch('.').decZero(t - secs * 1_000_000_000L, 9);
        } else {
            b.ch('0');
        }
        b.str(" cpu ").sdec(s.cpu()).str(" pid ").sdec(s.pid()).str(" tid ").sdec(s.tid()).str(" ip ").hexAlt(ip)
                .str(" code ").sdec(code).str(": ").str(code < ERRORS.length ? ERRORS[code] : ERRORS[9]).nl();
        out.commit(t, false);
    }
}

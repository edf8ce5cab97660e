package ptfence.bpf;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static ptfence.bpf.BpfAssembler.Reg.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import ptfence.func.SourceLines;
import ptfence.region.BpfMetadata;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

/**
 * SourceLines against the kernel: a program loaded with its own BTF, func_info and one line_info record per
 * instruction (a distinct line, column and text each); the kernel JITs it and reports where each record's code
 * starts (jited_line_info). Every JIT address of every range must map back to the line attached to the
 * instruction the kernel placed there.
 */
class SourceLinesLiveTest {
    private static final String FILE = "live/srclines.bpf.c";

    @Test
    void everyJitAddressMapsToTheLineAttachedToItsInstruction() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to load BPF programs with BTF");
        BpfAssembler a = new BpfAssembler();
        a.load(BpfAssembler.Size.W, R6, R1, 0)            // skb->len: unknown to the verifier, so no branch is dead
                .mov(R1, R6).callLocal("f0").mov(R7, R0)
                .mov(R1, R6).callLocal("f1").add(R0, R7).exit();
        int[] starts = {0, a.size(), 0};
        for (int i = 0; i < 2; i++) {
            if (i == 1) starts[2] = a.size();
            a.label("f" + i).mov(R0, R1).alu(BpfAssembler.Alu.MUL, R0, 9 + i)
                    .jumpIf(BpfAssembler.Cond.GT, R0, 1000, "big" + i).add(R0, i + 1).label("big" + i).exit();
        }
        int n = a.size();

        ProgramMetadata pm = loadWithLines("srclines", a, "srcmain", "srcsub0", "srcsub1");
        assertArrayEquals(starts, a.functionStarts());
        BpfMetadata m = pm.toArchive();
        long[] ksyms = m.jitedKsyms();
        int[] lens = m.jitedFuncLens();
        assertEquals(3, ksyms.length, "main and two subprograms JITed separately");
        ByteBuffer kernelLines = ByteBuffer.wrap(m.lineInfo()).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer kernelAddrs = ByteBuffer.wrap(m.jitedLineInfo()).order(ByteOrder.LITTLE_ENDIAN);
        int records = m.lineInfo().length / m.lineInfoRecSize();
        assertEquals(n, records, "the kernel kept one record per instruction (nothing was dead or removed)");
        assertEquals(records, m.jitedLineInfo().length / 8);

        // The kernel's answer: record r (ours, in order) starts at jited_line_info[r]; its code runs to the next
        // distinct address in the same function, or to the function's end.
        long[] addr = new long[records];
        int[] lineOf = new int[records];
        for (int r = 0; r < records; r++) {
            addr[r] = kernelAddrs.getLong(8 * r);
            lineOf[r] = kernelLines.getInt(r * m.lineInfoRecSize() + 12) >>> 10;
            assertEquals(line(r), lineOf[r], "kernel kept our record " + r + " in order");
        }
        SourceLines s = SourceLines.of(m);
        int checkedBytes = 0;
        for (int f = 0; f < 3; f++) {
            long start = ksyms[f], end = start + lens[f];
            List<Integer> inF = new ArrayList<>();
            for (int r = 0; r < records; r++) if (addr[r] >= start && addr[r] < end) inF.add(r);
            assertFalse(inF.isEmpty(), "function " + f + " has line records");
            assertEquals(start, addr[inF.get(0)], "the first record of function " + f + " is at its start");
            for (int k = 0; k < inF.size(); k++) {
                int r = inF.get(k);
                long to = k + 1 < inF.size() ? addr[inF.get(k + 1)] : end;
                for (long x = addr[r]; x < to; x++) {
                    SourceLines.Line got = s.at(x).orElseThrow(() -> new AssertionError("no line"));
                    assertEquals(line(r), got.line(), "line at 0x" + Long.toHexString(x));
                    assertEquals(column(r), got.column());
                    assertEquals(text(r), got.text());
                    assertEquals(FILE, got.file());
                    assertEquals(f, got.function());
                    assertEquals(r, got.insn(), "translated insn of record " + r + " (no patching here)");
                    assertEquals(r + 1, got.insnEnd(), "one instruction per record");
                    checkedBytes++;
                }
            }
            assertTrue(s.at(end).isEmpty() || s.at(end).orElseThrow().function() != f, "nothing past function " + f);
        }
        assertEquals(lens[0] + lens[1] + lens[2], checkedBytes, "every JITed byte checked");
        assertTrue(s.at(ksyms[0] - 1).isEmpty());

        // The same program as perf records it (HEADER_BPF_PROG_INFO + HEADER_BPF_BTF) gives the same lines.
        SourceLines fromPerf = SourceLines.ofPerf(List.of(pm.toPerfBpil()), List.of(pm.toPerfBtf().orElseThrow()));
        assertEquals(s.lines(), fromPerf.lines());
    }

    /** Loads {@code a} with its own BTF, one int function per name and one line record per instruction. */
    private static ProgramMetadata loadWithLines(String name, BpfAssembler a, String... functions) throws Exception {
        BtfWriter w = new BtfWriter();
        BtfWriter.Info info = w.functionsAndLines(a, functions, new BtfWriter.SourceOf() {
            public String file() { return FILE; }

            public int line(int insn) { return SourceLinesLiveTest.line(insn); }

            public int column(int insn) { return SourceLinesLiveTest.column(insn); }

            public String text(int insn) { return SourceLinesLiveTest.text(insn); }
        });
        try (BpfFd btf = Bpf.get().btfLoad(w.bytes());
             BpfFd prog = Bpf.get().progLoad(new Bpf.ProgLoad(Bpf.PROG_TYPE_SOCKET_FILTER, a.assemble(), "GPL",
                     name, 0, 0, btf, info.funcInfo(), info.lineInfo()))) {
            return ProgramMetadata.fetch(prog);
        }
    }

    private static int line(int insn) { return 100 + 3 * insn; }

    private static int column(int insn) { return 1 + insn % 7; }

    private static String text(int insn) { return "\tstatement_" + insn + "();"; }

    /**
     * An instruction the JIT turns into no code (a 64-bit move of a register to itself) leaves its line record at
     * the same address as the next one; the kernel says so in jited_line_info, and the address then belongs to
     * the last record there (as bpftool's linum dump and perf annotate show it), never to the empty one.
     */
    @Test
    void aRecordWithoutCodeYieldsToTheLastRecordAtItsAddress() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to load BPF programs with BTF");
        BpfAssembler a = new BpfAssembler();
        a.load(BpfAssembler.Size.W, R6, R1, 0).mov(R6, R6).mov(R0, R6).add(R0, 1).exit();
        int n = a.size();
        BpfMetadata m = loadWithLines("nocode", a, "nocode").toArchive();
        ByteBuffer addrs = ByteBuffer.wrap(m.jitedLineInfo()).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(n, m.jitedLineInfo().length / 8, "one JIT address per record");
        long moveToItself = addrs.getLong(8), next = addrs.getLong(16);
        assumeTrue(moveToItself == next, "this kernel's JIT emitted code for mov r6, r6");
        SourceLines s = SourceLines.of(m);
        assertEquals(line(2), s.at(next).orElseThrow().line(), "the address belongs to the last record there");
        for (long x = m.jitedKsyms()[0]; x < m.jitedKsyms()[0] + m.jitedFuncLens()[0]; x++) {
            assertNotEquals(line(1), s.at(x).map(SourceLines.Line::line).orElse(-1),
                    "no code is the empty record's, at 0x" + Long.toHexString(x));
        }
        assertEquals(line(0), s.at(addrs.getLong(0)).orElseThrow().line());
        assertTrue(s.lines().stream().noneMatch(l -> l.line() == line(1)),
                "a record without code has no range of its own, so the view does not list it as never run");
    }
}

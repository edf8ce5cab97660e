package ptfence.fence;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import ptfence.bpf.BpfAssembler;
import ptfence.bpf.ProgInfo;
import ptfence.bpf.ProgramMetadata;
import ptfence.bpf.TestPrograms;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The LOAD hook takes each program's metadata with its code, in the kernel, before the loader returns: for programs
 * closed at once it is exactly what BPF_OBJ_GET_INFO_BY_FD reports for the same instance held open.
 */
class FenceMetadataTest {
    static final int N = 1000;

    @BeforeAll
    static void live() {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
    }

    /** The fenced metadata of each program (by its function 0's name), from the images that carry it. */
    static Map<Integer, ProgramMetadata> fenced(CollectingSink sink, String namePart) {
        Map<Integer, ProgramMetadata> out = new HashMap<>();
        for (CapturedText t : sink.of(Hook.LOAD, namePart)) {
            if (t.metadata() != null) out.put(t.progId(), t.metadata());
        }
        return out;
    }

    /** Every field the fence reads equals bpf()'s for the same program. */
    static void assertSameMetadata(ProgramMetadata want, ProgramMetadata got) {
        ProgInfo w = want.info(), g = got.info();
        String what = "prog " + w.id() + " " + w.name();
        assertEquals(w.id(), g.id(), what);
        assertEquals(w.type(), g.type(), what);
        assertEquals(w.tag(), g.tag(), what);
        assertEquals(w.name(), g.name(), what);
        assertEquals(w.loadTimeBoottimeNs(), g.loadTimeBoottimeNs(), what);
        assertEquals(w.createdByUid(), g.createdByUid(), what);
        assertEquals(w.gplCompatible(), g.gplCompatible(), what);
        assertEquals(w.btfId(), g.btfId(), what);
        assertEquals(w.verifiedInsns(), g.verifiedInsns(), what);
        assertArrayEquals(w.xlatedInsns(), g.xlatedInsns(), what + ": translated instructions");
        assertArrayEquals(w.jitedInsns(), g.jitedInsns(), what + ": JITed code");
        assertArrayEquals(w.jitedKsyms(), g.jitedKsyms(), what);
        assertArrayEquals(w.jitedFuncLens(), g.jitedFuncLens(), what);
        assertArrayEquals(w.progTags(), g.progTags(), what + ": function tags");
        assertArrayEquals(w.mapIds(), g.mapIds(), what + ": map ids");
        assertArrayEquals(w.funcInfo(), g.funcInfo(), what + ": func info");
        assertArrayEquals(w.lineInfo(), g.lineInfo(), what + ": line info");
        assertArrayEquals(w.jitedLineInfo(), g.jitedLineInfo(), what + ": JITed line info");
        assertArrayEquals(want.btf(), got.btf(), what + ": BTF");
        assertEquals(want.ksymNames(), got.ksymNames(), what);
        assertEquals(bytes(want.toPerfBpil().info()), bytes(got.toPerfBpil().info()), what + ": perf's bpf_prog_info");
        assertEquals(bytes(want.toPerfBpil().data()), bytes(got.toPerfBpil().data()), what + ": perf's arrays");
    }

    private static String bytes(ByteBuffer b) {
        byte[] a = new byte[b.remaining()];
        b.duplicate().get(a);
        return java.util.HexFormat.of().formatHex(a);
    }

    @Test
    void programsClosedAtOnceKeepEveryFieldOfTheirMetadata() throws Exception {
        closedAtOnce(TextFence.Config.defaults().withStartupScan(false));
    }

    /**
     * The same through the chunked copy (issue 29: kernels without the dynptr-read kfuncs, Debian's 6.1 and 6.12),
     * forced on this kernel: every image and every metadata field arrives in fragments and is put back together
     * exactly.
     */
    @Test
    void theChunkedCopyKeepsEveryFieldToo() throws Exception {
        closedAtOnce(TextFence.Config.defaults().withStartupScan(false).withChunkedCopy(true));
    }

    private static void closedAtOnce(TextFence.Config config) throws Exception {
        Bpf bpf = Bpf.get();
        CollectingSink sink = new CollectingSink();
        Map<Integer, ProgramMetadata> control = new HashMap<>();
        FenceCounters c;
        try (TestPrograms.Maps maps = TestPrograms.Maps.create("fm");
             TextFence fence = TextFence.start(config, sink)) {
            assertEquals(TextFence.Mode.IN_KERNEL, fence.mode(), fence.fallbackReason());
            assertEquals(config.chunkedCopy(), !fence.copyNote().isEmpty(), fence.copyNote());
            for (int i = 0; i < 20; i++) {
                BpfAssembler code = TestPrograms.withMetadata(maps, i);
                TestPrograms.Lines lines = TestPrograms.lines(code, "fmeta" + i);
                try (BpfFd btf = bpf.btfLoad(lines.btf());
                     BpfFd fd = TestPrograms.loadWithLines("fmeta" + i, code, btf, lines.info())) {
                    ProgramMetadata m = ProgramMetadata.fetch(fd);
                    control.put(m.info().id(), m);
                }
            }
            fence.awaitQuiet(TextFenceTest.QUIET, TextFenceTest.MAX_WAIT);
            c = fence.counters();
        }
        Map<Integer, ProgramMetadata> got = fenced(sink, "fmeta");
        assertEquals(control.keySet(), got.keySet(), c.summary());
        for (var e : control.entrySet()) {
            ProgramMetadata m = e.getValue();
            assertEquals(2, m.info().functionCount(), "a main function and a subprogram");
            assertTrue(m.info().mapIds().length == 3 && m.info().lineInfo().length > 0, m.info().toString());
            assertSameMetadata(m, got.get(e.getKey()));
        }
        assertEquals(0, c.losses(), c.summary());
    }

    /**
     * The measure: programs with BTF, func and line info, loaded and closed at once. Each one's metadata is
     * compared with a control run of the same programs held open (same code, so the same tag, line and func info,
     * BTF, and JITed line addresses relative to each function).
     */
    @Test
    void aThousandShortLivedProgramsWithLineInfoAllKeepIt() throws Exception {
        Bpf bpf = Bpf.get();
        CollectingSink sink = new CollectingSink();
        Map<String, byte[]> submittedLines = new HashMap<>();
        FenceCounters c;
        try (TestPrograms.Maps maps = TestPrograms.Maps.create("fk");
             TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false), sink)) {
            for (int i = 0; i < N; i++) {
                BpfAssembler code = TestPrograms.withMetadata(maps, i);
                TestPrograms.Lines lines = TestPrograms.lines(code, "fchurn" + i);
                submittedLines.put("fchurn" + i, lines.info().lineInfo());
                try (BpfFd btf = bpf.btfLoad(lines.btf())) {
                    TestPrograms.loadWithLines("fchurn" + i, code, btf, lines.info()).close();
                }
            }
            fence.awaitQuiet(TextFenceTest.QUIET, TextFenceTest.MAX_WAIT);
            c = fence.counters();
        }
        Map<Integer, ProgramMetadata> got = fenced(sink, "fchurn");
        assertEquals(N, got.size(), c.summary());
        int withLines = 0;
        for (ProgramMetadata m : got.values()) {
            ProgInfo g = m.info();
            int insns = g.xlatedInsns().length / 8;
            assertTrue(insns > 10, "translated instructions of " + g.name());
            byte[] submitted = submittedLines.get(g.name());
            assertEquals(submitted.length, g.lineInfo().length, g.name() + ": every line record the loader gave");
            for (int r = 0; r < submitted.length; r += 16) { // the verifier moves insn_off; file, line, column stay
                assertArrayEquals(java.util.Arrays.copyOfRange(submitted, r + 4, r + 16),
                        java.util.Arrays.copyOfRange(g.lineInfo(), r + 4, r + 16), g.name() + " line record " + r / 16);
            }
            assertEquals(g.lineInfo().length / 16, g.jitedLineInfo().length);
            assertEquals(2, g.funcInfo().length / 8);
            assertEquals(3, g.mapIds().length);
            assertTrue(m.btf().length > 0 && g.btfId() != 0, g.name() + " has its BTF");
            assertEquals(List.of("bpf_prog_" + g.tagHex() + "_" + g.name()), m.ksymNames().subList(0, 1));
            for (long a : g.jitedLineInfo()) {
                boolean inside = false;
                for (int f = 0; f < g.functionCount(); f++) {
                    inside |= Long.compareUnsigned(a - g.jitedKsyms()[f], g.jitedFuncLens()[f]) < 0;
                }
                assertTrue(inside, g.name() + ": JITed line address 0x" + Long.toHexString(a) + " inside its code");
            }
            withLines++;
        }
        System.out.printf("metadata fenced for %d/%d short-lived programs with BTF and line info (%s)%n", withLines,
                N, c.summary());
        assertEquals(0, c.losses(), c.summary());
    }

    /** Programs sharing one BTF object: the first record carries it, the others name it and still get it. */
    @Test
    void aSharedBtfObjectIsSentOnceAndGivenToEveryProgram() throws Exception {
        Bpf bpf = Bpf.get();
        CollectingSink sink = new CollectingSink();
        Map<Integer, ProgramMetadata> control = new HashMap<>();
        try (TestPrograms.Maps maps = TestPrograms.Maps.create("fs");
             TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false), sink)) {
            BpfAssembler code = TestPrograms.withMetadata(maps, 3);
            TestPrograms.Lines lines = TestPrograms.lines(code, "fshared");
            try (BpfFd btf = bpf.btfLoad(lines.btf())) {
                for (int i = 0; i < 5; i++) {
                    try (BpfFd fd = TestPrograms.loadWithLines("fshared", code, btf, lines.info())) {
                        ProgramMetadata m = ProgramMetadata.fetch(fd);
                        control.put(m.info().id(), m);
                    }
                }
            }
            fence.awaitQuiet(TextFenceTest.QUIET, TextFenceTest.MAX_WAIT);
        }
        Map<Integer, ProgramMetadata> got = fenced(sink, "fshared");
        assertEquals(control.keySet(), got.keySet());
        for (var e : control.entrySet()) assertSameMetadata(e.getValue(), got.get(e.getKey()));
        assertEquals(1, control.values().stream().mapToInt(m -> m.info().btfId()).distinct().count());
    }
}

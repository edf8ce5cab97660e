package ptfence.fence;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import ptfence.bpf.BpfAssembler;
import ptfence.bpf.Btf;
import ptfence.bpf.Kallsyms;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static ptfence.bpf.BpfAssembler.Reg.*;
import static ptfence.bpf.BpfAssembler.Size.*;

/**
 * The dispatcher hook's body (what fexit bpf_dispatcher_change_prog runs on 6.1 and 6.12), run on this machine, whose
 * kernel refuses fexit: the same instructions loaded as a raw tracepoint program and run with BPF_PROG_TEST_RUN on a
 * struct bpf_dispatcher laid out at this kernel's BTF offsets in a map value. Its image points at this kernel's
 * real XDP dispatcher page, so the record's bytes are checked against an independent read of that half (the BPF read
 * program, as the fence's kernel reader does without /proc/kcore). Both copy paths: dynptr kfuncs and the chunks
 * that Debian's kernels use (reassembled by {@link FragmentAssembler}).
 */
class DispatcherHookTest {
    private static final int HALF = FencePrograms.DISPATCHER_HALF;
    static KernelLayout layout;
    static Btf btf;
    static long page;

    @BeforeAll
    static void live() throws Exception {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
        btf = Btf.vmlinux();
        layout = KernelLayout.from(btf);
        assertTrue(layout.dispatcher().isPresent(), "this kernel's BTF has struct bpf_dispatcher and its update");
        // the XDP dispatcher's page exists once an XDP program was attached since boot (TextFenceTest does)
        Bpf bpf = Bpf.get();
        byte[] pass = new BpfAssembler().mov(R0, 2).exit().assemble();
        try (BpfFd p = bpf.progLoad(new Bpf.ProgLoad(Bpf.PROG_TYPE_XDP, pass, "GPL", "t_xdp_pass", Bpf.ATTACH_XDP, 0));
             BpfFd link = bpf.linkCreate(p, 1 /* lo */, Bpf.ATTACH_XDP)) {
            page = Kallsyms.read().symbols().stream()
                    .filter(s -> s.name().equals("bpf_dispatcher_xdp") && "bpf".equals(s.module()))
                    .mapToLong(Kallsyms.Symbol::address).findFirst().orElse(0);
        }
        assumeTrue(page != 0, "no bpf_dispatcher_xdp page in /proc/kallsyms");
    }

    /** A map value that stands for a struct bpf_dispatcher, and its kernel address. */
    private record FakeDispatcher(FakeStruct s) implements AutoCloseable {
        static FakeDispatcher create() throws Exception {
            return new FakeDispatcher(FakeStruct.create(btf.structSize("bpf_dispatcher"), "t_fake_disp"));
        }

        long address() { return s.address(); }

        void set(int numProgs, long image, int imageOff, String name) throws Exception {
            KernelLayout.Dispatcher d = layout.dispatcher().get();
            ByteBuffer b = ByteBuffer.allocate(s.size()).order(ByteOrder.LITTLE_ENDIAN);
            b.putInt(d.numProgs(), numProgs).putLong(d.image(), image).putInt(d.imageOff(), imageOff);
            b.put(d.ksymName(), name.getBytes(StandardCharsets.US_ASCII));
            s.set(b.array());
        }

        @Override
        public void close() { s.close(); }
    }

    /** Runs the hook's body once on the fake dispatcher; the records it wrote, reassembled. */
    private static List<FenceRecord.Parsed> run(KernelLayout l, FakeDispatcher d) throws Exception {
        byte[] ctx = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN).putLong(d.address()).array();
        return FakeStruct.run(l, FencePrograms::dispatcherSwitched, ctx);
    }

    private static void copiesTheHalfInForce(KernelLayout l) throws Exception {
        try (FakeDispatcher d = FakeDispatcher.create();
             KernelMemory reader = KernelMemory.open(layout)) {
            for (int off : new int[] {0, HALF}) {
                d.set(1, page, off, "bpf_dispatcher_xdp");
                long before = System.nanoTime();
                List<FenceRecord.Parsed> got = run(l, d);
                assertEquals(1, got.size(), "one record per switch");
                FenceRecord.Parsed r = got.get(0);
                assertEquals(FenceRecord.KIND_DISPATCHER, r.kind());
                assertEquals(page + off, r.start(), "the half at image + image_off");
                assertEquals(HALF, r.len());
                assertTrue(r.complete(), "a whole, readable half");
                assertEquals("bpf_dispatcher_xdp", r.name(), "named by the dispatcher's ksym");
                assertTrue(r.monotonicNs() >= before && r.monotonicNs() <= System.nanoTime(), "stamped when copied");
                assertArrayEquals(reader.read(page + off, HALF), r.image(), "the half's bytes as read independently");
            }
            d.set(0, page, HALF, "bpf_dispatcher_xdp");
            assertEquals(List.of(), run(l, d), "no programs: the switch went to the nop, nothing to copy");
            d.set(1, 0, 0, "bpf_dispatcher_xdp");
            assertEquals(List.of(), run(l, d), "no image yet: nothing to copy");
            d.set(1, page, 3000, "bpf_dispatcher_xdp");
            assertEquals(List.of(), run(l, d), "an offset that is no half: nothing copied");
        }
    }

    @Test
    void copiesTheHalfInForceWithTheDynptrReads() throws Exception {
        assumeTrue(!layout.copiesInChunks(), "this kernel lacks " + layout.missingKfuncs());
        copiesTheHalfInForce(layout);
    }

    @Test
    void copiesTheHalfInForceInChunksAsOnDebiansKernels() throws Exception {
        copiesTheHalfInForce(layout.withoutKfuncs());
    }

    /** The members are the widths the hook reads them with, and the attach target is the update function. */
    @Test
    void theHookReadsTheMembersAtTheirWidths() {
        assertEquals(Btf.KIND_PTR, btf.memberType("bpf_dispatcher", "image").kind(), "image: read64");
        assertEquals(4, btf.sizeOf(btf.memberType("bpf_dispatcher", "image_off").id()), "image_off: read32");
        assertEquals(4, btf.sizeOf(btf.memberType("bpf_dispatcher", "num_progs").id()), "num_progs: read32");
        assertEquals(Btf.KIND_ARRAY, btf.memberType("bpf_dispatcher", "ksym.name").kind(), "the name in place");
        KernelLayout.Dispatcher d = layout.dispatcher().get();
        assertEquals(Btf.KIND_FUNC, btf.type(d.changeProgFunc()).kind());
        assertEquals("bpf_dispatcher_change_prog", btf.type(d.changeProgFunc()).name());
    }
}

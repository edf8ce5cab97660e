package ptfence.fence;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static ptfence.bpf.BpfAssembler.Reg.*;
import static ptfence.bpf.BpfAssembler.Size.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import ptfence.bpf.BpfAssembler;
import ptfence.ring.BpfRingBuffer;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;
import ptfence.sys.BpfRingMapping;

/**
 * A map value that stands for a kernel struct a fexit hook reads (its bytes laid out by the test at the running
 * kernel's BTF offsets), and its kernel address; and a hook's body run once as a raw tracepoint program on a context
 * of u64 arguments (fexit's context is the arguments as u64s, then the return value: the same instructions run on
 * both), with the records it wrote reassembled.
 */
record FakeStruct(BpfFd map, long address, int size) implements AutoCloseable {
    static FakeStruct create(int size, String name) throws Exception {
        Bpf bpf = Bpf.get();
        BpfFd map = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, size, 1, 0, name);
        // a program writes its value's address into the value's first 8 bytes
        BpfAssembler a = new BpfAssembler();
        a.store(W, R10, -4, 0).loadMapFd(R1, map.fd()).mov(R2, R10).add(R2, -4).call(1)
                .jumpIf(BpfAssembler.Cond.EQ, R0, 0, "out").store(DW, R0, 0, R0).label("out").mov(R0, 0).exit();
        try (BpfFd prog = FencePrograms.loadRawTracepoint(a.assemble(), "t_value_addr")) {
            bpf.progTestRun(prog, new byte[8]);
        }
        byte[] v = new byte[size];
        assertTrue(bpf.mapLookup(map, new byte[4], v));
        long address = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        assertTrue(address < 0, "a kernel address: " + Long.toHexString(address));
        return new FakeStruct(map, address, size);
    }

    /** The struct's bytes from now on. */
    void set(byte[] value) throws Exception {
        Bpf.get().mapUpdate(map, new byte[4], value);
    }

    @Override
    public void close() { map.close(); }

    /** Runs {@code hook}'s body once with {@code ctx}; the records it wrote, reassembled. */
    static List<FenceRecord.Parsed> run(KernelLayout l, Function<FencePrograms, byte[]> hook, byte[] ctx)
            throws Exception {
        Bpf bpf = Bpf.get();
        int ringSize = 1 << 20;
        try (BpfFd rb = bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, ringSize, 0, "t_rb");
             BpfFd stats = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "t_stats");
             BpfFd scratch = bpf.mapCreate(Bpf.MAP_TYPE_PERCPU_ARRAY, 4, FencePrograms.SCRATCH_VALUE,
                     FencePrograms.SCRATCH_ENTRIES, 0, "t_scratch");
             BpfRingMapping mapping = BpfRingMapping.map(rb, ringSize)) {
            FencePrograms p = new FencePrograms(l, rb.fd(), stats.fd(), ringSize, -1,
                    l.copiesInChunks() ? scratch.fd() : -1);
            try (BpfFd prog = FencePrograms.loadRawTracepoint(hook.apply(p), "t_hook")) {
                bpf.progTestRun(prog, ctx);
            }
            List<FenceRecord.Parsed> out = new ArrayList<>();
            FragmentAssembler fragments = new FragmentAssembler();
            new BpfRingBuffer(mapping.consumerPage(), mapping.producerArea(), ringSize).poll((data, off, len) -> {
                if (FenceRecord.kind(data, off, len) == FenceRecord.KIND_FRAG) {
                    fragments.accept(data, off, len, (whole, o, n) -> out.add(FenceRecord.parse(whole, o, n)));
                } else {
                    out.add(FenceRecord.parse(data, off, len));
                }
            });
            return out;
        }
    }
}

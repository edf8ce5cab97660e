package ptfence.fence;

import ptfence.ring.BpfRingBuffer;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;
import ptfence.sys.BpfRingMapping;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Kernel memory through a raw_tp program run with BPF_PROG_TEST_RUN (ctx {addr, len}), which copies the range into
 * its own ring buffer with bpf_probe_read_kernel; used where there is no /proc/kcore (as on this machine).
 * Ranges are read in 4 MiB pieces (a quarter of its ring).
 */
public final class BpfPeekReader implements KernelMemory {
    private static final int RING = 16 << 20, PIECE = 4 << 20;

    private final BpfFd ring, stats, prog, scratch;
    private final FragmentAssembler fragments = new FragmentAssembler();
    private final BpfRingMapping mapping;
    private final BpfRingBuffer consumer;

    private BpfPeekReader(BpfFd ring, BpfFd stats, BpfFd prog, BpfFd scratch, BpfRingMapping mapping) {
        this.ring = ring;
        this.scratch = scratch;
        this.stats = stats;
        this.prog = prog;
        this.mapping = mapping;
        this.consumer = new BpfRingBuffer(mapping.consumerPage(), mapping.producerArea(), RING);
    }

    public static BpfPeekReader open(KernelLayout layout) throws IOException {
        Bpf bpf = Bpf.get();
        BpfFd ring = bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, RING, 0, "fence_peek_rb");
        BpfFd stats = null, prog = null, scratch = null;
        try {
            stats = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "fence_peek_st");
            if (layout.copiesInChunks()) {
                scratch = bpf.mapCreate(Bpf.MAP_TYPE_PERCPU_ARRAY, 4, FencePrograms.SCRATCH_VALUE,
                        FencePrograms.SCRATCH_ENTRIES, 0, "fence_peek_scr");
            }
            byte[] insns = new FencePrograms(layout, ring.fd(), stats.fd(), RING, -1,
                    scratch == null ? -1 : scratch.fd()).peek();
            prog = FencePrograms.loadRawTracepoint(insns, "fence_peek");
            return new BpfPeekReader(ring, stats, prog, scratch, BpfRingMapping.map(ring, RING));
        } catch (IOException | RuntimeException e) {
            if (prog != null) prog.close();
            if (scratch != null) scratch.close();
            if (stats != null) stats.close();
            ring.close();
            throw e;
        }
    }

    @Override
    public synchronized byte[] read(long address, int length) throws IOException {
        byte[] out = new byte[length];
        for (int done = 0; done < length; ) {
            int n = Math.min(scratch == null ? PIECE : FencePrograms.CHUNKED_MAX, length - done);
            FenceRecord.Parsed r = readOne(address + done, n);
            System.arraycopy(r.image(), 0, out, done, n);
            done += n;
        }
        return out;
    }

    private FenceRecord.Parsed readOne(long address, int length) throws IOException {
        byte[] ctx = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(address).putLong(length).array();
        Bpf.get().progTestRun(prog, ctx);
        FenceRecord.Parsed[] got = new FenceRecord.Parsed[1];
        consumer.poll((data, off, len) -> {
            if (FenceRecord.kind(data, off, len) == FenceRecord.KIND_FRAG) {
                fragments.accept(data, off, len, (whole, o, l) -> got[0] = FenceRecord.parse(whole, o, l));
            } else {
                got[0] = FenceRecord.parse(data, off, len);
            }
        });
        fragments.dropStale(0);
        FenceRecord.Parsed r = got[0];
        String range = String.format("kernel range 0x%x+%d", address, length);
        if (r == null) throw new IOException("bpf read program: no record for " + range + " (ring full?)");
        if (r.kind() != FenceRecord.KIND_PEEK || r.start() != address)
            throw new IOException("bpf read program: unexpected record for " + range);
        if (r.err() != 0)
            throw new IOException("bpf_probe_read_kernel(" + range + "): errno " + -r.err() + " (not mapped?)");
        if (!r.complete()) throw new IOException("bpf read program: short copy of " + range);
        return r;
    }

    @Override
    public String backend() { return "bpf read program"; }

    @Override
    public synchronized void close() {
        mapping.close();
        prog.close();
        if (scratch != null) scratch.close();
        stats.close();
        ring.close();
    }
}

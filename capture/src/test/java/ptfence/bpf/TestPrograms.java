package ptfence.bpf;

import ptfence.bpf.BpfAssembler.Cond;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

import static ptfence.bpf.BpfAssembler.Reg.*;

/** Small socket-filter programs the tests and the churn bench load through the facade. */
public final class TestPrograms {
    private TestPrograms() {}

    /** r0 = value; exit — the churn program (JITs to 20–23 bytes). */
    public static Bpf.ProgLoad constant(String name, int value) {
        return new Bpf.ProgLoad(Bpf.PROG_TYPE_SOCKET_FILTER,
                new BpfAssembler().mov(R0, value).exit().assemble(), name);
    }

    /** A main function and {@code subprogs} functions it calls (bpf-to-bpf): 1 + subprogs JITed functions. */
    public static Bpf.ProgLoad withSubprograms(String name, int subprogs, int salt) {
        BpfAssembler a = new BpfAssembler();
        a.mov(R6, 0);
        for (int i = 0; i < subprogs; i++) a.mov(R1, i).callLocal("f" + i).add(R6, R0);
        a.mov(R0, R6).exit();
        for (int i = 0; i < subprogs; i++) {
            a.label("f" + i).mov(R0, R1).alu(BpfAssembler.Alu.MUL, R0, salt + i)
                    .jumpIf(Cond.GT, R0, 1000, "big" + i).add(R0, i).label("big" + i).exit();
        }
        return new Bpf.ProgLoad(Bpf.PROG_TYPE_SOCKET_FILTER, a.assemble(), name);
    }

    /** A straight-line program of about {@code insns} instructions (the verifier walks it once). */
    public static Bpf.ProgLoad large(String name, int insns) {
        BpfAssembler a = new BpfAssembler().mov(R0, 0);
        for (int i = 0; i < insns - 2; i++) a.alu(i % 2 == 0 ? BpfAssembler.Alu.ADD : BpfAssembler.Alu.XOR, R0, i);
        return new Bpf.ProgLoad(Bpf.PROG_TYPE_SOCKET_FILTER, a.exit().assemble(), name);
    }

    /** Maps a {@link #withMetadata} program uses: a hash map, a one-element array (read as a direct value), a prog array. */
    public record Maps(BpfFd hash, BpfFd array, BpfFd progArray) implements AutoCloseable {
        public static Maps create(String prefix) throws ptfence.sys.BpfException {
            Bpf bpf = Bpf.get();
            return new Maps(bpf.mapCreate(1 /* HASH */, 4, 8, 16, 0, prefix + "_h"),
                    bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 16, 1, 0, prefix + "_a"),
                    bpf.mapCreate(Bpf.MAP_TYPE_PROG_ARRAY, 4, 4, 2, 0, prefix + "_p"));
        }

        @Override
        public void close() {
            hash.close();
            array.close();
            progArray.close();
        }
    }

    /**
     * Everything bpf_prog_info describes, in a few instructions: a map lookup (map address in the translated code),
     * a single-element array's value loaded by address (BPF_PSEUDO_MAP_VALUE), a bpf-to-bpf subprogram and a tail
     * call; with its own BTF, a func_info record per function and a line record per instruction
     * ({@link BtfWriter#functionsAndLines}). Line i of the source is {@code 100 + i}.
     */
    public static BpfAssembler withMetadata(Maps maps, int salt) {
        return new BpfAssembler().mov(R6, R1).store(BpfAssembler.Size.W, R10, -8, 0)
                .loadMapFd(R1, maps.hash().fd()).mov(R2, R10).add(R2, -8).call(1)
                .loadMapValue(R7, maps.array().fd(), 8).load(BpfAssembler.Size.W, R1, R7, 0)
                .callLocal("f1").mov(R8, R0)
                .mov(R1, R6).loadMapFd(R2, maps.progArray().fd()).mov(R3, 0).call(12)
                .mov(R0, R8).exit()
                .label("f1").mov(R0, R1).add(R0, salt).jumpIf(Cond.GT, R0, 1000, "big").add(R0, 1).label("big").exit();
    }

    /** Loads {@code code} with BTF (one object per call unless {@code btf} is given) and line info. */
    public static ptfence.sys.BpfFd loadWithLines(String name, BpfAssembler code, ptfence.sys.BpfFd btf,
            BtfWriter.Info info) throws ptfence.sys.BpfException {
        return Bpf.get().progLoad(new Bpf.ProgLoad(Bpf.PROG_TYPE_SOCKET_FILTER, code.assemble(), "GPL", name, 0, 0,
                btf, info.funcInfo(), info.lineInfo()));
    }

    /** A program's BTF blob and its func and line info records. */
    public record Lines(byte[] btf, BtfWriter.Info info) {}

    /** BTF and func/line info for {@code code}: functions NAME, NAME_f1, ...; line 100 + i for instruction i. */
    public static Lines lines(BpfAssembler code, String name) {
        int[] starts = code.functionStarts();
        String[] names = new String[starts.length];
        for (int f = 0; f < starts.length; f++) names[f] = f == 0 ? name : name + "_f" + f;
        BtfWriter w = new BtfWriter();
        BtfWriter.Info info = w.functionsAndLines(code, names, new BtfWriter.SourceOf() {
            public String file() { return "t/meta.bpf.c"; }
            public int line(int insn) { return 100 + insn; }
            public int column(int insn) { return 1 + insn % 5; }
            public String text(int insn) { return "insn_" + insn + "();"; }
        });
        return new Lines(w.bytes(), info);
    }
}

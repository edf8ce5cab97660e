package ptfence.bpf;

import ptfence.bpf.BpfAssembler.Cond;
import ptfence.sys.Bpf;

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
}

package ptfence.bpf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A small eBPF assembler: typed instructions, forward and backward labels, map-fd loads, helper, kfunc and
 * bpf-to-bpf calls. {@link #assemble()} resolves labels and returns the 8-byte-per-instruction program.
 */
public final class BpfAssembler {

    public enum Reg { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 }

    public enum Size {
        B(0x10, 1), H(0x08, 2), W(0x00, 4), DW(0x18, 8);
        final int code;
        public final int bytes;
        Size(int code, int bytes) { this.code = code; this.bytes = bytes; }
    }

    /** 64-bit ALU operations (BPF_ALU64 | op). */
    public enum Alu {
        ADD(0x00), SUB(0x10), MUL(0x20), DIV(0x30), OR(0x40), AND(0x50), LSH(0x60), RSH(0x70), MOD(0x90),
        XOR(0xa0), MOV(0xb0), ARSH(0xc0);
        final int op;
        Alu(int op) { this.op = op; }
    }

    /** Conditional jumps (BPF_JMP | op); unsigned unless S-prefixed. */
    public enum Cond {
        EQ(0x10), GT(0x20), GE(0x30), SET(0x40), NE(0x50), SGT(0x60), SGE(0x70), LT(0xa0), LE(0xb0),
        SLT(0xc0), SLE(0xd0);
        final int op;
        Cond(int op) { this.op = op; }
    }

    /** One instruction slot as the kernel reads it. */
    public record Insn(int code, int dst, int src, int off, int imm) {
        void write(ByteBuffer b) {
            b.put((byte) code).put((byte) ((src << 4) | dst)).putShort((short) off).putInt(imm);
        }
    }

    private static final int CLASS_LD = 0x00, CLASS_LDX = 0x01, CLASS_ST = 0x02, CLASS_STX = 0x03,
            CLASS_JMP = 0x05, CLASS_ALU64 = 0x07, MODE_IMM = 0x00, MODE_MEM = 0x60, MODE_ATOMIC = 0xc0,
            SRC_K = 0x00, SRC_X = 0x08;
    private static final int JA = 0x00, CALL = 0x80, EXIT = 0x90;
    private static final int PSEUDO_MAP_FD = 1, PSEUDO_MAP_VALUE = 2, PSEUDO_CALL = 1, PSEUDO_KFUNC_CALL = 2,
            PSEUDO_FUNC = 4;

    private final List<Insn> insns = new ArrayList<>();
    private final Map<String, Integer> labels = new HashMap<>();
    /** index of the instruction -> label it jumps to (off field) or calls (imm field). */
    private final Map<Integer, String> jumpFixups = new HashMap<>();
    private final Map<Integer, String> callFixups = new HashMap<>();

    public int size() { return insns.size(); }

    public BpfAssembler label(String name) {
        if (labels.putIfAbsent(name, insns.size()) != null) throw new IllegalArgumentException("label " + name + " twice");
        return this;
    }

    public BpfAssembler raw(Insn i) { insns.add(i); return this; }

    public BpfAssembler alu(Alu op, Reg dst, int imm) {
        return raw(new Insn(CLASS_ALU64 | op.op | SRC_K, dst.ordinal(), 0, 0, imm));
    }

    public BpfAssembler alu(Alu op, Reg dst, Reg src) {
        return raw(new Insn(CLASS_ALU64 | op.op | SRC_X, dst.ordinal(), src.ordinal(), 0, 0));
    }

    public BpfAssembler mov(Reg dst, int imm) { return alu(Alu.MOV, dst, imm); }

    public BpfAssembler mov(Reg dst, Reg src) { return alu(Alu.MOV, dst, src); }

    public BpfAssembler add(Reg dst, int imm) { return alu(Alu.ADD, dst, imm); }

    public BpfAssembler add(Reg dst, Reg src) { return alu(Alu.ADD, dst, src); }

    /** dst = *(size *)(src + off) */
    public BpfAssembler load(Size size, Reg dst, Reg src, int off) {
        return raw(new Insn(CLASS_LDX | MODE_MEM | size.code, dst.ordinal(), src.ordinal(), checkOff(off), 0));
    }

    /** *(size *)(dst + off) = src */
    public BpfAssembler store(Size size, Reg dst, int off, Reg src) {
        return raw(new Insn(CLASS_STX | MODE_MEM | size.code, dst.ordinal(), src.ordinal(), checkOff(off), 0));
    }

    /** *(size *)(dst + off) = imm */
    public BpfAssembler store(Size size, Reg dst, int off, int imm) {
        return raw(new Insn(CLASS_ST | MODE_MEM | size.code, dst.ordinal(), 0, checkOff(off), imm));
    }

    /** lock *(u64 *)(dst + off) += src */
    public BpfAssembler atomicAdd64(Reg dst, int off, Reg src) {
        return raw(new Insn(CLASS_STX | MODE_ATOMIC | Size.DW.code, dst.ordinal(), src.ordinal(), checkOff(off), 0));
    }

    /** dst = imm64 (two slots). */
    public BpfAssembler loadImm64(Reg dst, long imm) {
        raw(new Insn(CLASS_LD | MODE_IMM | Size.DW.code, dst.ordinal(), 0, 0, (int) imm));
        return raw(new Insn(0, 0, 0, 0, (int) (imm >>> 32)));
    }

    /** dst = the map behind this fd (the kernel swaps in its address). */
    public BpfAssembler loadMapFd(Reg dst, int mapFd) {
        raw(new Insn(CLASS_LD | MODE_IMM | Size.DW.code, dst.ordinal(), PSEUDO_MAP_FD, 0, mapFd));
        return raw(new Insn(0, 0, 0, 0, 0));
    }

    /** dst = the address of the value at {@code offset} in a single-element array map (BPF_PSEUDO_MAP_VALUE). */
    public BpfAssembler loadMapValue(Reg dst, int mapFd, int offset) {
        raw(new Insn(CLASS_LD | MODE_IMM | Size.DW.code, dst.ordinal(), PSEUDO_MAP_VALUE, 0, mapFd));
        return raw(new Insn(0, 0, 0, 0, offset));
    }

    public BpfAssembler call(int helperId) {
        return raw(new Insn(CLASS_JMP | CALL, 0, 0, 0, helperId));
    }

    /** Call of a kernel function by its BTF FUNC id (vmlinux: off 0). */
    public BpfAssembler callKfunc(int btfFuncId) {
        return raw(new Insn(CLASS_JMP | CALL, 0, PSEUDO_KFUNC_CALL, 0, btfFuncId));
    }

    /** bpf-to-bpf call of the subprogram starting at {@code label}. */
    public BpfAssembler callLocal(String label) {
        callFixups.put(insns.size(), label);
        return raw(new Insn(CLASS_JMP | CALL, 0, PSEUDO_CALL, 0, 0));
    }

    /**
     * dst = the subprogram starting at {@code label}, as a callback for a helper such as bpf_loop
     * (BPF_PSEUDO_FUNC, two slots).
     */
    public BpfAssembler loadFunc(Reg dst, String label) {
        callFixups.put(insns.size(), label);
        raw(new Insn(CLASS_LD | MODE_IMM | Size.DW.code, dst.ordinal(), PSEUDO_FUNC, 0, 0));
        return raw(new Insn(0, 0, 0, 0, 0));
    }

    public BpfAssembler exit() {
        return raw(new Insn(CLASS_JMP | EXIT, 0, 0, 0, 0));
    }

    public BpfAssembler jump(String label) {
        jumpFixups.put(insns.size(), label);
        return raw(new Insn(CLASS_JMP | JA, 0, 0, 0, 0));
    }

    /** if (dst cond imm) goto label */
    public BpfAssembler jumpIf(Cond c, Reg dst, int imm, String label) {
        jumpFixups.put(insns.size(), label);
        return raw(new Insn(CLASS_JMP | c.op | SRC_K, dst.ordinal(), 0, 0, imm));
    }

    /** if (dst cond src) goto label */
    public BpfAssembler jumpIf(Cond c, Reg dst, Reg src, String label) {
        jumpFixups.put(insns.size(), label);
        return raw(new Insn(CLASS_JMP | c.op | SRC_X, dst.ordinal(), src.ordinal(), 0, 0));
    }

    /** The resolved instructions. */
    public List<Insn> instructions() {
        List<Insn> out = new ArrayList<>(insns);
        jumpFixups.forEach((at, label) -> {
            Insn i = out.get(at);
            int rel = target(label) - (at + 1);
            if (rel < Short.MIN_VALUE || rel > Short.MAX_VALUE)
                throw new IllegalStateException("jump to " + label + " out of 16-bit range: " + rel);
            out.set(at, new Insn(i.code(), i.dst(), i.src(), rel, i.imm()));
        });
        callFixups.forEach((at, label) -> {
            Insn i = out.get(at);
            out.set(at, new Insn(i.code(), i.dst(), i.src(), i.off(), target(label) - (at + 1)));
        });
        return out;
    }

    /**
     * Where each function starts (instruction indexes, ascending): the main program at 0 and every bpf-to-bpf call
     * or callback target; what func_info must list.
     */
    public int[] functionStarts() {
        java.util.TreeSet<Integer> starts = new java.util.TreeSet<>(List.of(0));
        callFixups.values().forEach(label -> starts.add(target(label)));
        return starts.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * Where each function of an assembled program starts: 0 and the target of every bpf-to-bpf call and callback
     * load (relative imm), as {@link #functionStarts()} gives before assembly.
     */
    public static int[] functionStarts(byte[] program) {
        ByteBuffer b = ByteBuffer.wrap(program).order(ByteOrder.LITTLE_ENDIAN);
        java.util.TreeSet<Integer> starts = new java.util.TreeSet<>(List.of(0));
        for (int i = 0; i < program.length / 8; i++) {
            int code = b.get(8 * i) & 0xff, src = (b.get(8 * i + 1) & 0xff) >>> 4, imm = b.getInt(8 * i + 4);
            boolean localCall = code == (CLASS_JMP | CALL) && src == PSEUDO_CALL;
            boolean funcLoad = code == (CLASS_LD | MODE_IMM | Size.DW.code) && src == PSEUDO_FUNC;
            if (localCall || funcLoad) starts.add(i + imm + 1);
            if (code == (CLASS_LD | MODE_IMM | Size.DW.code)) i++;
        }
        return starts.stream().mapToInt(Integer::intValue).toArray();
    }

    public byte[] assemble() {
        List<Insn> resolved = instructions();
        ByteBuffer b = ByteBuffer.allocate(resolved.size() * 8).order(ByteOrder.LITTLE_ENDIAN);
        for (Insn i : resolved) i.write(b);
        return b.array();
    }

    private int target(String label) {
        Integer t = labels.get(label);
        if (t == null) throw new IllegalStateException("undefined label " + label);
        return t;
    }

    private static int checkOff(int off) {
        if (off < Short.MIN_VALUE || off > Short.MAX_VALUE) throw new IllegalArgumentException("offset " + off);
        return off;
    }
}

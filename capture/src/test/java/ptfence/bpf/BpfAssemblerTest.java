package ptfence.bpf;

import org.junit.jupiter.api.Test;

import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.*;
import static ptfence.bpf.BpfAssembler.Reg.*;

/** Encodings checked against the uapi instruction format (include/uapi/linux/bpf.h, bpf_common.h). */
class BpfAssemblerTest {
    static String hex(BpfAssembler a) {
        return HexFormat.of().formatHex(a.assemble());
    }

    @Test
    void encodesEachInstructionClass() {
        assertEquals("b70000002a000000" + "9500000000000000", hex(new BpfAssembler().mov(R0, 42).exit()));
        assertEquals("bf16000000000000", hex(new BpfAssembler().mov(R6, R1)));           // ALU64|MOV|X, src<<4|dst
        assertEquals("07010000f0ffffff", hex(new BpfAssembler().add(R1, -16)));
        assertEquals("79a1f8ff00000000", hex(new BpfAssembler().load(BpfAssembler.Size.DW, R1, R10, -8)));
        assertEquals("6b17040000000000", hex(new BpfAssembler().store(BpfAssembler.Size.H, R7, 4, R1)));
        assertEquals("620af8ff07000000", hex(new BpfAssembler().store(BpfAssembler.Size.W, R10, -8, 7)));
        assertEquals("db10000000000000", hex(new BpfAssembler().atomicAdd64(R0, 0, R1)));
        assertEquals("1802000078563412" + "00000000f0debc9a",
                hex(new BpfAssembler().loadImm64(R2, 0x9abcdef012345678L)));
        assertEquals("1811000005000000" + "0000000000000000", hex(new BpfAssembler().loadMapFd(R1, 5)));
        assertEquals("8500000071000000", hex(new BpfAssembler().call(113)));
        assertEquals("8520000010270000", hex(new BpfAssembler().callKfunc(10000)));
    }

    @Test
    void resolvesForwardAndBackwardLabelsRelativeToTheNextInstruction() {
        BpfAssembler a = new BpfAssembler();
        a.label("top").mov(R0, 0)                                  // 0
                .jumpIf(BpfAssembler.Cond.EQ, R0, 1, "end")        // 1: +2 -> 4
                .jumpIf(BpfAssembler.Cond.GT, R0, R1, "top")       // 2: -3 -> 0
                .callLocal("sub")                                  // 3: imm +1 -> 5
                .label("end").exit()                               // 4
                .label("sub").mov(R0, 1).exit();                   // 5, 6
        var insns = a.instructions();
        assertEquals(2, insns.get(1).off());
        assertEquals(0x15, insns.get(1).code());
        assertEquals(-3, insns.get(2).off());
        assertEquals(0x2d, insns.get(2).code());
        assertEquals(1, insns.get(3).imm());
        assertEquals(1, insns.get(3).src());
        assertThrows(IllegalStateException.class, () -> new BpfAssembler().jump("nowhere").assemble());
        assertThrows(IllegalArgumentException.class, () -> new BpfAssembler().label("x").label("x"));
    }
}

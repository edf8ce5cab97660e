package ptfence.insn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import ptfence.image.ElfSegments;
import ptfence.image.Section;

/**
 * Checks instruction lengths and control-flow classes against GNU objdump's disassembly of a real
 * statically linked program (about 180,000 instructions), and a few encodings the flow depends on.
 */
class X86DecoderTest {
    private static final Pattern LINE = Pattern.compile("^\\s+([0-9a-f]+):\\t((?:[0-9a-f]{2} )+)\\s*\\t(\\S+)?.*$");

    @Test
    void lengthsAndBranchClassesMatchObjdump() throws IOException, InterruptedException {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path hello = Path.of(shared, "real/dynamorio_drpt2trace/test_simple.tracedir_2022-07-06/hello");
        org.junit.jupiter.api.Assertions.assertTrue(Files.exists(hello), "no hello ELF");
        Process p;
        try {
            p = new ProcessBuilder("objdump", "-d", "-w", "--no-show-raw-insn", "-z", hello.toString()).start();
        } catch (IOException e) {
            Assumptions.assumeTrue(false, "objdump not installed");
            return;
        }
        p.destroy();
        p = new ProcessBuilder("objdump", "-d", "-w", "-z", hello.toString()).start();
        List<String> lines = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).lines().toList();
        assertEquals(0, p.waitFor());
        Section text = ElfSegments.parse(hello.toString()).sections().get(0);
        CodeCache cc = CodeCache.of(text.contentId(), text.bytes(), ExecMode.BITS64);
        X86Decoder dec = new X86Decoder();
        int checked = 0;
        List<String> mismatches = new ArrayList<>();
        for (String l : lines) {
            Matcher m = LINE.matcher(l);
            if (!m.matches() || m.group(3) == null || m.group(3).startsWith("(bad)")) {
                continue;
            }
            long addr = Long.parseLong(m.group(1), 16);
            int len = m.group(2).trim().split(" ").length;
            int off = (int) (addr - text.address());
            if (off < 0 || off + len > text.size()) {
                continue;
            }
            int got = cc.length(off, dec);
            String mnem = m.group(3);
            byte cls = got < 16 ? cc.cls(off) : -1;
            String expectCls = expectedClass(mnem, l);
            if (got != len || (expectCls != null && !expectCls.equals(InsnClass.name(cls)))) {
                if (mismatches.size() < 20) {
                    mismatches.add(l + " -> len " + got + " class " + InsnClass.name(cls));
                }
            }
            checked++;
        }
        assertTrue(checked > 100_000, "checked " + checked);
        assertEquals(List.of(), mismatches);
    }

    /** Control-flow class from objdump's mnemonic, or null if we do not check this one. */
    private static String expectedClass(String mnem, String line) {
        String m = mnem.replaceFirst("^(bnd|notrack|rex\\.W|data16|cs|ds)$", "");
        if (m.isEmpty()) {
            return null;
        }
        boolean indirect = line.contains("*");
        return switch (m) {
            case "ret", "retq" -> "return";
            case "call", "callq" -> indirect ? "call_indirect" : "call";
            case "jmp", "jmpq" -> indirect ? "jump_indirect" : "jump";
            case "syscall", "int3", "int", "sysenter" -> "far_call";
            case "iret", "iretq", "sysret", "sysretq" -> "far_return";
            case "loop", "loope", "loopne", "jrcxz", "jecxz" -> "cond_jump";
            case "nop", "mov", "add", "sub", "lea", "push", "pop", "cmp", "test" -> "other";
            default -> m.matches("j[a-z]+") ? "cond_jump" : null;
        };
    }

    @Test
    void encodingsTheFlowDependsOn() {
        X86Decoder d = new X86Decoder();
        check(d, ExecMode.BITS64, "e8fbffffff", 5, InsnClass.CALL, InsnOp.NONE, -5);
        check(d, ExecMode.BITS64, "7402", 2, InsnClass.COND_JUMP, InsnOp.NONE, 2);
        check(d, ExecMode.BITS64, "0f8510000000", 6, InsnClass.COND_JUMP, InsnOp.NONE, 16);
        check(d, ExecMode.BITS64, "ffe1", 2, InsnClass.JUMP_INDIRECT, InsnOp.NONE, 0);
        check(d, ExecMode.BITS64, "ff10", 2, InsnClass.CALL_INDIRECT, InsnOp.NONE, 0);
        check(d, ExecMode.BITS64, "ff18", 2, InsnClass.FAR_CALL, InsnOp.CALL_FAR, 0);
        check(d, ExecMode.BITS64, "c3", 1, InsnClass.RETURN, InsnOp.NONE, 0);
        check(d, ExecMode.BITS64, "0f05", 2, InsnClass.FAR_CALL, InsnOp.SYSCALL, 0);
        check(d, ExecMode.BITS64, "480f07", 3, InsnClass.FAR_RETURN, InsnOp.SYSRET, 0);
        check(d, ExecMode.BITS64, "48cf", 2, InsnClass.FAR_RETURN, InsnOp.IRET, 0);
        check(d, ExecMode.BITS64, "0f22d8", 3, InsnClass.OTHER, InsnOp.MOV_CR3, 0);
        check(d, ExecMode.BITS64, "0f01c2", 3, InsnClass.FAR_RETURN, InsnOp.VMLAUNCH, 0);
        check(d, ExecMode.BITS64, "0fc730", 3, InsnClass.OTHER, InsnOp.VMPTRLD, 0);
        check(d, ExecMode.BITS64, "f30faee0", 4, InsnClass.PTWRITE, InsnOp.NONE, 0);
        check(d, ExecMode.BITS64, "f30f01ec", 4, InsnClass.FAR_RETURN, InsnOp.UIRET, 0);
        check(d, ExecMode.BITS64, "d500a10010000000000000", 11, InsnClass.JUMP_INDIRECT, InsnOp.NONE, 0);
        check(d, ExecMode.BITS32, "ea001000000800", 7, InsnClass.FAR_JUMP, InsnOp.JMP_FAR, 0);
        check(d, ExecMode.BITS16, "e8fdff", 3, InsnClass.CALL, InsnOp.NONE, -3);
        check(d, ExecMode.BITS16, "cd80", 2, InsnClass.FAR_CALL, InsnOp.INT, 0);
    }

    private static void check(X86Decoder d, int mode, String hex, int len, byte cls, byte op, int disp) {
        byte[] b = java.util.HexFormat.of().parseHex(hex);
        assertEquals(len, d.decode(b, 0, b.length, mode), hex);
        assertEquals(InsnClass.name(cls), InsnClass.name(d.cls), hex);
        assertEquals(op, d.op, hex);
        assertEquals(disp, d.displacement, hex);
    }
}

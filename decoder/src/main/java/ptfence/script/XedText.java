package ptfence.script;

import capstone.Capstone;
import capstone.X86;
import capstone.X86_const;
import java.util.Map;

/**
 * One instruction in XED's AT&amp;T spelling (xed -A, what perf's --xed pipe prints), made from capstone's decode of
 * it: XED's instruction class name (Intel's mnemonic with its own condition-code names: jz, jnbe, cmovnz, setnle;
 * mov for movabs), a size suffix and a blank where the instruction has a memory operand (b, w, l, q, x, y, z by the
 * operand's bytes; the stack of push, pop, call, ret and leave counts), the operands in reverse order without
 * capstone's '*' on indirect branches, immediates as $0x hex at the operand's width, displacements in hex with the
 * scale always written, branch targets as 0x hex, and a trailing blank where XED lists only implicit operands
 * (syscall, cdqe, rdtsc). Checked against xed built from intelxed/xed on perf 6.1's lines (docs/script.md lists
 * what still differs: x87, AVX-512 masks and others).
 */
final class XedText {
    private final Capstone cs;

    static {
        ptfence.insn.LibraryDirs.forJna(); // before capstone's binding loads capstone through JNA
    }

    XedText() {
        cs = new Capstone(Capstone.CS_ARCH_X86, Capstone.CS_MODE_64);
        cs.setDetail(Capstone.CS_OPT_ON);
    }

    /** XED's names where capstone's Intel mnemonic differs (condition codes, movabs). */
    private static final Map<String, String> NAMES = names();

    private static Map<String, String> names() {
        Map<String, String> m = new java.util.HashMap<>();
        String[][] cc = {{"e", "z"}, {"ne", "nz"}, {"a", "nbe"}, {"ae", "nb"}, {"g", "nle"}, {"ge", "nl"}};
        for (String p : new String[] {"j", "set", "cmov"}) {
            for (String[] c : cc) {
                m.put(p + c[0], p + c[1]);
            }
        }
        m.put("movabs", "mov");
        m.put("tzcnt", "bsf"); // XED's filter decodes F3 0F BC/BD for no chip in particular: BSF, BSR
        m.put("lzcnt", "bsr");
        return Map.copyOf(m);
    }

    /** Suffixes by a memory operand's bytes (xed_pointer_name_suffix). */
    private static String suffix(int bytes) {
        return switch (bytes) {
            case 1 -> "b ";
            case 2 -> "w ";
            case 4 -> "l ";
            case 8 -> "q ";
            case 16 -> "x ";
            case 32 -> "y ";
            case 64 -> "z ";
            default -> "";
        };
    }

    /** The text, or null where capstone cannot decode the bytes. */
    String text(byte[] code, int len, long ip) {
        Capstone.CsInsn[] insns = cs.disasm(java.util.Arrays.copyOf(code, len), ip, 1);
        if (insns == null || insns.length == 0) {
            return null;
        }
        Capstone.CsInsn in = insns[0];
        String mnemonic = in.mnemonic;
        String prefix = "";
        int sp = mnemonic.lastIndexOf(' ');
        if (sp >= 0) {
            prefix = mnemonic.substring(0, sp + 1);
            mnemonic = mnemonic.substring(sp + 1);
        }
        if (mnemonic.startsWith("endbr")) {
            // XED (no CET chip): the reserved NOP these are, its ModRM's registers written out
            return mnemonic.equals("endbr64") ? "nop %edi, %edx" : "nop %edi, %ebx";
        }
        String name = NAMES.getOrDefault(mnemonic, mnemonic);
        X86.Operand[] ops = in.operands == null ? new X86.Operand[0] : ((X86.OpInfo) in.operands).op;
        if (ops == null) {
            ops = new X86.Operand[0];
        }
        boolean branch = in.group(X86_const.X86_GRP_JUMP) || in.group(X86_const.X86_GRP_CALL);
        int memBytes = 0;
        for (X86.Operand o : ops) {
            if (o.type == X86_const.X86_OP_MEM && memBytes == 0 && !name.equals("lea")) {
                memBytes = memoryBytes(name, o.size);
            }
        }
        if (STRING_OPS.contains(name)) {
            // XED writes a string instruction's memory operands only (rep stosq: (%rdi), not %rax)
            ops = java.util.Arrays.stream(ops).filter(o -> o.type == X86_const.X86_OP_MEM).toArray(X86.Operand[]::new);
        }
        if (memBytes == 0) {
            memBytes = stackBytes(name, ops, in);
        }
        X86.OpInfo info = in.operands == null ? null : (X86.OpInfo) in.operands;
        boolean explicitMemory = java.util.Arrays.stream(ops).anyMatch(o -> o.type == X86_const.X86_OP_MEM);
        if (info != null && info.prefix != null && info.prefix.length > 3 && info.prefix[3] == 0x67
                && !explicitMemory) {
            prefix = "addr32 " + prefix; // an address-size prefix with no address to size, as XED names it
        }
        if (name.equals("nop") && ops.length == 0 && in.size == 2 && code[0] == 0x66) {
            prefix = "data16 " + prefix;
        }
        StringBuilder b = new StringBuilder(48).append(prefix).append(name).append(suffix(memBytes));
        boolean implicit = in.regsRead != null && in.regsRead.length > 0 || in.regsWrite != null
                && in.regsWrite.length > 0 || memBytes != 0 || IMPLICIT.contains(name);
        if (ops.length > 0 || implicit) {
            b.append(' ');
        }
        for (int k = ops.length - 1; k >= 0; k--) {
            X86.Operand o = ops[k];
            if (k < ops.length - 1) {
                b.append(", ");
            }
            switch (o.type) {
                case X86_const.X86_OP_REG -> b.append('%').append(in.regName(o.value.reg));
                case X86_const.X86_OP_IMM -> {
                    if (branch) {
                        b.append("0x").append(Long.toHexString(o.value.imm));
                    } else {
                        b.append("$0x").append(Long.toHexString(mask(o.value.imm, name.equals("xabort") ? 1 : o.size)));
                    }
                }
                case X86_const.X86_OP_MEM -> mem(b, in, o.value.mem);
                default -> b.append('?');
            }
        }
        return b.toString();
    }

    /** Instructions XED gives implicit operands that capstone lists no registers for (XED then ends in a blank). */
    private static final java.util.Set<String> IMPLICIT = java.util.Set.of("syscall", "sysret", "sysretq",
            "sysenter", "sysexit", "swapgs", "rdtsc", "rdtscp", "rdpmc", "rdmsr", "wrmsr", "cpuid", "xgetbv",
            "xsetbv", "iretq", "iret", "int3", "int1", "into", "int");

    private static final java.util.Set<String> STRING_OPS = java.util.Set.of("stosb", "stosw", "stosd", "stosq",
            "lodsb", "lodsw", "lodsd", "lodsq", "scasb", "scasw", "scasd", "scasq", "movsb", "movsw", "movsq",
            "cmpsb", "cmpsw", "cmpsd", "cmpsq", "insb", "insw", "insd", "outsb", "outsw", "outsd");

    /** XED's length of a memory operand where capstone's differs (prefetches: a cache line; scalar compares). */
    private static int memoryBytes(String name, int capstoneSize) {
        if (name.startsWith("prefetch")) {
            return 64;
        }
        return switch (name) {
            case "comiss", "ucomiss" -> 4;
            case "comisd", "ucomisd" -> 8;
            default -> capstoneSize;
        };
    }

    /** The bytes of the stack slot an instruction without a memory operand of its own pushes or pops. */
    private static int stackBytes(String name, X86.Operand[] ops, Capstone.CsInsn in) {
        switch (name) {
            case "push", "pop" -> {
                return ops.length == 1 && ops[0].size == 2 ? 2 : 8;
            }
            case "call", "ret", "leave", "pushfq", "popfq" -> {
                return 8;
            }
            default -> {
                return 0;
            }
        }
    }

    private static long mask(long v, int bytes) {
        return bytes >= 8 || bytes <= 0 ? v : v & ((1L << (8 * bytes)) - 1);
    }

    /** [%seg:][-]0xDISP(%base,%index,scale), as XED writes a memory operand. */
    private static void mem(StringBuilder b, Capstone.CsInsn in, X86.MemType m) {
        if (m.segment == X86_const.X86_REG_FS || m.segment == X86_const.X86_REG_GS) {
            // 64-bit code ignores cs, ds, es and ss prefixes, and XED writes only a segment that applies
            b.append('%').append(in.regName(m.segment)).append(':');
        }
        boolean base = m.base != X86_const.X86_REG_INVALID;
        boolean index = m.index != X86_const.X86_REG_INVALID;
        if (m.disp != 0) {
            if (m.disp < 0 && (base || index)) {
                b.append("-0x").append(Long.toHexString(-m.disp));
            } else {
                b.append("0x").append(Long.toHexString(m.disp));
            }
        }
        if (base || index) {
            b.append('(');
            if (base) {
                b.append('%').append(in.regName(m.base));
            }
            if (index) {
                b.append(",%").append(in.regName(m.index)).append(',').append(m.scale);
            }
            b.append(')');
        }
    }
}

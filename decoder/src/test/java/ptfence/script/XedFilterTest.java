package ptfence.script;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * --xed: the lines perf 6.1 printed for HASE's loopy recording with --insn-trace (perf script --insn-trace -i
 * loopy-20180404T162955.perf --symfs symfs), through the filter, laid out as xed -F insn: -A -64 lays them out
 * (intelxed/xed examples/xed-disas-filter.c: the line up to the prefix, two tabs, the instruction, what followed the
 * bytes); lines without the prefix pass unchanged. The expected texts are what xed, built from intelxed/xed, printed
 * for these lines of perf 6.1's (perf script --insn-trace --xed with xed on PATH); XedPipelineTest compares whole
 * recordings where an xed binary is present.
 */
class XedFilterTest {
    private static final String A = "           loopy 19233 [002] 969349.987566262:            4000e8 _start+0x0 "
            + "(/home/joerg/git/angr/hase/tests/bin/loopy/loopy) ";
    private static final String B = "           loopy 19233 [002] 969349.987566262:            40010e again+0x22 "
            + "(/home/joerg/git/angr/hase/tests/bin/loopy/loopy) ";

    private static String filter(String in, int chunk) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (XedFilter f = new XedFilter(out)) {
            byte[] b = in.getBytes(StandardCharsets.UTF_8);
            for (int i = 0; i < b.length; i += chunk) {
                f.write(b, i, Math.min(chunk, b.length - i));
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void replacesTheInsnBytesAsXedsFilterDoes() throws Exception {
        String in = A + "insn: 4c 8b 04 24\n" + B + "insn: 0f 05\nWarning: no insn here\n";
        // XED: a size suffix and a blank where there is a memory operand; a blank after an instruction whose
        // operands are all implicit
        String want = A + "\t\tmovq  (%rsp), %r8\n" + B + "\t\tsyscall \nWarning: no insn here\n";
        assertEquals(want, filter(in, 1 << 16));
        assertEquals(want, filter(in, 7)); // lines split across writes
    }

    @Test
    void branchTargetsFromTheLinesAddressOfEightOrMoreDigits() throws Exception {
        // XED takes the first hex number of 8+ digits that a blank follows: 4000f0 is too short, so the target is
        // relative to 0, as XED prints it; a kernel address is long enough
        assertEquals(A.replace("4000e8", "4000f0") + "\t\tjz 0x29\n",
                filter(A.replace("4000e8", "4000f0") + "insn: 74 27\n", 64));
        assertEquals(A.replace("4000e8", "400117") + "\t\tjnz 0xffffffffffffffd5\n",
                filter(A.replace("4000e8", "400117") + "insn: 75 d3\n", 64));
        assertEquals("x ffffffffc0a01000 f \t\tjz 0xffffffffc0a01029\n",
                filter("x ffffffffc0a01000 f insn: 74 27\n", 64));
    }

    @Test
    void xedsSpellingOfOperands() throws Exception {
        // as xed -A -64 printed them (the objdump of /bin/ls and libc through both): immediates in hex at the
        // operand's width, the scale always written, no '*' on indirect branches, the stack's suffix on call/ret
        String[][] cases = {{"48 83 e4 f0", "and $0xfffffffffffffff0, %rsp"}, {"83 f8 ff", "cmp $0xffffffff, %eax"},
            {"0f b6 04 02", "movzxb  (%rdx,%rax,1), %eax"}, {"ff d0", "callq  %rax"}, {"c3", "retq  "},
            {"ff 25 cc ff 01 00", "jmpq  0x1ffcc(%rip)"}, {"48 8d 70 d0", "lea -0x30(%rax), %rsi"},
            {"64 48 8b 04 25 28 00 00 00", "movq  %fs:0x28, %rax"}, {"f3 48 ab", "rep stosqq  (%rdi)"},
            {"0f 87 d2 15 00 00", "jnbe 0x15d8"}, {"48 98", "cdqe "}, {"90", "nop"}, {"f3 0f 1e fa", "nop %edi, %edx"}};
        for (String[] c : cases) {
            assertEquals("x 0000000000000000 \t\t" + c[1] + "\n", filter("x 0000000000000000 insn: " + c[0] + "\n", 64),
                    c[0]);
        }
    }
}

package ptfence.script;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * --xed: the lines perf 6.1 printed for HASE's loopy recording with --insn-trace (perf script --insn-trace -i
 * loopy-20180404T162955.perf --symfs symfs), through the filter, laid out as xed -F insn: -A -64 lays them out
 * (intelxed/xed examples/xed-disas-filter.c: the line up to the prefix, two tabs, the instruction, what followed the
 * bytes); lines without the prefix pass unchanged. The instruction texts are capstone's AT&T spelling (no xed binary
 * here to compare them with; docs/script.md lists how XED's spelling differs).
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
        String want = A + "\t\tmovq (%rsp), %r8\n" + B + "\t\tsyscall\nWarning: no insn here\n";
        assertEquals(want, filter(in, 1 << 16));
        assertEquals(want, filter(in, 7)); // lines split across writes
    }

    @Test
    void branchTargetsFromTheLinesAddressOfEightOrMoreDigits() throws Exception {
        // XED takes the first hex number of 8+ digits that a blank follows: 4000f0 is too short, so the target is
        // relative to 0, as XED prints it; a kernel address is long enough
        assertEquals(A.replace("4000e8", "4000f0") + "\t\tje 0x29\n",
                filter(A.replace("4000e8", "4000f0") + "insn: 74 27\n", 64));
        assertEquals("x ffffffffc0a01000 f \t\tje 0xffffffffc0a01029\n",
                filter("x ffffffffc0a01000 f insn: 74 27\n", 64));
    }
}

package ptfence.bpf;

import org.junit.jupiter.api.Test;
import ptfence.cli.BadInputException;
import ptfence.fence.KernelLayout;

import java.nio.file.Files;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class BtfTest {

    @Test
    void offsetsThroughAnonymousMembersTypedefsAndBitfieldStructs() {
        BtfWriter w = new BtfWriter();
        int u64 = w.type("u64", Btf.KIND_INT, 0, false, 8);
        w.u32(64); // INT encoding: 64 bits
        int typedef = w.type("u64_t", Btf.KIND_TYPEDEF, 0, false, u64);
        int cnst = w.type("", Btf.KIND_CONST, 0, false, typedef);
        int inner = w.type("", Btf.KIND_STRUCT, 2, false, 16);   // anonymous struct
        w.member("a", u64, 0);
        w.member("work", u64, 64);
        int union = w.type("", Btf.KIND_UNION, 2, false, 16);    // anonymous union holding it
        w.member("", inner, 0);
        w.member("rcu", u64, 0);
        int ksym = w.type("ksym", Btf.KIND_STRUCT, 2, true, 24);  // kind_flag: bitfield offsets
        w.member("flags", u64, (3 << 24) | 0);
        w.member("name", u64, 128);
        int proto = w.type("", Btf.KIND_FUNC_PROTO, 1, false, 0);
        w.u32(0).u32(u64);
        int outer = w.type("aux", Btf.KIND_STRUCT, 4, false, 96);
        w.member("x", cnst, 0);
        w.member("", union, 128);
        w.member("ksym", ksym, 384);
        w.member("y", u64, 704);
        int func = w.type("bpf_iter_num_new", Btf.KIND_FUNC, 0, false, proto);

        Btf btf = Btf.parse(w.bytes(), "synthetic");
        assertEquals(func, btf.typeCount());
        assertEquals(outer, btf.structId("aux"));
        assertEquals(0, btf.offsetOf("aux", "x"));
        assertEquals(24, btf.offsetOf("aux", "work"));      // 16 (union) + 8 (inside the anonymous struct)
        assertEquals(16, btf.offsetOf("aux", "rcu"));
        assertEquals(48 + 16, btf.offsetOf("aux", "ksym.name"));
        assertEquals(88, btf.offsetOf("aux", "y"));
        assertEquals(96, btf.structSize("aux"));
        assertEquals(func, btf.funcId("bpf_iter_num_new").orElseThrow());
        assertTrue(btf.funcId("nope").isEmpty());
        assertEquals(Btf.KIND_INT, btf.memberType("aux", "x").kind());
        assertThrows(BadInputException.class, () -> btf.offsetOf("aux", "missing"));
        assertEquals(ksym, btf.structId("ksym"));
    }

    @Test
    void rejectsWhatIsNotBtf() {
        BadInputException e = assertThrows(BadInputException.class, () -> Btf.parse(new byte[64], "x.btf"));
        assertTrue(e.getMessage().contains("x.btf"), e.getMessage());
    }

    @Test
    void vmlinuxLayoutMatchesTheX86Abi() throws Exception {
        assumeTrue(Files.isReadable(Btf.VMLINUX), "no readable /sys/kernel/btf/vmlinux");
        Btf btf = Btf.vmlinux();
        assertTrue(btf.typeCount() > 10_000, "types: " + btf.typeCount());
        // struct pt_regs is fixed by the x86-64 entry code: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di orig_ax
        assertEquals(14 * 8, btf.offsetOf("pt_regs", "di"));
        assertEquals(15 * 8, btf.offsetOf("pt_regs", "orig_ax"));
        assertEquals(168, btf.structSize("pt_regs"));
        // uapi struct bpf_prog_info is ABI: its size is fixed by the newest header (kernel-interfaces.md 4.2).
        assertEquals(232, btf.structSize("bpf_prog_info"));
        assertEquals(112, btf.offsetOf("bpf_prog_info", "jited_ksyms"));
        KernelLayout layout = KernelLayout.from(btf);
        assertTrue(layout.auxWork() > layout.auxKsymName(), layout.toString());
        // uapi enum constants are ABI too (include/uapi/linux/bpf.h, perf_event.h)
        assertEquals(7, btf.enumValue("BPF_PROG_TYPE_PERF_EVENT").orElseThrow());
        assertEquals(41, btf.enumValue("BPF_PERF_EVENT").orElseThrow());
        assertEquals(2, btf.enumValue("PERF_TYPE_TRACEPOINT").orElseThrow());
        assertTrue(btf.enumValue("NO_SUCH_CONSTANT").isEmpty());
    }
}

package ptfence.bpf;

import org.junit.jupiter.api.Test;
import ptfence.cli.BadInputException;
import ptfence.fence.KernelLayout;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class BtfTest {

    /** A hand-built BTF blob: the writer here follows the format spec, independently of the reader. */
    static final class BtfWriter {
        final ByteArrayOutputStream strings = new ByteArrayOutputStream();
        final ByteBuffer types = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
        int nextId = 1;

        BtfWriter() { strings.write(0); }

        int str(String s) {
            int off = strings.size();
            strings.writeBytes(s.getBytes(StandardCharsets.US_ASCII));
            strings.write(0);
            return off;
        }

        int type(String name, int kind, int vlen, boolean kindFlag, int sizeOrType) {
            types.putInt(name.isEmpty() ? 0 : str(name));
            types.putInt((kindFlag ? 1 << 31 : 0) | (kind << 24) | vlen);
            types.putInt(sizeOrType);
            return nextId++;
        }

        void member(String name, int type, int offset) {
            types.putInt(name.isEmpty() ? 0 : str(name)).putInt(type).putInt(offset);
        }

        byte[] bytes() {
            byte[] s = strings.toByteArray();
            int typeLen = types.position();
            ByteBuffer b = ByteBuffer.allocate(24 + typeLen + s.length).order(ByteOrder.LITTLE_ENDIAN);
            b.putShort((short) 0xEB9F).put((byte) 1).put((byte) 0).putInt(24)
                    .putInt(0).putInt(typeLen).putInt(typeLen).putInt(s.length);
            b.put(types.array(), 0, typeLen).put(s);
            return b.array();
        }
    }

    @Test
    void offsetsThroughAnonymousMembersTypedefsAndBitfieldStructs() {
        BtfWriter w = new BtfWriter();
        int u64 = w.type("u64", Btf.KIND_INT, 0, false, 8);
        w.types.putInt(64); // INT encoding: 64 bits
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
        w.types.putInt(0).putInt(u64);
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
    }
}

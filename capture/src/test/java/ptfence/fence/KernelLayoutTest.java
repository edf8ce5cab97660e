package ptfence.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;
import ptfence.bpf.Btf;
import ptfence.guest.GuestKernel;
import ptfence.image.Elf;

/**
 * The layout of the kernels users run, from their own BTF (the .BTF section of Debian's packaged vmlinux, no boot
 * needed): the members that moved resolve to what each kernel has, the missing kfuncs choose the chunked copy, and
 * every fence program can be emitted for it.
 */
class KernelLayoutTest {
    /** The BTF of a guest kernel's packaged vmlinux (skipped where it could not be unpacked). */
    static Btf btf(GuestKernel k) {
        assumeTrue(k.vmlinux() != null, "no vmlinux unpacked for " + k.meta());
        ByteBuffer b = Elf.read(k.vmlinux()).section(".BTF");
        byte[] raw = new byte[b.remaining()];
        b.get(raw);
        return Btf.parse(raw, k.vmlinux() + " .BTF");
    }

    private static void emitsEveryProgram(KernelLayout l) {
        FencePrograms p = new FencePrograms(l, 3, 4, 1 << 20, 5, l.copiesInChunks() ? 6 : -1);
        for (byte[] insns : new byte[][] {p.load(), p.free(0xffffffff81000000L), p.peek(),
                p.trampolineFree(0xffffffff81000100L), p.dispatcherSwitched(), p.trampolineBuilt(),
                p.trampolineUpdated()}) {
            assertTrue(insns.length > 0 && insns.length % 8 == 0);
        }
    }

    @Test
    void debian6_1() {
        Btf btf = btf(GuestKernel.of("linux-image-amd64"));
        KernelLayout l = KernelLayout.from(btf);
        assertEquals(btf.offsetOf("bpf_prog_aux", "func_cnt"), l.auxRealFuncCnt(), "no real_func_cnt before 6.7");
        assertFalse(l.trampSize().isPresent(), "no bpf_tramp_image.size before 6.7");
        assertTrue(l.trampWork().isPresent());
        assertTrue(l.metadata().isPresent(), "every metadata field is there");
        assertTrue(l.copiesInChunks());
        assertEquals("bpf_iter_num_* (6.4+), bpf_probe_read_kernel_dynptr/_str_dynptr", l.missingKfuncs());
        assertTrue(l.hasBpfLoop(), "6.1 has bpf_loop (5.17+): the chunked loops are callbacks");
        dispatcherHook(btf, l);
        trampolineHook(btf, l, "tr"); // the weak default's FUNC comes first in 6.1's BTF; x86's names it im
        trampolineUpdateHook(btf, l, false);
        emitsEveryProgram(l);
        emitsEveryProgram(l.withoutBpfLoop());
    }

    /**
     * The dispatcher hook's members, from the kernel's own struct bpf_dispatcher (6.1 and 6.12 have the pack's two
     * halves: image, rw_image, image_off), and its attach target, the update function, as a FUNC.
     */
    private static void dispatcherHook(Btf btf, KernelLayout l) {
        assertTrue(l.dispatcher().isPresent(), "struct bpf_dispatcher and bpf_dispatcher_change_prog");
        KernelLayout.Dispatcher d = l.dispatcher().get();
        assertTrue(d.numProgs() < d.image() && d.image() < d.imageOff() && d.imageOff() < d.ksymName(),
                "num_progs, image, image_off, ksym in the kernel's order: " + d);
        assertEquals(4, btf.sizeOf(btf.memberType("bpf_dispatcher", "image_off").id()));
        assertEquals(Btf.KIND_PTR, btf.memberType("bpf_dispatcher", "image").kind());
        assertEquals("bpf_dispatcher_change_prog", btf.type(d.changeProgFunc()).name());
        assertEquals(Btf.KIND_FUNC, btf.type(d.changeProgFunc()).kind());
    }

    /**
     * The trampoline hook's arguments, by name from the kernel's FUNC_PROTO of arch_prepare_bpf_trampoline (im,
     * image, image_end, m, flags, tlinks, then orig_call or func_addr): im first, image second, seven in all, so
     * the return value is fexit's eighth u64; and the image's name in struct bpf_tramp_image.
     */
    private static void trampolineHook(Btf btf, KernelLayout l, String imName) {
        assertTrue(l.trampolineBuild().isPresent(), "arch_prepare_bpf_trampoline with im and image");
        KernelLayout.TrampolineBuild t = l.trampolineBuild().get();
        assertEquals(0, btf.paramIndex("arch_prepare_bpf_trampoline", imName));
        assertEquals(0, t.imArg());
        assertEquals(1, t.imageArg());
        assertEquals(7, t.args());
        assertEquals(2, btf.paramIndex("arch_prepare_bpf_trampoline", "image_end"));
        assertEquals(-1, btf.paramIndex("arch_prepare_bpf_trampoline", "no_such"));
        assertEquals("arch_prepare_bpf_trampoline", btf.type(t.prepareFunc()).name());
        assertEquals(Btf.KIND_FUNC, btf.type(t.prepareFunc()).kind());
        assertEquals(btf.offsetOf("bpf_tramp_image", "ksym.name"), t.ksymName());
        assertEquals(Btf.KIND_INT, btf.resolve(btf.type(btf.type(t.prepareFunc()).sizeOrType()).sizeOrType()).kind(),
                "it returns an int: the bytes written, or an error");
    }

    /**
     * The update hook (where the build hook cannot attach, as on 6.1): bpf_trampoline_update(tr, lock_direct_mutex),
     * two arguments (within 6.1's six), tr first, an int return; tr->cur_image a bpf_tramp_image pointer, whose image
     * and ksym's extent and name the hook reads; a page's extent on 6.1 (no size member), im->size on 6.12.
     */
    private static void trampolineUpdateHook(Btf btf, KernelLayout l, boolean hasSize) {
        assertTrue(l.trampolineUpdate().isPresent(), "bpf_trampoline_update(tr, ...) and the members it reads");
        KernelLayout.TrampolineUpdate t = l.trampolineUpdate().get();
        assertEquals(0, t.trArg());
        assertEquals(2, t.args());
        assertEquals(1, btf.paramIndex("bpf_trampoline_update", "lock_direct_mutex"));
        assertEquals("bpf_trampoline_update", btf.type(t.updateFunc()).name());
        assertEquals(Btf.KIND_FUNC, btf.type(t.updateFunc()).kind());
        assertEquals(Btf.KIND_INT, btf.resolve(btf.type(btf.type(t.updateFunc()).sizeOrType()).sizeOrType()).kind(),
                "it returns an int: 0 or an error");
        assertEquals(Btf.KIND_PTR, btf.memberType("bpf_trampoline", "cur_image").kind());
        assertEquals(btf.offsetOf("bpf_tramp_image", "ksym.start") + 8, t.ksymEnd(), "start, end: unsigned longs");
        assertEquals(btf.offsetOf("bpf_tramp_image", "ksym.name"), t.ksymName());
        assertEquals(hasSize, l.trampSize().isPresent(), "im->size came in 6.7");
    }

    @Test
    void debian6_12() {
        Btf btf = btf(GuestKernel.of("linux-image-6.12-amd64"));
        KernelLayout l = KernelLayout.from(btf);
        assertEquals(btf.offsetOf("bpf_prog_aux", "real_func_cnt"), l.auxRealFuncCnt());
        assertTrue(l.trampSize().isPresent() && l.metadata().isPresent());
        assertTrue(l.copiesInChunks(), "Debian's 6.12 has the iterators but not the dynptr reads");
        assertEquals("bpf_probe_read_kernel_dynptr/_str_dynptr", l.missingKfuncs());
        assertTrue(l.hasBpfLoop());
        dispatcherHook(btf, l);
        trampolineHook(btf, l, "im");
        trampolineUpdateHook(btf, l, true);
        emitsEveryProgram(l);
    }

    @Test
    void thisKernel() throws Exception {
        assumeTrue(Files.isReadable(Btf.VMLINUX), "no " + Btf.VMLINUX);
        KernelLayout l = KernelLayout.from(Btf.vmlinux());
        dispatcherHook(Btf.vmlinux(), l);
        assertEquals(l.missingKfuncs().isEmpty(), !l.copiesInChunks(), l.missingKfuncs());
        emitsEveryProgram(l);
        emitsEveryProgram(l.withoutKfuncs());
        emitsEveryProgram(l.withoutKfuncs().withoutBpfLoop());
    }
}

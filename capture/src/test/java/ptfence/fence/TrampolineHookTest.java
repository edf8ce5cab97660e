package ptfence.fence;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import ptfence.bpf.Btf;
import ptfence.bpf.Kallsyms;

/**
 * The trampoline hook's body (what fexit arch_prepare_bpf_trampoline runs on 6.1 and 6.12), run on this machine,
 * whose kernel refuses fexit: the same instructions loaded as a raw tracepoint program and run with
 * BPF_PROG_TEST_RUN on the function's arguments and return value, with {@code im} a struct bpf_tramp_image laid out
 * at this kernel's BTF offsets in a map value and {@code image} real kernel text, so the record's bytes are checked
 * against an independent read of that range (the BPF read program, as the fence's reader does without /proc/kcore).
 * Both copy paths: dynptr kfuncs and the chunks that Debian's kernels use.
 */
class TrampolineHookTest {
    static KernelLayout layout;
    static Btf btf;
    static long text;

    @BeforeAll
    static void live() throws Exception {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
        btf = Btf.vmlinux();
        layout = KernelLayout.from(btf);
        assertTrue(layout.trampolineBuild().isPresent(), "this kernel's BTF has arch_prepare_bpf_trampoline(im, image"
                + ", ...) and struct bpf_tramp_image");
        text = Kallsyms.read().require("_stext"); // real kernel text stands for an image just written
    }

    /** The context fexit gives: the arguments as u64s, then the return value. */
    private static byte[] ctx(long im, long image, long ret) {
        KernelLayout.TrampolineBuild t = layout.trampolineBuild().get();
        ByteBuffer b = ByteBuffer.allocate(8 * (t.args() + 1)).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < t.args(); i++) b.putLong(8 * i, 0x1111_0000L + i); // the others: not read
        b.putLong(8 * t.imArg(), im).putLong(8 * t.imageArg(), image).putLong(8 * t.args(), ret);
        return b.array();
    }

    private static void copiesWhatTheBuildWrote(KernelLayout l) throws Exception {
        try (FakeStruct im = FakeStruct.create(btf.structSize("bpf_tramp_image"), "t_fake_im");
             KernelMemory reader = KernelMemory.open(layout)) {
            byte[] value = new byte[im.size()];
            byte[] name = "bpf_trampoline_6442451234".getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(name, 0, value, layout.trampolineBuild().get().ksymName(), name.length);
            im.set(value);
            for (int size : new int[] {1, 187, 4096}) {
                long before = System.nanoTime();
                List<FenceRecord.Parsed> got = FakeStruct.run(l, FencePrograms::trampolineBuilt,
                        ctx(im.address(), text + 64, size));
                assertEquals(1, got.size(), "one record per build");
                FenceRecord.Parsed r = got.get(0);
                assertEquals(FenceRecord.KIND_TRAMP_BUILT, r.kind());
                assertEquals(text + 64, r.start(), "the image argument");
                assertEquals(size, r.len(), "the bytes written: the return value");
                assertTrue(r.complete(), "a whole, readable image");
                assertEquals("bpf_trampoline_6442451234", r.name(), "named by im->ksym.name");
                assertTrue(r.monotonicNs() >= before && r.monotonicNs() <= System.nanoTime(), "stamped when copied");
                assertArrayEquals(reader.read(text + 64, size), r.image(), "the image as read independently");
            }
            if (layout.trampSize().isPresent()) { // 6.7+: no more than the allocation, im->size
                ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN).putInt(layout.trampSize().getAsInt(), 128);
                im.set(value);
                List<FenceRecord.Parsed> got = FakeStruct.run(l, FencePrograms::trampolineBuilt,
                        ctx(im.address(), text + 64, 128 + 64));
                assertEquals(1, got.size());
                assertEquals(128, got.get(0).len(), "the code plus BPF_INSN_SAFETY cut to im->size");
                assertArrayEquals(reader.read(text + 64, 128), got.get(0).image());
                assertEquals(100, FakeStruct.run(l, FencePrograms::trampolineBuilt, ctx(im.address(), text, 100))
                        .get(0).len(), "less than im->size: what was written");
            }
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineBuilt, ctx(im.address(), text,
                    0xffff_fff2L)), "a failed build (-EFAULT in the int's 32 bits): nothing to copy");
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineBuilt, ctx(im.address(), text, -22)),
                    "a failed build (-EINVAL sign-extended): nothing to copy");
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineBuilt, ctx(im.address(), text, 0)),
                    "nothing written: nothing to copy");
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineBuilt, ctx(0, text, 100)),
                    "struct_ops' build (no bpf_tramp_image): not a trampoline's");
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineBuilt, ctx(im.address(), text,
                    FencePrograms.TRAMPOLINE_MAX + 1)), "past any image's size: not copied");
        }
    }

    @Test
    void copiesWhatTheBuildWroteWithTheDynptrReads() throws Exception {
        assumeTrue(!layout.copiesInChunks(), "this kernel lacks " + layout.missingKfuncs());
        copiesWhatTheBuildWrote(layout);
    }

    @Test
    void copiesWhatTheBuildWroteInChunksAsOnDebiansKernels() throws Exception {
        copiesWhatTheBuildWrote(layout.withoutKfuncs());
    }

    /** The arguments are found by name, and the attach target is the build function. */
    @Test
    void theHookFindsItsArgumentsByName() {
        KernelLayout.TrampolineBuild t = layout.trampolineBuild().get();
        assertEquals("arch_prepare_bpf_trampoline", btf.type(t.prepareFunc()).name());
        assertEquals(Btf.KIND_FUNC, btf.type(t.prepareFunc()).kind());
        assertEquals(btf.paramIndex("arch_prepare_bpf_trampoline", "image"), t.imageArg());
        assertTrue(t.imArg() != t.imageArg() && t.args() > Math.max(t.imArg(), t.imageArg()));
        assertEquals(Btf.KIND_ARRAY, btf.memberType("bpf_tramp_image", "ksym.name").kind(), "the name in place");
    }

    /** fexit bpf_trampoline_update's context: the arguments as u64s, then the return value. */
    private static byte[] updateCtx(long tr, long ret) {
        KernelLayout.TrampolineUpdate t = layout.trampolineUpdate().get();
        ByteBuffer b = ByteBuffer.allocate(8 * (t.args() + 1)).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < t.args(); i++) b.putLong(8 * i, 1); // lock_direct_mutex: not read
        b.putLong(8 * t.trArg(), tr).putLong(8 * t.args(), ret);
        return b.array();
    }

    /**
     * The update hook (6.1's form): tr->cur_image followed to the image in force, copied over its ksym's extent and
     * named by its ksym, where the update succeeded and left an image.
     */
    private static void copiesTheImageInForce(KernelLayout l) throws Exception {
        KernelLayout.TrampolineUpdate t = layout.trampolineUpdate().get();
        try (FakeStruct im = FakeStruct.create(btf.structSize("bpf_tramp_image"), "t_fake_im");
             FakeStruct tr = FakeStruct.create(btf.structSize("bpf_trampoline"), "t_fake_tr");
             KernelMemory reader = KernelMemory.open(layout)) {
            byte[] trValue = new byte[tr.size()];
            ByteBuffer.wrap(trValue).order(ByteOrder.LITTLE_ENDIAN).putLong(t.curImage(), im.address());
            tr.set(trValue);
            byte[] value = new byte[im.size()];
            ByteBuffer v = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN);
            byte[] name = "bpf_trampoline_6442451234_3".getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(name, 0, value, t.ksymName(), name.length);
            long image = text + 128;
            v.putLong(t.imImage(), image).putLong(t.ksymStart(), image);
            for (int size : new int[] {1, 187, 4096}) {
                v.putLong(t.ksymEnd(), image + size);
                im.set(value);
                long before = System.nanoTime();
                for (long ret : new long[] {0, 0xdead_0000_0000L}) { // an int: only its low 32 bits are the value
                    List<FenceRecord.Parsed> got = FakeStruct.run(l, FencePrograms::trampolineUpdated,
                            updateCtx(tr.address(), ret));
                    assertEquals(1, got.size(), "one record per update");
                    FenceRecord.Parsed r = got.get(0);
                    assertEquals(FenceRecord.KIND_TRAMP_UPDATED, r.kind());
                    assertEquals(image, r.start(), "im->image of tr->cur_image");
                    assertEquals(size, r.len(), "ksym.end - ksym.start");
                    assertTrue(r.complete());
                    assertEquals("bpf_trampoline_6442451234_3", r.name(), "named by im->ksym.name");
                    assertTrue(r.monotonicNs() >= before && r.monotonicNs() <= System.nanoTime());
                    assertArrayEquals(reader.read(image, size), r.image(), "the image as read independently");
                }
            }
            if (layout.trampSize().isPresent()) { // 6.7+: no more than the allocation, im->size
                v.putLong(t.ksymEnd(), image + 4096).putInt(layout.trampSize().getAsInt(), 192);
                im.set(value);
                List<FenceRecord.Parsed> got = FakeStruct.run(l, FencePrograms::trampolineUpdated,
                        updateCtx(tr.address(), 0));
                assertEquals(192, got.get(0).len(), "the ksym's page cut to im->size");
                assertArrayEquals(reader.read(image, 192), got.get(0).image());
                v.putInt(layout.trampSize().getAsInt(), 0);
            }
            v.putLong(t.ksymEnd(), image + 100);
            im.set(value);
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineUpdated, updateCtx(tr.address(), -22)),
                    "a failed update (-EINVAL): cur_image is the old image, copied at its own update");
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineUpdated,
                    updateCtx(tr.address(), 0xffff_fff0L)), "a failed update (-16 in the int's 32 bits)");
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineUpdated, updateCtx(0, 0)),
                    "no trampoline");
            v.putLong(t.ksymEnd(), image);
            im.set(value);
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineUpdated, updateCtx(tr.address(), 0)),
                    "an empty extent");
            v.putLong(t.ksymEnd(), image + FencePrograms.TRAMPOLINE_MAX + 1);
            im.set(value);
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineUpdated, updateCtx(tr.address(), 0)),
                    "past any image's size");
            v.putLong(t.ksymEnd(), image + 100).putLong(t.imImage(), 0);
            im.set(value);
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineUpdated, updateCtx(tr.address(), 0)),
                    "no image");
            tr.set(new byte[tr.size()]);
            assertEquals(List.of(), FakeStruct.run(l, FencePrograms::trampolineUpdated, updateCtx(tr.address(), 0)),
                    "the last detach: tr->cur_image is NULL");
        }
    }

    @Test
    void theUpdateHookCopiesTheImageInForceWithTheDynptrReads() throws Exception {
        assumeTrue(layout.trampolineUpdate().isPresent(), "this kernel's BTF has no bpf_trampoline_update(tr, ...)");
        assumeTrue(!layout.copiesInChunks(), "this kernel lacks " + layout.missingKfuncs());
        copiesTheImageInForce(layout);
    }

    @Test
    void theUpdateHookCopiesTheImageInForceInChunksAsOnDebiansKernels() throws Exception {
        assumeTrue(layout.trampolineUpdate().isPresent(), "this kernel's BTF has no bpf_trampoline_update(tr, ...)");
        copiesTheImageInForce(layout.withoutKfuncs());
    }
}

package ptfence.fence;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import ptfence.bpf.Kallsyms;

/**
 * All images of one BPF trampoline carry one name (bpf_trampoline_KEY), and the old image's KSYMBOL unregister comes
 * after its rcu-tasks grace periods, often after the next image was registered: the unregister must end the old
 * image only, so the new one is still known at its attach poke (guest 6.1: the new image was forgotten and its
 * attach poke found nothing to copy). Real kernel text stands for the two images; the fence reads them as it reads
 * trampolines.
 */
class TrampolineNamesTest {
    @Test
    void anOldImagesUnregisterLeavesTheNewImageOfTheSameName() throws Exception {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
        long text = Kallsyms.read().require("_stext");
        long oldImage = text + 4096, newImage = text + 8192, site = text + 64;
        List<CapturedText> got = new CopyOnWriteArrayList<>();
        try (TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false).withInKernel(false),
                got::add)) {
            fence.copyKernelRange("bpf_trampoline_6442451234", oldImage, 256, 100);
            fence.copyKernelRange("bpf_trampoline_6442451234", newImage, 256, 200);
            fence.kernelRangeGone("bpf_trampoline_6442451234", oldImage);
            byte[] call = new byte[5];
            ByteBuffer.wrap(call).order(ByteOrder.LITTLE_ENDIAN).put(0, (byte) 0xe8)
                    .putInt(1, (int) (newImage - (site + 5)));
            got.clear();
            fence.textPoked(site, call, 300, 300);
            assertTrue(got.stream().anyMatch(t -> t.address() == newImage && t.monotonicNs() == 300),
                    "the new image is read at its attach poke: " + got);
            got.clear();
            fence.kernelRangeGone("bpf_trampoline_6442451234", newImage);
            fence.textPoked(site, call, 400, 400);
            assertTrue(got.stream().noneMatch(t -> t.address() == newImage), "gone at its own unregister: " + got);
        }
    }
}

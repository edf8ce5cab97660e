package ptfence.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class TrampolineImagesTest {
    /**
     * Debian 6.12 in the guest: bpf_trampoline_6442495068 at 0xffffffffc0021080, a 304-byte image (its FREE image's
     * size) whose KSYMBOL announced 4096: zeros up to +0x130, int3 fill to the chunk boundary at +0x140, the next
     * trampoline's code from there (push rbp; mov rbp,rsp; sub rsp,0x40 ...).
     */
    @Test
    void anImageInThePackEndsWhereTheInt3FillReachingAChunkBoundaryBegins() {
        long at = 0xffffffffc0021080L;
        byte[] page = new byte[4096];
        byte[] code = {0x55, 0x48, (byte) 0x89, (byte) 0xe5, 0x48, (byte) 0x83, (byte) 0xec, 0x40};
        System.arraycopy(code, 0, page, 0, code.length);
        for (int i = 8; i < 0x100; i++) page[i] = (byte) (0x31 + i % 11); // the image's code (no 0xcc)
        Arrays.fill(page, 0x130, 0x140, (byte) 0xcc);
        System.arraycopy(code, 0, page, 0x140, code.length);
        for (int i = 0x148; i < page.length; i++) page[i] = (byte) (0x31 + i % 13);
        assertEquals(0x130, TrampolineImages.length(at, page));
        // 296 bytes (bpf_trampoline_6442494879 at 0xffffffffc00211c0): fill from +0x128 on, no neighbour after
        byte[] alone = page.clone();
        Arrays.fill(alone, 0x128, alone.length, (byte) 0xcc);
        assertEquals(0x128, TrampolineImages.length(0xffffffffc00211c0L, alone));
    }

    @Test
    void aPageOfItsOwnOrAnImageNotWrittenYet() {
        byte[] own = new byte[4096]; // 6.1: the image at the start of a page of its own, no fill after it
        for (int i = 0; i < 0x90; i++) own[i] = (byte) (0x41 + i % 7);
        assertEquals(4096, TrampolineImages.length(0xffffffffc0222000L, own));
        byte[] unwritten = new byte[4096];
        Arrays.fill(unwritten, (byte) 0xcc);
        assertEquals(64, TrampolineImages.length(0xffffffffc0021080L, unwritten));
        // an int3 inside the code at a chunk's end, after code (not zeros or a ret): not the end
        byte[] inner = own.clone();
        inner[0x3f] = (byte) 0xcc;
        assertEquals(4096, TrampolineImages.length(0xffffffffc0222000L, inner));
    }
}

package ptfence.fence;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.bpf.Btf;
import ptfence.bpf.ProgInfo;
import ptfence.bpf.TestPrograms;
import ptfence.cli.BadInputException;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class KernelMemoryTest {

    /** Writes an ELF64 ET_CORE like fs/proc/kcore.c: PT_NOTE first, then PT_LOADs at kernel addresses. */
    static void writeKcore(Path file, long[][] loads, byte[][] contents) throws IOException {
        int phnum = loads.length + 1;
        ByteBuffer h = ByteBuffer.allocate(64 + 56 * phnum).order(ByteOrder.LITTLE_ENDIAN);
        h.putInt(0x464c457f).put((byte) 2).put((byte) 1).put((byte) 1);
        h.position(16);
        h.putShort((short) 4).putShort((short) 62).putInt(1).putLong(0).putLong(64).putLong(0).putInt(0)
                .putShort((short) 64).putShort((short) 56).putShort((short) phnum).putShort((short) 64)
                .putShort((short) 0).putShort((short) 0);
        h.putInt(4).putInt(0).putLong(0).putLong(0).putLong(0).putLong(0).putLong(0).putLong(4); // PT_NOTE, empty
        for (long[] l : loads) { // {vaddr, offset, filesz, memsz}
            h.putInt(1).putInt(7).putLong(l[1]).putLong(l[0]).putLong(-1).putLong(l[2]).putLong(l[3]).putLong(4096);
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ch.write(h.flip(), 0);
            for (int i = 0; i < loads.length; i++) ch.write(ByteBuffer.wrap(contents[i]), loads[i][1]);
        }
    }

    @Test
    void kcoreReadsSegmentsAcrossBoundariesAndZeroFillsPastFileSize(@TempDir Path dir) throws Exception {
        Random rnd = new Random(7);
        byte[] text = new byte[8192], vmalloc = new byte[4096];
        rnd.nextBytes(text);
        rnd.nextBytes(vmalloc);
        long textAt = 0xffffffff81000000L, vmAt = textAt + 8192; // adjacent: a read may span both
        Path kcore = dir.resolve("kcore");
        writeKcore(kcore, new long[][] {{textAt, 1 << 20, 8192, 8192}, {vmAt, 3 << 20, 4096, 3 * 4096}},
                new byte[][] {text, vmalloc});
        try (KcoreReader r = KcoreReader.open(kcore)) {
            assertEquals(2, r.segments().size());
            assertArrayEquals(Arrays.copyOfRange(text, 100, 300), r.read(textAt + 100, 200));
            byte[] span = r.read(vmAt - 16, 32);
            assertArrayEquals(Arrays.copyOfRange(text, 8192 - 16, 8192), Arrays.copyOfRange(span, 0, 16));
            assertArrayEquals(Arrays.copyOfRange(vmalloc, 0, 16), Arrays.copyOfRange(span, 16, 32));
            assertArrayEquals(new byte[64], r.read(vmAt + 5000, 64), "a hole past p_filesz reads as zeros");
            IOException e = assertThrows(IOException.class, () -> r.read(0xffff888000000000L, 8));
            assertTrue(e.getMessage().contains("0xffff888000000000"), e.getMessage());
            assertEquals("kcore " + kcore, r.backend());
        }
    }

    @Test
    void kcoreRejectsOtherFiles(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("notelf");
        Files.write(f, new byte[128]);
        BadInputException e = assertThrows(BadInputException.class, () -> KcoreReader.open(f));
        assertTrue(e.getMessage().contains("not an ELF"), e.getMessage());
    }

    @Test
    void bpfReadProgramReturnsTheLiveJitImage() throws Exception {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
        KernelLayout layout = KernelLayout.from(Btf.vmlinux());
        try (BpfPeekReader peek = BpfPeekReader.open(layout);
             BpfFd fd = Bpf.get().progLoad(TestPrograms.withSubprograms("km_sub", 2, 3))) {
            ProgInfo info = ProgInfo.fetch(fd);
            for (int i = 0; i < info.functionCount(); i++) {
                assertArrayEquals(info.functionImage(i), peek.read(info.jitedKsyms()[i], info.jitedFuncLens()[i]),
                        "function " + i);
            }
            IOException e = assertThrows(IOException.class, () -> peek.read(0x1000, 16));
            assertTrue(e.getMessage().contains("0x1000+16"), e.getMessage());
        }
    }
}

package ptfence.bpf;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import ptfence.sys.Bpf;
import ptfence.sys.BpfException;
import ptfence.sys.BpfFd;

import java.security.MessageDigest;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The facade, the assembler and the two-call info fetch, checked against the kernel's own answers. */
class ProgInfoTest {
    @BeforeAll
    static void root() {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to load BPF programs");
    }

    @Test
    void kernelTranslatesOurInstructionsUnchangedAndTagsThem() throws Exception {
        Bpf.ProgLoad p = TestPrograms.constant("pi_const", 42);
        try (BpfFd fd = Bpf.get().progLoad(p)) {
            ProgInfo info = ProgInfo.fetch(fd);
            assertEquals("pi_const", info.name());
            assertEquals(Bpf.PROG_TYPE_SOCKET_FILTER, info.type());
            assertArrayEquals(p.insns(), info.xlatedInsns(), "xlated = what the assembler emitted");
            assertEquals(1, info.functionCount());
            assertEquals(info.jitedInsns().length, info.jitedFuncLens()[0]);
            // 6.18: tag = first 8 bytes of SHA-256 of the submitted instructions (SHA-1 before).
            long sha256 = java.nio.ByteBuffer.wrap(MessageDigest.getInstance("SHA-256").digest(p.insns())).getLong();
            long sha1 = java.nio.ByteBuffer.wrap(MessageDigest.getInstance("SHA-1").digest(p.insns())).getLong();
            assertTrue(info.tag() == sha256 || info.tag() == sha1, info.tagHex());
            Kallsyms k = Kallsyms.read();
            assertEquals("bpf_prog_" + info.tagHex() + "_pi_const",
                    k.at(info.jitedKsyms()[0]).get(0).name());
        }
    }

    @Test
    void multiFunctionProgramsListEveryFunction() throws Exception {
        try (BpfFd fd = Bpf.get().progLoad(TestPrograms.withSubprograms("pi_sub", 3, 7))) {
            ProgInfo info = ProgInfo.fetch(fd);
            assertEquals(4, info.functionCount());
            assertEquals(4, info.jitedFuncLens().length);
            assertEquals(info.jitedInsns().length, Arrays.stream(info.jitedFuncLens()).sum());
            Kallsyms k = Kallsyms.read();
            assertEquals("bpf_prog_" + info.tagHex() + "_pi_sub", k.at(info.jitedKsyms()[0]).get(0).name());
            for (int i = 1; i < 4; i++) {
                assertEquals("bpf_prog_" + ProgInfo.tagHex(info.progTags()[i]) + "_F",
                        k.at(info.jitedKsyms()[i]).get(0).name());
            }
        }
    }

    @Test
    void refusedProgramCarriesTheVerifierLog() {
        Bpf.ProgLoad bad = new Bpf.ProgLoad(Bpf.PROG_TYPE_SOCKET_FILTER,
                new BpfAssembler().exit().assemble(), "pi_bad"); // r0 never set
        BpfException e = assertThrows(BpfException.class, () -> Bpf.get().progLoad(bad));
        assertTrue(e.getMessage().startsWith("bpf(BPF_PROG_LOAD, pi_bad, 1 insns): EACCES"), e.getMessage());
        assertTrue(e.verifierLog().contains("R0 !read_ok"), e.verifierLog());
    }
}

package ptfence.bpf;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static ptfence.bpf.BpfAssembler.Reg.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import ptfence.func.FuncSummary;
import ptfence.image.Section;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

/**
 * FuncSummary's linear decode of real JIT output, against binutils: the conditional branches it finds (and their
 * targets) are exactly the ones objdump disassembles from the same bytes, and its blocks tile every JITed byte.
 */
class FuncSummaryJitTest {
    private static final Pattern COND = Pattern.compile("^\\s*([0-9a-f]+):\\t[0-9a-f ]+\\t(j[a-z]+)\\s+0x([0-9a-f]+)");
    private static final int HELPER_GET_PRANDOM_U32 = 7;

    @Test
    void conditionalBranchesAndBlocksOfAJitedProgramMatchObjdump() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to load BPF programs");
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/objdump")), "needs binutils' objdump as the reference");
        BpfAssembler a = new BpfAssembler();
        a.call(HELPER_GET_PRANDOM_U32).mov(R6, R0)
                .jumpIf(BpfAssembler.Cond.GT, R6, 100, "big")
                .jumpIf(BpfAssembler.Cond.EQ, R6, 7, "seven")
                .mov(R1, R6).callLocal("sub").exit()
                .label("seven").mov(R0, 7).exit()
                .label("big").mov(R0, 0).exit()
                .label("sub").mov(R0, R1).jumpIf(BpfAssembler.Cond.SGT, R0, 3, "out").add(R0, 5).label("out").exit();
        ProgInfo info;
        try (BpfFd prog = Bpf.get().progLoad(new Bpf.ProgLoad(Bpf.PROG_TYPE_SOCKET_FILTER, a.assemble(), "jitblocks"))) {
            info = ProgInfo.fetch(prog);
        }
        assertEquals(2, info.functionCount());
        List<Section> code = new ArrayList<>();
        Map<Long, Long> reference = new TreeMap<>(Long::compareUnsigned);
        for (int f = 0; f < info.functionCount(); f++) {
            byte[] image = info.functionImage(f);
            long at = info.jitedKsyms()[f];
            code.add(Section.of("f" + f, at, image));
            reference.putAll(objdumpConditionals(image, at));
        }
        assertTrue(reference.size() >= 3, "the program's three conditional jumps are in the JIT code: " + reference);

        FuncSummary s = FuncSummary.of("jitblocks", List.of(), code, 5);
        Map<Long, Long> found = new TreeMap<>(Long::compareUnsigned);
        for (FuncSummary.Branch b : s.branches()) {
            found.put(b.address(), b.target());
            assertEquals(0, b.taken() + b.notTaken());
        }
        assertEquals(reference, found);
        long total = 0;
        for (int len : info.jitedFuncLens()) total += len;
        assertEquals(total, s.bytesTotal(), "blocks tile every JITed byte");
        for (int i = 1; i < s.blocks().size(); i++) {
            FuncSummary.Block prev = s.blocks().get(i - 1), b = s.blocks().get(i);
            assertTrue(Long.compareUnsigned(prev.end(), b.start()) <= 0, "blocks do not overlap");
        }
        // Every branch target inside the code starts a block.
        for (long target : reference.values()) {
            boolean inCode = code.stream().anyMatch(c -> Long.compareUnsigned(target - c.address(), c.size()) < 0);
            if (inCode) {
                assertTrue(s.blocks().stream().anyMatch(b -> b.start() == target),
                        "a block starts at 0x" + Long.toHexString(target));
            }
        }
    }

    private static Map<Long, Long> objdumpConditionals(byte[] image, long address) throws Exception {
        Path bin = Files.createTempFile("jit", ".bin");
        try {
            Files.write(bin, image);
            Process p = new ProcessBuilder("objdump", "-D", "-b", "binary", "-mi386:x86-64",
                    "--adjust-vma=0x" + Long.toHexString(address), bin.toString()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), out);
            Map<Long, Long> m = new TreeMap<>(Long::compareUnsigned);
            for (String line : out.split("\n")) {
                Matcher x = COND.matcher(line);
                if (x.find() && !x.group(2).equals("jmp")) {
                    m.put(Long.parseUnsignedLong(x.group(1), 16), Long.parseUnsignedLong(x.group(3), 16));
                }
            }
            return m;
        } finally {
            Files.delete(bin);
        }
    }
}

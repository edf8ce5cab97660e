package ptfence.bpf;

import org.junit.jupiter.api.Test;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** A program with its own BTF and func_info: kallsyms names its functions by their BTF names. */
class BtfNamedProgramTest {

    @Test
    void ksymNamesFollowTheKernelsRuleWithAndWithoutBtf() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to load BPF programs");
        Bpf.ProgLoad plainLoad = TestPrograms.withSubprograms("plainnames", 2, 9);
        try (BpfFd named = loadNamedAlive("btfnames", 2); BpfFd plain = Bpf.get().progLoad(plainLoad)) {
            Kallsyms k = Kallsyms.read();
            for (BpfFd fd : List.of(named, plain)) {
                ProgramMetadata m = ProgramMetadata.fetch(fd);
                List<String> names = m.ksymNames();
                for (int i = 0; i < m.info().functionCount(); i++) {
                    String kernel = k.at(m.info().jitedKsyms()[i]).get(0).name();
                    assertEquals(kernel, names.get(i), "function " + i);
                }
                if (fd == named) {
                    assertTrue(names.get(0).endsWith("_btfmain"), names.toString());
                    assertTrue(names.get(2).endsWith("_btfsub1"), names.toString());
                    assertTrue(m.toPerfBtf().isPresent());
                    assertEquals(m.info().btfId(), m.toPerfBtf().orElseThrow().btfId());
                } else {
                    assertTrue(names.get(0).endsWith("_plainnames") && names.get(1).endsWith("_F"), names.toString());
                    assertTrue(m.toPerfBtf().isEmpty());
                }
            }
        }
    }

    /**
     * withSubprograms' program with BTF: FUNCs btfmain, btfsub0.. (int f(int x), static), func_info at each
     * function's first instruction (main is 3 + 3n instructions, each subprogram 5). The program holds the BTF.
     */
    static BpfFd loadNamedAlive(String progName, int subprogs) throws Exception {
        BtfWriter w = new BtfWriter();
        List<String> names = new ArrayList<>(List.of("btfmain"));
        for (int i = 0; i < subprogs; i++) names.add("btfsub" + i);
        List<Integer> funcs = java.util.Arrays.stream(w.intFunctions(names.toArray(String[]::new))).boxed().toList();
        ByteBuffer fi = ByteBuffer.allocate(8 * funcs.size()).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < funcs.size(); i++) fi.putInt(i == 0 ? 0 : 3 + 3 * subprogs + 5 * (i - 1)).putInt(funcs.get(i));
        Bpf.ProgLoad plain = TestPrograms.withSubprograms(progName, subprogs, 9);
        try (BpfFd btf = Bpf.get().btfLoad(w.bytes())) {
            return Bpf.get().progLoad(new Bpf.ProgLoad(plain.progType(), plain.insns(), "GPL", progName, 0, 0,
                    btf, fi.array()));
        }
    }
}

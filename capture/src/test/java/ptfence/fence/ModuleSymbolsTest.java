package ptfence.fence;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The module fence's symbols: each module's kallsyms lines, from one read per batch of texts. Before, a read per
 * text (core and init apart) put the consumer ~10 min behind a 5-min module churn in the 6.12 guest, and the texts
 * still in the ring at ptrec's end were never delivered.
 */
class ModuleSymbolsTest {
    private static final List<String> KALLSYMS = List.of(
            "ffffffff81000000 T _stext",
            "ffffffff81000010 t dummy_like_core_symbol",
            "ffffffffc0a00000 t dummy_xmit\t[dummy]",
            "ffffffffc0a00040 t dummy_setup\t[dummy]",
            "ffffffffc0b00000 t veth_xmit\t[veth]",
            "ffffffffc0c00000 t dummy2_probe\t[dummy2]",
            "ffffffffc0d00000 t bpf_prog_6deef7357e7b4530_x\t[bpf]");

    private static String text(byte[] b) { return new String(b, StandardCharsets.UTF_8); }

    @Test
    void oneReadServesABatchOfTextsAndEachGetsItsModulesLinesOnly() {
        List<String> lines = new ArrayList<>(KALLSYMS);
        ModuleSymbols s = new ModuleSymbols(() -> new ArrayList<>(lines).stream());
        s.nextBatch();
        assertEquals("ffffffffc0a00000 t dummy_xmit\t[dummy]\nffffffffc0a00040 t dummy_setup\t[dummy]\n",
                text(s.of("dummy")));
        assertEquals("ffffffffc0b00000 t veth_xmit\t[veth]\n", text(s.of("veth")));
        assertEquals("ffffffffc0c00000 t dummy2_probe\t[dummy2]\n", text(s.of("dummy2")));
        assertEquals(0, s.of("nbd").length, "a module gone before its text was taken has none");
        for (int i = 0; i < 100; i++) s.of(i % 2 == 0 ? "dummy" : "veth"); // core and init of 50 loads
        assertEquals(1, s.reads(), "one read of kallsyms for the whole batch");
        // the next batch asks the kernel again: a module loaded since is there
        lines.add("ffffffffc0e00000 t nbd_open\t[nbd]");
        assertEquals(0, s.of("nbd").length, "still the same batch");
        s.nextBatch();
        assertEquals("ffffffffc0e00000 t nbd_open\t[nbd]\n", text(s.of("nbd")));
        assertEquals(2, s.reads());
        s.nextBatch();
        s.nextBatch();
        assertEquals(2, s.reads(), "a batch without module texts reads nothing");
    }

    @Test
    void aFailedReadGivesNoLinesAndTheNextBatchTriesAgain() {
        boolean[] fail = {true};
        ModuleSymbols s = new ModuleSymbols(() -> {
            if (fail[0]) throw new java.io.IOException("kallsyms unreadable");
            return KALLSYMS.stream();
        });
        assertEquals(0, s.of("dummy").length);
        fail[0] = false;
        s.nextBatch();
        assertTrue(text(s.of("dummy")).contains("dummy_xmit"));
    }
}

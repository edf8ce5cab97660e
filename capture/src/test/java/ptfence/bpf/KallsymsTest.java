package ptfence.bpf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The by-address lookup against a plain scan of the same lines (file order kept among equal addresses). */
class KallsymsTest {
    @Test
    void symbolsAtAnAddressAreThoseOfTheFileInItsOrder(@TempDir Path dir) throws IOException {
        Path f = dir.resolve("kallsyms");
        Files.writeString(f, String.join("\n",
                "ffffffffc0001000 t bpf_prog_aa_second\t[bpf]",
                "ffffffff81000000 T _stext",
                "ffffffffc0001000 t bpf_prog_aa_first\t[bpf]",
                "ffffffff81000000 T startup_64",
                "ffffffffa0000000 t mod_fn\t[kvm]",
                "0000000000000000 A fixed_percpu_data",
                "ffffffff81e00000 T _etext") + "\n");
        Kallsyms k = Kallsyms.read(f);
        assertEquals(List.of("bpf_prog_aa_second", "bpf_prog_aa_first"), names(k.at(0xffffffffc0001000L)));
        assertEquals(List.of("_stext", "startup_64"), names(k.at(0xffffffff81000000L)));
        assertEquals(List.of("mod_fn"), names(k.at(0xffffffffa0000000L)));
        assertEquals("kvm", k.at(0xffffffffa0000000L).get(0).module());
        assertEquals(List.of("fixed_percpu_data"), names(k.at(0)));
        assertEquals(List.of(), k.at(0xffffffff81000001L));
        assertEquals(List.of(), k.at(0xffffffffffffffffL));
        assertEquals(0xffffffff81e00000L, k.require("_etext"));
        assertEquals(7, k.symbols().size());
    }

    @Test
    void theRunningKernelsLookupMatchesAScan() throws IOException {
        Kallsyms k;
        try {
            k = Kallsyms.read();
        } catch (IOException | RuntimeException e) {
            org.junit.jupiter.api.Assumptions.abort("no readable /proc/kallsyms: " + e.getMessage());
            return;
        }
        List<Kallsyms.Symbol> all = k.symbols();
        assertTrue(all.size() > 1000, "a kernel has more symbols");
        for (int i = 0; i < all.size(); i += all.size() / 500) {
            long a = all.get(i).address();
            List<Kallsyms.Symbol> scan = all.stream().filter(s -> s.address() == a).toList();
            assertEquals(scan, k.at(a), "at 0x" + Long.toHexString(a));
        }
    }

    private static List<String> names(List<Kallsyms.Symbol> s) {
        return s.stream().map(Kallsyms.Symbol::name).toList();
    }
}

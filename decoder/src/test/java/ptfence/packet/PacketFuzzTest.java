package ptfence.packet;

import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** 200k mutants of the libipt corpus traces through the packet layer; see {@link PacketFuzz}. */
class PacketFuzzTest {
    @Test
    void twoHundredThousandMutantsDecodeWithoutCrashOrHang() throws Exception {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path corpus = Path.of(shared, "corpus", "libipt");
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(corpus), "no libipt corpus at " + corpus);
        List<byte[]> seeds = PacketFuzz.corpusTraces(corpus);
        assertTrue(seeds.size() >= 242, "corpus traces: " + seeds.size());
        PacketFuzz fuzz = new PacketFuzz(seeds, 20261122L);
        assertTimeoutPreemptively(Duration.ofSeconds(120), () -> fuzz.run(200_000));
        System.out.println("packet fuzz: " + fuzz.mutants() + " mutants, " + fuzz.packets() + " packets, "
                + fuzz.errors() + " decode errors");
        assertTrue(fuzz.errors() > 1000, "mutations should produce decode errors: " + fuzz.errors());
    }
}

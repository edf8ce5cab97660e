package ptfence.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The archive's byte[] proxy under collections forced without pause, in a child JVM: every value read back equals
 * the one put, and the JVM survives. (lmdbjava's ByteArrayProxy lets jnr free a key or value during the native call;
 * it crashed a put into a new archive and a reader in ConcurrencyTest here, SIGSEGV in memmove, but not on demand.)
 */
class ProxyStressTest {
    @TempDir
    Path tmp;

    @Test
    void pinnedProxyRoundTripsUnderConstantCollections() throws Exception {
        ChildJvm.Result r = ChildJvm.run(tmp, Duration.ofSeconds(60), Map.of(), ProxyStress.class.getName(), "pinned",
                tmp.resolve("env").toString(), "5");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().startsWith("OK "), r.toString());
        assertEquals(List.of(), ChildJvm.crashFiles(tmp));
    }
}

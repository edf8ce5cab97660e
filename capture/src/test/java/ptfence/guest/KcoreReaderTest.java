package ptfence.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The guest churns' independent /proc/kcore reader (kcore-read.py) settles its reads: a read that caught a
 * text_poke_bp() half done (the INT3 over a call's first byte, the tail new) is read again until two reads agree. In
 * the 6.1 guest a kretprobe lane's kcore copy of the ftrace trampoline it shared with another lane's kretprobe held
 * 0xcc at +0x7e, the ftrace_ops call the other lane's register was re-poking; the archive had the finished call
 * (the TEXT_POKE's bytes) and was right. The reader's self-test forges a core in that state and finishes the poke
 * between its reads.
 */
class KcoreReaderTest {
    @Test
    void aReadThatCatchesAPokeHalfDoneIsReadAgain() throws Exception {
        Path script = Path.of(KcoreReaderTest.class.getResource("/ptfence/guest/kcore-read.py").toURI());
        Process p;
        try {
            p = new ProcessBuilder("python3", script.toString(), "--self-test").redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            assumeTrue(false, "no python3: " + e.getMessage());
            return;
        }
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the self-test ends");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        assertEquals("ok", out.strip());
    }
}

package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import ptfence.image.Image;
import ptfence.image.Section;
import ptfence.insn.CodeCache;
import ptfence.packet.Errata;

/**
 * Damaged traces must never crash or hang the decoder: every corpus trace, with random bytes flipped,
 * inserted and cut, decodes to errors and resynchronization, and terminates.
 */
class CorruptTraceTest {
    static final class Counting implements FlowSink {
        long insns;
        long events;
        long errors;

        @Override
        public void insn(long ip, int size, int cls, int mode, boolean speculative) {
            insns++;
        }

        @Override
        public void block(long ip, int count, CodeCache code, int off, int mode, boolean speculative) {
            insns += count;
        }

        @Override
        public void event(Event ev) {
            events++;
        }

        @Override
        public void error(String kind, int code, long offset, long ip) {
            errors++;
        }

        @Override
        public void endOfTrace() {
        }
    }

    @Test
    void damagedCorpusTracesTerminateWithoutExceptions() throws IOException {
        Path dir = PtxedCorpusTest.corpus();
        Random rnd = new Random(42);
        List<Path> cases;
        try (Stream<Path> s = Files.list(dir)) {
            cases = s.filter(Files::isDirectory).sorted().toList();
        }
        int runs = 0;
        for (Path c : cases) {
            String name = c.getFileName().toString();
            Path pt = c.resolve(name + ".pt");
            Path bin = c.resolve(name + ".bin");
            if (!Files.exists(pt) || !Files.exists(bin) || Files.size(bin) > 16384) {
                continue; // the 100 KB straight-line cases add time, not coverage
            }
            byte[] trace = Files.readAllBytes(pt);
            byte[] code = Files.readAllBytes(bin);
            String imageLine = Files.readAllLines(c.resolve("image.txt")).get(1);
            long load = Long.decode(imageLine.replaceAll(".*loaded at (0x[0-9a-fA-F]+).*", "$1"));
            for (int i = 0; i < 4; i++) {
                byte[] bad = mutate(trace, rnd);
                for (boolean block : new boolean[] {false, true}) {
                    FlowConfig cfg = new FlowConfig();
                    cfg.setCpu("6/85");
                    cfg.resyncOnError = i == 1;
                    cfg.resyncAtIp = i == 3; // perf's recovery
                    Image image = new Image().add(Section.of(name, load, code));
                    Counting sink = new Counting();
                    FlowDecoder d = new FlowDecoder(image, cfg, CursorInput.of(ByteBuffer.wrap(bad), Errata.NONE), sink, block);
                    try {
                        d.run();
                    } catch (RuntimeException e) {
                        fail(name + " mutation " + i + (block ? " block" : " insn") + ": " + e, e);
                    }
                    assertTrue(sink.insns + sink.events + sink.errors < 1_000_000, name + ": runaway output");
                    runs++;
                }
            }
        }
        assertTrue(runs > 1500, "runs " + runs);
    }

    private static byte[] mutate(byte[] t, Random rnd) {
        byte[] b = t.clone();
        switch (rnd.nextInt(3)) {
            case 0 -> {
                for (int k = 0; k < 1 + rnd.nextInt(4); k++) {
                    b[rnd.nextInt(b.length)] ^= (byte) (1 << rnd.nextInt(8));
                }
            }
            case 1 -> {
                int at = rnd.nextInt(b.length);
                byte[] c = new byte[b.length + 3];
                System.arraycopy(b, 0, c, 0, at);
                c[at] = (byte) rnd.nextInt();
                c[at + 1] = (byte) rnd.nextInt();
                c[at + 2] = (byte) rnd.nextInt();
                System.arraycopy(b, at, c, at + 3, b.length - at);
                b = c;
            }
            default -> b = java.util.Arrays.copyOf(b, Math.max(1, rnd.nextInt(b.length)));
        }
        return b;
    }
}

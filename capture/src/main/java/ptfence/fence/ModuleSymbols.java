package ptfence.fence;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The module fence's kallsyms lines per module, read at most once per batch of texts its consumer takes from the
 * ring. A read of /proc/kallsyms is the kernel formatting every symbol: 5.5-8.5 s on 6.12 in the guest under TCG.
 * Read for each text, core and init apart, it held the consumer's one thread for ~10 min over issue 29's 104 module
 * texts, far behind a churn of ~5 min; at ptrec's end the texts still in the ring were never delivered (6.12: "module
 * text: 77 loads" of 104, with losses=0). One read now serves every text of the batch, however many came in.
 */
final class ModuleSymbols {
    /** Where the lines come from (/proc/kallsyms; a test's list). */
    interface Source {
        Stream<String> lines() throws IOException;
    }

    private final Source source;
    /** The lines of the current batch's read, by module; null until a text of the batch asks. */
    private Map<String, StringBuilder> batch;
    private long reads;

    ModuleSymbols(Source source) {
        this.source = source;
    }

    /** A new batch: the next text asks the kernel again (modules come and go between batches). */
    void nextBatch() {
        batch = null;
    }

    /** The module's kallsyms lines as of this batch's read (empty if it is gone, or the read failed). */
    byte[] of(String module) {
        if (batch == null) batch = read();
        StringBuilder b = batch.get(module);
        return b == null ? new byte[0] : b.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** How many times the source was read. */
    long reads() {
        return reads;
    }

    private Map<String, StringBuilder> read() {
        reads++;
        Map<String, StringBuilder> byModule = new HashMap<>();
        try (Stream<String> lines = source.lines()) {
            lines.forEach(l -> {
                // "address type name\t[module]" (module symbols only; vmlinux lines have no tab)
                int tab = l.lastIndexOf('\t');
                if (tab < 0 || !l.endsWith("]") || l.charAt(tab + 1) != '[') return;
                String module = l.substring(tab + 2, l.length() - 1);
                byModule.computeIfAbsent(module, m -> new StringBuilder()).append(l).append('\n');
            });
        } catch (IOException | UncheckedIOException e) {
            return new HashMap<>(); // counted as symbols missing by the caller
        }
        return byModule;
    }
}

package ptfence.fence;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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

    /**
     * The kallsyms lines of a module's core symbol table as the module fence copies it from {@code
     * module.core_kallsyms} at load ({@link ModulePrograms}): {@code n} Elf64_Sym (st_name u32 @0, st_value u64 @8,
     * 24 bytes each), then the string table, then n type chars, back to back. The lines are what /proc/kallsyms
     * prints for them ({@code "%016x %c %s\t[module]"}, symbols without a name left out), except that the type's case
     * is the symbol's binding (the kernel's typetab), where /proc/kallsyms upper-cases exported ones only.
     *
     * @throws IllegalArgumentException where the blob cannot hold {@code n} symbols and their tables
     */
    static byte[] fromTable(byte[] blob, int n, String module) {
        int strtab = Math.multiplyExact(n, ModulePrograms.ELF64_SYM), typetab = blob.length - n;
        if (n <= 0 || typetab < strtab) {
            throw new IllegalArgumentException("symbol table of " + n + " symbols in " + blob.length + " bytes");
        }
        ByteBuffer b = ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN);
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < n; i++) {
            long nameAt = strtab + Integer.toUnsignedLong(b.getInt(i * ModulePrograms.ELF64_SYM));
            if (nameAt >= typetab) throw new IllegalArgumentException("symbol " + i + "'s name past the strtab");
            int end = (int) nameAt;
            while (end < typetab && blob[end] != 0) end++;
            if (end == nameAt) continue; // the null symbol, and others the kernel does not print
            String name = new String(blob, (int) nameAt, end - (int) nameAt, StandardCharsets.ISO_8859_1);
            out.append(String.format("%016x %c %s\t[%s]\n", b.getLong(i * ModulePrograms.ELF64_SYM + 8),
                    (char) (blob[typetab + i] & 0xff), name, module));
        }
        return out.toString().getBytes(StandardCharsets.ISO_8859_1);
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

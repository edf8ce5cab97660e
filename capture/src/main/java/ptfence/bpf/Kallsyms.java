package ptfence.bpf;

import ptfence.cli.BadInputException;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/** A snapshot of /proc/kallsyms: address by name and name by address (needs root and kptr_restrict 0 or 1). */
public final class Kallsyms {
    public static final Path PROC = Path.of("/proc/kallsyms");

    public record Symbol(long address, char type, String name, String module) {}

    private final Map<String, Symbol> byName;
    // by address: a stable sort of the symbols and their addresses (a map of boxed addresses to lists cost most of
    // a read: ~100k entries, each its own list)
    private final Symbol[] byAddress;
    private final long[] addresses;
    private final List<Symbol> all;

    private Kallsyms(List<Symbol> symbols) {
        this.all = Collections.unmodifiableList(symbols);
        byName = new HashMap<>(symbols.size() * 4 / 3 + 1);
        for (Symbol s : symbols) byName.putIfAbsent(s.name(), s);
        byAddress = symbols.toArray(new Symbol[0]);
        Arrays.sort(byAddress, (a, b) -> Long.compareUnsigned(a.address(), b.address())); // stable: file order kept
        addresses = new long[byAddress.length];
        for (int i = 0; i < byAddress.length; i++) addresses[i] = byAddress[i].address();
    }

    public static Kallsyms read() throws IOException {
        return read(PROC);
    }

    public static Kallsyms read(Path file) throws IOException {
        List<Symbol> out = new ArrayList<>(300_000);
        boolean anyNonZero = false;
        try (BufferedReader r = Files.newBufferedReader(file)) {
            String line;
            int n = 0;
            while ((line = r.readLine()) != null) {
                n++;
                int s1 = line.indexOf(' '), s2 = line.indexOf(' ', s1 + 1);
                if (s1 <= 0 || s2 < 0) throw new BadInputException(file + ":" + n + ": not a kallsyms line");
                long addr = Long.parseUnsignedLong(line, 0, s1, 16);
                anyNonZero |= addr != 0;
                int tab = line.indexOf('\t', s2 + 1);
                String name = tab < 0 ? line.substring(s2 + 1) : line.substring(s2 + 1, tab);
                String module = "";
                if (tab >= 0) {
                    module = line.substring(tab + 1).trim();
                    if (module.startsWith("[") && module.endsWith("]")) module = module.substring(1, module.length() - 1);
                }
                out.add(new Symbol(addr, line.charAt(s1 + 1), name, module));
            }
        }
        if (!anyNonZero && !out.isEmpty())
            throw new BadInputException(file + ": every address is 0 (run as root, kernel.kptr_restrict <= 1)");
        return new Kallsyms(out);
    }

    public OptionalLong address(String name) {
        Symbol s = byName.get(name);
        return s == null ? OptionalLong.empty() : OptionalLong.of(s.address());
    }

    public long require(String name) {
        return address(name).orElseThrow(() -> new BadInputException("/proc/kallsyms: no symbol " + name));
    }

    /** Symbols at exactly this address (a BPF program's ksym is unique there while it lives). */
    public List<Symbol> at(long address) {
        int lo = 0, hi = addresses.length; // the first index whose address is not below
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(addresses[mid], address) < 0) lo = mid + 1;
            else hi = mid;
        }
        int end = lo;
        while (end < addresses.length && addresses[end] == address) end++;
        return List.of(Arrays.copyOfRange(byAddress, lo, end));
    }

    public List<Symbol> symbols() { return all; }
}

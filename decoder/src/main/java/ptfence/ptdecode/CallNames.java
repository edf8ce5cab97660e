package ptfence.ptdecode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import ptfence.calls.Symbolizer;
import ptfence.image.ElfSegments;
import ptfence.image.Symbols;
import ptfence.sideband.CodeMap;
import ptfence.sideband.Sideband;

/**
 * Names for the call views from what the recording decode has: BPF programs and KSYMBOLs by time, the kernel's
 * symbols (--kallsyms, --vmlinux, --kcore), and the function symbols of the ELF files processes mapped (found as the
 * code map finds them). A stand-in behind {@link Symbolizer} until a full symbolizer replaces it.
 */
final class CallNames implements Symbolizer {
    private record Mapped(long start, long end, int pid, Symbols symbols) {
    }

    private final CodeMap code;
    private final Sideband sideband;
    private final List<Mapped> mapped = new ArrayList<>();
    private final Map<Long, String> cache = new HashMap<>();

    CallNames(CodeMap code, Sideband sideband) {
        this.code = code;
        this.sideband = sideband;
        Map<String, Symbols> byFile = new HashMap<>();
        for (Sideband.Mapping m : sideband.mappings()) {
            if (m.kernel() || m.file().startsWith("[") || m.file().startsWith("//")) {
                continue;
            }
            Path p = code.locate(m.file());
            if (p == null) {
                continue;
            }
            long base = isExecutable(p) ? 0 : m.address() - m.pgoff();
            Symbols s = byFile.computeIfAbsent(p + "@" + base, k -> {
                try {
                    return new Symbols().addElf(new ElfSegments(p, base));
                } catch (RuntimeException e) {
                    return new Symbols();
                }
            });
            if (!s.isEmpty()) {
                mapped.add(new Mapped(m.address(), m.address() + m.length(), m.pid(), s));
            }
        }
    }

    /** ET_EXEC: symbols are at their link addresses. */
    private static boolean isExecutable(Path p) {
        try (var in = Files.newInputStream(p)) {
            byte[] h = in.readNBytes(18);
            return h.length == 18 && (h[16] & 0xff) == 2 && h[17] == 0;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    @Override
    public String describe(long address, long time, int cpu) {
        if (address >= 0 && !mapped.isEmpty()) {
            Sideband.Task task = time >= 0 ? sideband.taskAt(cpu, time) : null;
            int pid = task == null ? -1 : task.pid();
            long key = (long) pid << 48 ^ address;
            String hit = cache.get(key);
            if (hit != null || cache.containsKey(key)) {
                return hit;
            }
            String s = null;
            for (Mapped m : mapped) {
                if (Long.compareUnsigned(address - m.start(), m.end() - m.start()) < 0
                        && (pid < 0 || m.pid() == pid)) {
                    s = m.symbols().describe(address);
                    if (s != null) {
                        break;
                    }
                }
            }
            if (cache.size() > 1 << 16) {
                cache.clear();
            }
            cache.put(key, s);
            if (s != null) {
                return s;
            }
        }
        String s = code.describe(address, time);
        // a code region's own name (a file, "kcore") is where the code is, not which function: perf prints hex
        var sec = s == null ? null : code.section(address, time < 0 ? Long.MIN_VALUE : time);
        return sec != null && s.startsWith(sec.name()) && code.symbols().describe(address) == null ? null : s;
    }
}

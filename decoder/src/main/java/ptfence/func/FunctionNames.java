package ptfence.func;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import ptfence.cli.BadInputException;
import ptfence.sideband.CodeMap;

/**
 * Resolves what a user types after --func to code: {@code bpf_prog_<tag>} or a unique prefix of the tag,
 * {@code bpf_prog_<tag>_<name>}, a BPF program's name, or a kernel/user symbol. Every instance of the program (it
 * may have been loaded several times) and every JITed function of it count.
 */
public final class FunctionNames {
    private static final Pattern TAG_ONLY = Pattern.compile("bpf_prog_([0-9a-fA-F]{1,16})");

    /** What a name resolved to: the programs (or symbols) and all their functions over time. */
    public record Target(String name, List<CodeMap.Program> programs, List<CodeMap.Function> functions) {
    }

    private FunctionNames() {
    }

    /** {@code symbols} names the user and kernel functions the recording's code holds. */
    public static Target resolve(String name, CodeMap code, ptfence.symbol.Symbolizer symbols, String where) {
        List<CodeMap.Program> all = code.programs();
        List<CodeMap.Program> found = new ArrayList<>();
        var m = TAG_ONLY.matcher(name);
        if (m.matches()) {
            String prefix = m.group(1).toLowerCase(Locale.ROOT);
            for (CodeMap.Program p : all) {
                if (p.bpf() && !p.tag().isEmpty() && p.tag().startsWith(prefix)) {
                    found.add(p);
                }
            }
            requireOneProgram(name, found, where);
        } else if (name.startsWith("bpf_prog_")) {
            for (CodeMap.Program p : all) {
                if (p.fullName().equals(name) || p.functions().stream().anyMatch(f -> f.name().equals(name))) {
                    found.add(p);
                }
            }
        } else {
            for (CodeMap.Program p : all) {
                if (p.bpf() && p.progName().equals(name)) {
                    found.add(p);
                }
            }
            if (!found.isEmpty()) {
                requireOneProgram(name, found, where);
            } else {
                for (CodeMap.Program p : all) {
                    if (p.fullName().equals(name)) {
                        found.add(p);
                    }
                }
                for (ptfence.symbol.Symbol sym : symbols.named(name)) {
                    found.add(new CodeMap.Program(name, "", name, 0, false, List.of(new CodeMap.Function(sym.start(),
                            sym.end() - sym.start(), name, sym.from(), sym.to()))));
                }
            }
        }
        if (found.isEmpty()) {
            throw new BadInputException("--func " + name + ": no BPF program or symbol of that name in " + where
                    + " (ptarchive ls lists archived programs)");
        }
        List<CodeMap.Function> fns = new ArrayList<>();
        for (CodeMap.Program p : found) {
            fns.addAll(p.functions());
        }
        return new Target(name, List.copyOf(found), List.copyOf(fns));
    }

    /** Instances of one program share a tag; different tags are different programs. */
    private static void requireOneProgram(String name, List<CodeMap.Program> found, String where) {
        Map<String, String> tags = new LinkedHashMap<>();
        for (CodeMap.Program p : found) {
            tags.putIfAbsent(p.tag().isEmpty() ? p.fullName() : p.tag(), p.fullName());
        }
        if (tags.size() > 1) {
            throw new BadInputException("--func " + name + ": ambiguous, matches " + tags.size() + " programs in "
                    + where + ": " + String.join(", ", tags.values()) + "; give more of the tag");
        }
    }
}

package ptfence.symbol;

/**
 * A function at [start, end) in the address space it ran in, from {@code dso} (the mapped file's name as the
 * recording gives it, {@code [kernel.kallsyms]}, or a BPF program's name); valid during perf time [from, to); its
 * binding as perf gives scripts (ELF STB_*).
 */
public record Symbol(String name, long start, long end, String dso, long from, long to, int binding) {
    /** A symbol perf binds as STB_GLOBAL (kallsyms' upper case, JIT maps); KSYMBOL's are 0, ELF's their own. */
    public Symbol(String name, long start, long end, String dso, long from, long to) {
        this(name, start, end, dso, from, to, 1);
    }

    public boolean covers(long address) {
        return Long.compareUnsigned(address - start, end - start) < 0;
    }

    /** "name" or "name+0xN", as perf and ptxed-style text print it. */
    public String describe(long address) {
        long off = address - start;
        return off == 0 ? name : name + "+0x" + Long.toHexString(off);
    }
}

package ptfence.symbol;

/** The source line ("file:line", the file's base name, as perf prints it) of the code at [start, end). */
public record SourceLine(String text, long start, long end) {
    public boolean covers(long address) {
        return Long.compareUnsigned(address - start, end - start) < 0;
    }
}

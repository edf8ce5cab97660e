package ptfence.symbol;

/**
 * The source line of the code at [start, end): {@code text} "file:line" with the file's base name, as perf prints it,
 * and {@code path} with the file's name as the line info records it (perf's --full-source-path).
 */
public record SourceLine(String text, long start, long end, String path) {
    /** A line whose file has no more name than its base. */
    public SourceLine(String text, long start, long end) {
        this(text, start, end, text);
    }

    public boolean covers(long address) {
        return Long.compareUnsigned(address - start, end - start) < 0;
    }
}

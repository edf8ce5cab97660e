package ptfence.jit;

import java.util.List;

/**
 * One record of a jitdump file (the format perf's {@code perf inject --jit} reads: a JIT's code per function with
 * its load time). Every record has an id, a size and a timestamp in the clock the header's flags name.
 */
public sealed interface JitRecord {
    int CODE_LOAD = 0, CODE_MOVE = 1, CODE_DEBUG_INFO = 2, CODE_CLOSE = 3, CODE_UNWINDING_INFO = 4;

    /** Where the record starts in the file (for messages). */
    long offset();

    long timestamp();

    /** A function's code written at {@code codeAddress} ({@code code} its bytes), named {@code name}. */
    record Load(long offset, long timestamp, int pid, int tid, long vma, long codeAddress, long codeIndex, String name,
            byte[] code) implements JitRecord {
    }

    /** Code {@code codeIndex} moved from {@code oldAddress} to {@code newAddress} (same bytes). */
    record Move(long offset, long timestamp, int pid, int tid, long vma, long oldAddress, long newAddress,
            long codeSize, long codeIndex) implements JitRecord {
    }

    /** A source line for code at {@code address}. */
    record LineEntry(long address, int line, int discriminator, String file) {
    }

    /** Source lines of the function at {@code codeAddress} (written before its load). */
    record DebugInfo(long offset, long timestamp, long codeAddress, List<LineEntry> entries) implements JitRecord {
    }

    /** The JIT closed the file. */
    record Close(long offset, long timestamp) implements JitRecord {
    }

    /** .eh_frame data for the next load ({@code mappedSize} bytes of it are mapped with the code). */
    record UnwindingInfo(long offset, long timestamp, long mappedSize, byte[] data, long ehFrameHeaderSize)
            implements JitRecord {
    }

    /** A record id this reader does not know: skipped by its size, as perf does. */
    record Other(long offset, long timestamp, int id, int size) implements JitRecord {
    }
}

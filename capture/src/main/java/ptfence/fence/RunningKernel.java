package ptfence.fence;

import java.io.IOException;
import java.nio.file.Path;

import ptfence.bpf.Btf;
import ptfence.bpf.Kallsyms;

/**
 * The running kernel's symbol table and type information, each read and parsed at most once per recording and
 * handed to every part that needs them (the text fence, the module fence, perf attachments, the core text copy).
 * Reading {@code /proc/kallsyms} (~300k lines) and parsing the vmlinux BTF take seconds on a loaded machine and
 * ten times more under emulation; each part reading its own made ptrec slow to start.
 *
 * <p>Each is read on first use (a recording that needs neither reads neither); the result, or the failure, is then
 * what every later caller sees. The symbols used through here are the boot's fixed ones (core text bounds, hook
 * targets, modules present at start); code that must see programs loaded since reads kallsyms afresh.
 */
public final class RunningKernel {
    private final ReadOnce<Kallsyms> kallsyms;
    private final ReadOnce<Btf> btf;

    private RunningKernel(Path kallsymsPath, Path btfPath) {
        this.kallsyms = new ReadOnce<>(() -> Kallsyms.read(kallsymsPath));
        this.btf = new ReadOnce<>(() -> Btf.read(btfPath));
    }

    /** This machine's kernel: /proc/kallsyms and /sys/kernel/btf/vmlinux, each read when first asked for. */
    public static RunningKernel current() {
        return new RunningKernel(Kallsyms.PROC, Btf.VMLINUX);
    }

    /** The kernel's symbols, read once; a failed read fails every caller the same way. */
    public Kallsyms kallsyms() throws IOException {
        return kallsyms.get();
    }

    /** The vmlinux BTF, parsed once; a failed read fails every caller the same way. */
    public Btf vmlinux() throws IOException {
        return btf.get();
    }

    private interface Reader<T> {
        T read() throws IOException;
    }

    /** A value read on first use; the value, or the read's failure, is what every later caller gets. */
    private static final class ReadOnce<T> {
        private final Reader<T> reader;
        private T value;
        private Exception failure;

        ReadOnce(Reader<T> reader) {
            this.reader = reader;
        }

        synchronized T get() throws IOException {
            if (value == null && failure == null) {
                try {
                    value = reader.read();
                } catch (IOException | RuntimeException e) {
                    failure = e;
                }
            }
            if (value != null) return value;
            if (failure instanceof IOException io) throw io;
            throw (RuntimeException) failure;
        }
    }
}

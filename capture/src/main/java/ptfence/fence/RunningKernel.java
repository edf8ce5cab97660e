package ptfence.fence;

import java.io.IOException;

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
    private final java.nio.file.Path kallsymsPath;
    private final java.nio.file.Path btfPath;
    private Kallsyms kallsyms;
    private Btf btf;
    private Exception kallsymsFailure;
    private Exception btfFailure;

    private RunningKernel(java.nio.file.Path kallsymsPath, java.nio.file.Path btfPath) {
        this.kallsymsPath = kallsymsPath;
        this.btfPath = btfPath;
    }

    /** This machine's kernel: /proc/kallsyms and /sys/kernel/btf/vmlinux, each read when first asked for. */
    public static RunningKernel current() {
        return new RunningKernel(Kallsyms.PROC, Btf.VMLINUX);
    }

    /** The kernel's symbols, read once; a failed read fails every caller the same way. */
    public synchronized Kallsyms kallsyms() throws IOException {
        if (kallsyms == null && kallsymsFailure == null) {
            try {
                kallsyms = Kallsyms.read(kallsymsPath);
            } catch (IOException | RuntimeException e) {
                kallsymsFailure = e;
            }
        }
        return kallsyms != null ? kallsyms : rethrow(kallsymsFailure);
    }

    /** The vmlinux BTF, parsed once; a failed read fails every caller the same way. */
    public synchronized Btf vmlinux() throws IOException {
        if (btf == null && btfFailure == null) {
            try {
                btf = Btf.read(btfPath);
            } catch (IOException | RuntimeException e) {
                btfFailure = e;
            }
        }
        return btf != null ? btf : rethrow(btfFailure);
    }

    private static <T> T rethrow(Exception e) throws IOException {
        if (e instanceof IOException io) throw io;
        throw (RuntimeException) e;
    }
}

package ptfence.fence;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads kernel virtual memory: out-of-line text (BPF dispatchers, trampolines, ftrace/kprobe pages) and the core
 * kernel text. Two backends: {@link KcoreReader} over /proc/kcore where it exists and is readable, otherwise
 * {@link BpfPeekReader}, a BPF program run on demand with bpf_probe_read_kernel.
 */
public interface KernelMemory extends AutoCloseable {
    Path PROC_KCORE = Path.of("/proc/kcore");

    /** Exactly {@code length} bytes at {@code address}; an IOException names the range when it is not readable. */
    byte[] read(long address, int length) throws IOException;

    /** "kcore /proc/kcore" or "bpf read program": what the summary prints. */
    String backend();

    @Override
    void close();

    /** kcore when it can be opened, else the BPF read program. */
    static KernelMemory open(KernelLayout layout) throws IOException {
        if (Files.isReadable(PROC_KCORE)) {
            try {
                return KcoreReader.open(PROC_KCORE);
            } catch (IOException e) {
                // Lockdown (confidentiality) or no CAP_SYS_RAWIO: the BPF reader still works.
            }
        }
        return BpfPeekReader.open(layout);
    }
}

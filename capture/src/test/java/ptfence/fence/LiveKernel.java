package ptfence.fence;

import java.nio.file.Files;
import java.nio.file.Path;

/** Whether live BPF tests can run here: root, a bpf() that works, and kernel BTF. */
final class LiveKernel {
    private LiveKernel() {}

    static boolean canLoadBpf() {
        return reason() == null;
    }

    static String reason() {
        if (!"root".equals(System.getProperty("user.name")))
            return "needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN) to load BPF programs";
        if (!Files.isReadable(Path.of("/sys/kernel/btf/vmlinux"))) return "kernel has no BTF (/sys/kernel/btf/vmlinux)";
        return null;
    }
}

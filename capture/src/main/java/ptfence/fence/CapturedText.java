package ptfence.fence;

import ptfence.bpf.ProgramMetadata;

import java.util.HexFormat;

/**
 * One copied text image: {@code bytes} are exactly what was at {@code [address, address + bytes.length)} when the
 * hook ran. {@code progId} is 0 where the kernel had already released the id (FREE) or there is no program;
 * {@code tag} is the whole program's tag; {@code name} the kallsyms name of this function (empty for images that
 * have none, e.g. cBPF filters). {@code monotonicNs} is CLOCK_MONOTONIC at the copy. {@code metadata} is the
 * program's bpf_prog_info where the fence read it from user space (startup scan, user-space fence), else null.
 */
public record CapturedText(Hook hook, long address, byte[] bytes, int progId, long tag, String name,
                           long monotonicNs, int functionIndex, int functionCount, int pid, int tid,
                           boolean complete, ProgramMetadata metadata) {

    public CapturedText(Hook hook, long address, byte[] bytes, int progId, long tag, String name, long monotonicNs,
                        int functionIndex, int functionCount, int pid, int tid, boolean complete) {
        this(hook, address, bytes, progId, tag, name, monotonicNs, functionIndex, functionCount, pid, tid, complete,
                null);
    }

    public long end() { return address + bytes.length; }

    public String tagHex() { return HexFormat.of().toHexDigits(tag); }

    @Override
    public String toString() {
        return String.format("%s %s 0x%x+%d prog %d func %d/%d%s", hook, name, address, bytes.length, progId,
                functionIndex, functionCount, complete ? "" : " INCOMPLETE");
    }
}

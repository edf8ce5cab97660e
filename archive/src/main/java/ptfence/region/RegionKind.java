package ptfence.region;

/** What kind of code a region holds; decides nothing in the archive, but lets users filter and tools explain. */
public enum RegionKind {
    /** A JITed BPF program (its main function). */
    BPF_PROG,
    /** A JITed BPF subprogram (bpf-to-bpf call target). */
    BPF_SUBPROG,
    /** A BPF trampoline (fentry/fexit/fmod_ret attachment). */
    BPF_TRAMPOLINE,
    /** The BPF dispatcher (XDP direct-call table). */
    BPF_DISPATCHER,
    /** Out-of-line ftrace trampoline code. */
    FTRACE_TRAMPOLINE,
    /** A kprobe's out-of-line single-step instruction slot. */
    KPROBE_INSN,
    /** One version of kernel text after a text_poke (static keys, alternatives, live patching). */
    TEXT_POKE,
    /** Core kernel text (_stext.._etext). */
    KERNEL_TEXT,
    /** A kernel module's text. */
    MODULE,
    /** A mapped user-space file (executable or library). */
    USER_FILE
}
